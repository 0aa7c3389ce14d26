"""Suite-wide settings."""

from __future__ import annotations

from shoe_controller.procedure.model import ProcedureModel

# A bug in a procedure callback (a misspelt name, a wrong type) must fail the test that
# meets it, not turn into a fault at a simulated table.
ProcedureModel.reraise_bugs = True
