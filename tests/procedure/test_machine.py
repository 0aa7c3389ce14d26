"""The machine's table against the model and the library it is built with."""

from __future__ import annotations

import inspect
import textwrap
from importlib.metadata import version

import pytest
from transitions.core import Transition

from shoe_controller.procedure import Phase
from shoe_controller.procedure.machine import (
    INTAKE,
    NOTED,
    REPORTS,
    TRANSITIONS,
    ComputedTransition,
    callback_names,
)
from shoe_controller.procedure.model import ProcedureModel
from tests.procedure.people import supervisor

from .table_driver import reach_fault

#: ``Transition._change_state`` as the releases the bound in pyproject.toml admits define
#: it. :class:`ComputedTransition` overrides this private method with the same steps to a
#: destination it computes; a release that changes it must be read before it is admitted.
CHANGE_STATE_0_9 = """
def _change_state(self, event_data):
    event_data.machine.get_state(self.source).exit(event_data)
    event_data.machine.set_state(self.dest, event_data.model)
    event_data.update(getattr(event_data.model, event_data.machine.model_attribute))
    dest = event_data.machine.get_state(self.dest)
    dest.enter(event_data)
    if dest.final:
        event_data.machine.callbacks(event_data.machine.on_final, event_data)
"""


def test_the_private_method_overridden_is_the_one_the_library_has() -> None:
    source = textwrap.dedent(inspect.getsource(Transition._change_state))
    assert source.strip() == CHANGE_STATE_0_9.strip(), (
        f"transitions {version('transitions')} changed Transition._change_state, which "
        "ComputedTransition (shoe_controller/procedure/machine.py) overrides: port the "
        "override, then update CHANGE_STATE_0_9 and the bound in pyproject.toml"
    )
    execute = inspect.getsource(Transition.execute)
    assert "self._change_state(event_data)" in execute
    assert ComputedTransition._change_state is not Transition._change_state


def test_the_installed_release_is_within_the_bound() -> None:
    major, minor = (int(part) for part in version("transitions").split(".")[:2])
    assert (major, minor) == (0, 9)


@pytest.mark.rule("F1")
def test_the_attendants_clear_goes_where_the_model_computes() -> None:
    table = reach_fault()
    table.procedure.jam_cleared(card_left=False)
    table.procedure.clear_fault(by=supervisor("att-1"))
    assert table.phase is Phase.DEALING


def test_every_name_in_the_table_is_a_method_of_the_model() -> None:
    missing = sorted(name for name in callback_names() if not hasattr(ProcedureModel, name))
    assert not missing


def test_every_report_is_noted_in_every_phase_but_stopped() -> None:
    for trigger in REPORTS:
        assert trigger in INTAKE
        sources = {
            source
            for transition in (*TRANSITIONS, *NOTED)
            if transition["trigger"] == trigger
            for source in transition["source"]
        }
        assert sources == {phase for phase in Phase if phase is not Phase.STOPPED}, trigger
