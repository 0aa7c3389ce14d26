"""``python -m shoe_floor``: the same as the ``shoe-floor`` command."""

from shoe_floor.cli import main

raise SystemExit(main())
