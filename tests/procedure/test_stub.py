"""Rules D1 and D2: counting the stub, and the croupier's determination when it is not 4."""

from __future__ import annotations

import pytest

from firmware_protocol import GateMode
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import (
    Composition,
    DeterminationRecorded,
    GateCommand,
    Notice,
    NoticeCode,
    Outcome,
    Phase,
    Prompt,
    RoundEnded,
    StubCounted,
    TableRules,
    UnreadCardPolicy,
)

from .table_driver import Table, of_type

D1 = pytest.mark.rule("D1")
D2 = pytest.mark.rule("D2")


def _asked(table: Table) -> list[Prompt]:
    return [p for p in of_type(table.log, Prompt) if p.need == "misdeal_determination"]


def _after_deal(wagered: tuple[int, ...] = (2, 3), rules: TableRules | None = None) -> Table:
    table = Table(rules)
    table.open(wagered)
    table.deal_all()
    return table


@D1
def test_a_stub_of_four_counted_by_the_shoe_puts_the_hands_in_play() -> None:
    table = _after_deal(wagered=(2, 5))
    stub = table.stub()
    # The deck's last card locks the gate: a limit past it could let the next deck out.
    assert of_type(stub, GateCommand)[-1] == GateCommand(GateMode.LOCKED, 0)
    decisions = table.shoe_empty()
    assert of_type(decisions, StubCounted) == [StubCounted(4, 4, "shoe")]
    assert table.procedure.gate is GateMode.LOCKED
    [ended] = of_type(decisions, RoundEnded)
    assert ended.outcome is Outcome.DEALT
    assert ended.cards_per_position == (7,) * 7
    # The stub and the positions without a wager go to the discard rack unseen.
    assert ended.collected_unseen == (3, 4, 6, 7)
    assert table.phase is Phase.DEALT


@D1
def test_the_croupier_may_enter_the_count() -> None:
    table = _after_deal()
    decisions = table.procedure.stub_counted(4)
    assert of_type(decisions, RoundEnded)[0].outcome is Outcome.DEALT


@D1
def test_the_stub_cannot_be_counted_during_the_deal() -> None:
    table = Table()
    table.open()
    table.deal(48)
    with pytest.raises(ProcedureError, match=r"^the deal is not complete: 48 of 49 .*\(D1\)$"):
        table.procedure.stub_counted(4)
    assert table.phase is Phase.DEALING


@D1
@pytest.mark.parametrize("count", [-1, 54, "4", True])
def test_a_count_that_is_not_a_number_of_cards_is_refused(count: object) -> None:
    table = _after_deal()
    with pytest.raises(ProcedureError, match=r"count the remaining cards again \(D1\)$"):
        table.procedure.stub_counted(count)  # type: ignore[arg-type]
    assert table.phase is Phase.STUB_COUNT


@D1
def test_a_stub_counted_twice_is_refused() -> None:
    table = _after_deal()
    table.procedure.stub_counted(4)
    with pytest.raises(ProcedureError, match=r"already counted"):
        table.procedure.stub_counted(4)


# (stub count, how the stub left the shoe, the record is conclusive, croupier's finding)
STUB_CASES = [
    pytest.param(3, "shoe", True, False, Outcome.VOID_DECK_REMOVED, id="3-read-not-misdealt"),
    pytest.param(3, "shoe", True, True, Outcome.VOID_MISDEAL, id="3-read-misdealt"),
    pytest.param(5, "hand", True, False, Outcome.VOID_DECK_REMOVED, id="5-hand-not-misdealt"),
    pytest.param(5, "hand", True, True, Outcome.VOID_MISDEAL, id="5-hand-misdealt"),
    pytest.param(3, "hand", True, True, Outcome.VOID_MISDEAL, id="3-hand-misdealt"),
    pytest.param(2, "jam", False, True, Outcome.VOID_MISDEAL, id="2-after-jam-misdealt"),
    pytest.param(5, "jam", False, False, Outcome.VOID_DECK_REMOVED, id="5-after-jam-not-misdealt"),
    pytest.param(3, "unread", False, False, Outcome.VOID_DECK_REMOVED, id="3-unknown-card"),
]


def _stub_of(count: int, how: str) -> Table:
    rules = None
    if how == "unread":
        rules = TableRules(unread_card_policy=UnreadCardPolicy.RECORD_UNKNOWN)
    table = Table(rules)
    table.open()
    if how == "jam":
        table.deal(20)
        table.procedure.jam()
        table.procedure.jam_cleared(card_left=False)
        table.procedure.attendant_clear("att-1")
    if how == "unread":
        table.deal(10)
        table.draw(unread=True)
    table.deal_all()
    if how == "shoe":
        table.stub(count)
        table.record(table.procedure.shoe_empty(49 + count))
        # The shoe's count is not 4: the croupier counts by hand, and agrees (D2).
        assert table.phase is Phase.STUB_RECOUNT
        table.record(table.procedure.stub_counted(count))
    else:
        table.record(table.procedure.stub_counted(count))
    return table


@D2
@pytest.mark.parametrize(("count", "how", "conclusive", "misdealt", "outcome"), STUB_CASES)
def test_a_stub_that_is_not_four_asks_the_croupier(
    count: int, how: str, conclusive: bool, misdealt: bool, outcome: Outcome
) -> None:
    table = _stub_of(count, how)
    assert table.phase is Phase.MISDEAL_REVIEW
    [ask] = _asked(table)
    assert ask.rule == "D2"
    assert f"The stub holds {count} cards, not 4" in ask.message
    assert ask.evidence.cards_per_position == (7,) * 7
    assert ask.evidence.stub_count == count and ask.evidence.stub_expected == 4
    assert ask.evidence.conclusive is conclusive
    # Where the record decides, the controller proposes; where it cannot, it only asks.
    assert ask.proposal is (Outcome.VOID_DECK_REMOVED if conclusive else None)
    assert of_type(table.log, RoundEnded) == []

    decisions = table.procedure.misdeal_determination(misdealt)
    assert of_type(decisions, DeterminationRecorded) == [
        DeterminationRecorded(misdealt, ask.proposal)
    ]
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (outcome, "D2")
    assert ended.collected_unseen == tuple(range(1, 8))  # all hands void
    expected_phase = Phase.VOID_MISDEAL if misdealt else Phase.DECK_REMOVED
    assert table.phase is expected_phase


@D2
@pytest.mark.parametrize(
    ("how", "count", "composition"),
    [
        ("shoe", 3, Composition.SHORT),
        ("hand", 3, Composition.UNVERIFIED),
        ("unread", 3, Composition.UNVERIFIED),
    ],
)
def test_the_evidence_gives_the_deck_composition(
    how: str, count: int, composition: Composition
) -> None:
    table = _stub_of(count, how)
    [ask] = _asked(table)
    assert ask.evidence is not None
    assert ask.evidence.composition is composition
    assert ask.evidence.unread_cards == (1 if how == "unread" else 0)


@D2
def test_a_stub_reported_out_of_sequence_leaves_the_record_inconclusive() -> None:
    table = _after_deal()
    table.draw(gate=GateMode.STUB)
    table.draw(gate=GateMode.STUB, index=60)
    table.record(table.procedure.stub_counted(3))
    [ask] = _asked(table)
    assert ask.proposal is None and ask.evidence is not None
    assert ask.evidence.notes == ("stub card reported as card 60, 51 was due",)


@D2
def test_a_shoe_count_contradicting_its_stub_reports_is_inconclusive() -> None:
    table = _after_deal()
    table.stub(2)
    table.record(table.procedure.stub_counted(3))
    [ask] = _asked(table)
    assert ask.evidence is not None
    assert (ask.evidence.stub_cards_read, ask.evidence.conclusive) == (2, False)


@D2
def test_a_deck_removed_from_the_table_needs_a_different_deck() -> None:
    table = _stub_of(3, "shoe")
    table.procedure.misdeal_determination(False)
    with pytest.raises(ProcedureError, match=r"no new deck is waiting"):
        table.procedure.confirm_new_deck()
    decisions = table.procedure.deck_loaded()
    assert [p.need for p in of_type(decisions, Prompt)] == ["new_deck"]
    with pytest.raises(ProcedureError, match=r"load a different deck and confirm it"):
        table.procedure.confirm_shuffle()
    assert table.phase is Phase.DECK_REMOVED
    table.procedure.confirm_new_deck()
    assert table.phase is Phase.DECK_LOADED


@D2
def test_a_short_deck_that_runs_out_during_the_deal_leaves_the_table() -> None:
    table = Table()
    table.open()
    table.deal(45)
    decisions = table.shoe_empty()
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.VOID_DECK_REMOVED, "D2")
    assert "ran out after 45 cards" in ended.reason
    assert of_type(decisions, GateCommand) == [GateCommand(GateMode.LOCKED, 0)]
    assert table.phase is Phase.DECK_REMOVED


@D2
def test_no_determination_is_taken_when_none_is_pending() -> None:
    table = _after_deal()
    table.procedure.stub_counted(4)
    with pytest.raises(ProcedureError, match=r"no misdeal determination is pending.*\(D2\)$"):
        table.procedure.misdeal_determination(True)
    assert table.phase is Phase.DEALT


@D2
def test_the_round_cannot_be_closed_before_the_determination() -> None:
    table = _stub_of(5, "hand")
    with pytest.raises(ProcedureError, match=r"determine whether the cards were misdealt"):
        table.procedure.close_round()
    assert table.phase is Phase.MISDEAL_REVIEW


@D2
def test_a_shoe_that_counts_three_while_four_are_there_is_overruled_by_the_croupier() -> None:
    """Two stub cards left together unseen (``double@51``): the shoe counts 3. Its count is
    not final: the croupier counts by hand, the hands are in play, and the disagreement
    is journaled for the reader's maintenance."""
    table = _after_deal(wagered=(4,))
    table.stub(3)
    decisions = table.shoe_empty()
    assert of_type(decisions, StubCounted) == [StubCounted(3, 4, "shoe")]
    assert table.phase is Phase.STUB_RECOUNT
    [ask] = of_type(decisions, Prompt)
    assert (ask.need, ask.rule) == ("stub_count", "D2")
    assert "counted 3 cards" in ask.message
    assert of_type(decisions, RoundEnded) == []
    counted = table.record(table.procedure.stub_counted(4))
    [notice] = of_type(counted, Notice)
    assert notice.code is NoticeCode.STUB_COUNT_MISMATCH and notice.rule == "D2"
    assert of_type(counted, StubCounted) == [StubCounted(4, 4, "croupier")]
    [ended] = of_type(counted, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.DEALT, "D1")
    assert table.phase is Phase.DEALT


@D2
def test_a_croupier_count_that_agrees_with_the_shoe_goes_to_the_determination() -> None:
    table = _after_deal()
    table.stub(2)
    table.shoe_empty()
    decisions = table.record(table.procedure.stub_counted(2))
    assert of_type(decisions, Notice) == []
    assert table.phase is Phase.MISDEAL_REVIEW


@D2
def test_the_round_cannot_be_closed_before_the_stub_is_counted_by_hand() -> None:
    table = _after_deal()
    table.stub(3)
    table.shoe_empty()
    with pytest.raises(ProcedureError, match=r"count the stub by hand.*\(D2\)$"):
        table.procedure.close_round()
