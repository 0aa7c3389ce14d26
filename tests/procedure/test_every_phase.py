"""Rule F6: in every phase some prompt says who must do what next, and what it asks can be
answered there; a phase that waits on the shoe says so; a supervisor can always end a
round void with a reason."""

from __future__ import annotations

import pytest

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import Carry, Outcome, Phase, Procedure, RoundEnded
from shoe_controller.procedure.inputs import MAX_TEXT
from shoe_controller.procedure.machine import UNDECIDED
from shoe_controller.procedure.prompts import ANSWERS
from tests.procedure.people import SUPERVISOR

from .table_driver import PHASES, Table, of_type, reach, reach_fault

pytestmark = pytest.mark.rule("F6")

#: Every phase of the machine but ``stopped``, where the service no longer runs.
WALKED = [*(phase for phase in PHASES if phase is not Phase.STOPPED), Phase.FAULT]


def _at(phase: Phase) -> Table:
    if phase is Phase.NO_SHOE:
        table = Table()
        table.procedure.recover(Carry())
        return table
    if phase is Phase.FAULT:
        return reach_fault()
    return reach(phase)


def _answerable(procedure: Procedure, answer: str) -> bool:
    """``answer`` (an input, or ``shoe:EVENT``) is taken in the procedure's phase."""
    return procedure.accepts(answer.removeprefix("shoe:"))


def test_the_walk_covers_every_phase_but_stopped() -> None:
    assert {*WALKED, Phase.STOPPED} == set(Phase)


@pytest.mark.parametrize("phase", WALKED, ids=str)
def test_every_phase_asks_something_that_can_be_answered_there(phase: Phase) -> None:
    table = _at(phase)
    procedure = table.procedure
    assert procedure.phase is phase
    prompt = procedure.prompt
    assert prompt is not None, f"no prompt in {phase}"
    assert prompt.need in ANSWERS, prompt.need
    assert prompt.role in ("dealer", "supervisor")
    assert prompt.message and prompt.rule
    answers = [a for a in ANSWERS[prompt.need] if _answerable(procedure, a)]
    assert answers, f"in {phase} nothing answers {prompt.need!r}"


@pytest.mark.parametrize("phase", sorted(UNDECIDED), ids=str)
def test_a_supervisor_can_always_end_an_undecided_round_void(phase: Phase) -> None:
    table = reach(phase)
    decisions = table.procedure.void_round("a card was exposed at the table", by=SUPERVISOR)
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.VOID_FAULT, "F6")
    assert ended.reason == (
        "super-1 ended the round void: a card was exposed at the table (Section 10.13)"
    )
    # The way on: the deck out, or changed when the stub was never confirmed as 4.
    prompt = table.procedure.prompt
    assert prompt is not None and prompt.need == "remove_deck"
    assert table.phase in (Phase.VOID_FAULT, Phase.DECK_REMOVED)


def test_a_void_needs_its_reason() -> None:
    table = reach(Phase.DEALING)
    with pytest.raises(Exception, match=r"needs the reason, in words \(F6\)$"):
        table.procedure.void_round("  ", by=SUPERVISOR)


def test_a_reason_of_the_maximum_length_is_kept_whole() -> None:
    table = reach(Phase.DEALING)
    reason = "ñ" * MAX_TEXT
    decisions = table.procedure.void_round(reason, by=SUPERVISOR)
    [ended] = of_type(decisions, RoundEnded)
    assert f": {reason} (Section 10.13)" in ended.reason


def test_a_reason_over_the_maximum_is_refused_in_one_line() -> None:
    table = reach(Phase.DEALING)
    with pytest.raises(ProcedureError) as refused:
        table.procedure.void_round("x" * (MAX_TEXT + 1), by=SUPERVISOR)
    assert str(refused.value) == (
        f"a void's reason is at most {MAX_TEXT} characters, this one has {MAX_TEXT + 1}: say "
        "it in fewer words (F6)"
    )
    assert table.phase is Phase.DEALING
