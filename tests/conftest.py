"""Suite-wide settings."""

from __future__ import annotations

import os

import pytest

from shoe_controller.procedure.model import ProcedureModel

# A bug in a procedure callback (a misspelt name, a wrong type) must fail the test that
# meets it, not turn into a fault at a simulated table.
ProcedureModel.reraise_bugs = True

#: Long reliability runs (minutes) run only when asked for: SHOE_SLOW=1.
RUN_SLOW = os.environ.get("SHOE_SLOW") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The one way to mark a long test: ``@pytest.mark.slow``, skipped unless SHOE_SLOW=1."""
    if RUN_SLOW:
        return
    skip = pytest.mark.skip(reason="a long reliability run: set SHOE_SLOW=1 to run it")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)
