"""``python -m shoe_controller``: the same as the ``shoe-controller`` command."""

from shoe_controller.cli.controller import main

raise SystemExit(main())
