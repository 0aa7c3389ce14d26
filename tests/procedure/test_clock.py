"""The journal's clock (E3): an unsynchronised system clock, at start or when it loses its
synchronisation, is a notice; a rules profile may hold the first round until it is
synchronised."""

from __future__ import annotations

import pytest

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import Notice, NoticeCode, Phase, TableRules
from tests.procedure.people import DEALER, SUPERVISOR

from .table_driver import Table, of_type

pytestmark = pytest.mark.rule("E3")


def _notices(decisions: list[object]) -> list[NoticeCode]:
    return [n.code for n in of_type(decisions, Notice)]  # type: ignore[arg-type]


def test_an_unsynchronised_clock_is_a_notice_at_start_and_when_lost() -> None:
    p = Table().procedure
    first = p.clock(False, "adjtimex")
    [notice] = of_type(first, Notice)
    assert notice.code is NoticeCode.CLOCK_UNSYNCHRONIZED
    assert notice.reason.startswith("the system clock is not synchronised (adjtimex)")
    assert _notices(p.clock(False, "adjtimex")) == []
    assert _notices(p.clock(True, "adjtimex")) == [NoticeCode.CLOCK_SYNCHRONIZED]
    assert _notices(p.clock(True, "adjtimex")) == []
    assert _notices(p.clock(False, "adjtimex")) == [NoticeCode.CLOCK_UNSYNCHRONIZED]


def test_a_synchronised_clock_at_start_says_nothing() -> None:
    assert _notices(Table().procedure.clock(True, "adjtimex")) == []


def test_a_clock_that_cannot_be_read_is_a_notice() -> None:
    [notice] = of_type(Table().procedure.clock(None, "unavailable: no adjtimex"), Notice)
    assert "cannot be read" in notice.reason


def test_the_profile_may_hold_the_first_round_until_the_clock_is_synchronised() -> None:
    table = Table(TableRules(require_synchronized_clock=True))
    p = table.procedure
    p.clock(False, "adjtimex")
    table.approve()
    p.deck_loaded()
    held = r"not synchronised .* before the first round.*\(E3\)$"
    with pytest.raises(ProcedureError, match=held):
        p.confirm_shuffle(by=DEALER)
    assert table.phase is Phase.SHUFFLE_CHECK
    p.clock(True, "adjtimex")
    p.confirm_shuffle(by=DEALER)
    assert table.phase is Phase.DECK_LOADED
    # Once a round was opened, a clock that loses its synchronisation is a notice only.
    assert _notices(p.clock(False, "adjtimex")) == [NoticeCode.CLOCK_UNSYNCHRONIZED]
    p.void_round("the table closes", by=SUPERVISOR)
    p.deck_removed()
    table.load("r2")
    assert table.phase is Phase.DECK_LOADED


def test_without_the_rule_an_unsynchronised_clock_holds_nothing() -> None:
    table = Table()
    table.procedure.clock(False, "adjtimex")
    table.approve()
    table.load()
    assert table.phase is Phase.DECK_LOADED
