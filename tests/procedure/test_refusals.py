"""Every refusal of an input the procedure does not take in its phase names its rule and
what to do in one English line, and carries a stable code with the values its words need
(procedure/refusals.py), so that a console words it in its own language."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import Phase
from shoe_controller.procedure.refusals import INPUTS, VALUES, Refusal, RefusalCode, refusal
from tests.procedure.people import DEALER

from .table_driver import PHASES, Table, reach, reach_fault

RULE = re.compile(r"\((?:[A-F]\d, )*[A-F]\d\)$")


def _tables() -> Iterator[Table]:
    """A table in every phase (the fault too), and one that offers no dice wager."""
    for phase in PHASES:
        yield reach(phase)
    yield reach_fault()
    plain = Table()
    plain.approve()
    yield plain


def made_refusals() -> list[Refusal]:
    """Every refusal the procedure makes, for every input, in every phase it refuses it."""
    made = []
    for table in _tables():
        for name in INPUTS:
            if not table.procedure.accepts(name):
                made.append(refusal(table.procedure, name))
    return made


def test_every_refusal_code_is_made_in_some_phase() -> None:
    assert {r.code for r in made_refusals()} == set(RefusalCode)


def test_each_refusal_carries_its_code_s_values_and_names_its_rule() -> None:
    for made in made_refusals():
        assert tuple(made.values) == VALUES[made.code], made
        assert all(value is not None for value in made.values.values()), made
        json.dumps(dict(made.values))
        assert RULE.search(made.message), made.message


def test_a_refusal_s_values_are_its_code_s_or_it_is_not_made() -> None:
    with pytest.raises(ValueError, match="carries"):
        Refusal(RefusalCode.START_SET, "x (B1)")


@pytest.mark.rule("D1")
def test_a_count_entered_before_the_shoe_finished_the_stub_is_refused_by_code() -> None:
    table = reach(Phase.STUB_COUNT)
    with pytest.raises(ProcedureError) as refused:
        table.procedure.stub_counted(4, by=DEALER)
    assert refused.value.code == "stub_unfinished"
    assert refused.value.values == {}
    assert str(refused.value).startswith("the shoe has not finished the stub")


@pytest.mark.rule("F1")
def test_an_input_blocked_by_a_fault_names_the_faults() -> None:
    table = reach_fault()
    with pytest.raises(ProcedureError) as refused:
        table.procedure.close_round(by=DEALER)
    assert (refused.value.code, refused.value.values) == ("fault", {"faults": ["jam"]})
    assert "blocked by a fault (jam)" in str(refused.value)
