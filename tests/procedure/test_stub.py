"""Rules D1 and D2: "determinará si en efecto quedan cuatro". The shoe's count of the stub is
evidence and the proposal; the croupier counts in every round; three figures check the
count; a supervisor accepts a count they disagree with; a determination against a
conclusive record is a supervisor's; the deck leaves when every position holds 7."""

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
    StubAccepted,
    StubCounted,
    StubFigures,
    TableRules,
    UnreadCardPolicy,
)
from shoe_controller.procedure.prompts import DISPLAY_TAKE_OUT_STUB
from tests.procedure.people import DEALER, SUPERVISOR, supervisor

from .table_driver import Table, of_type

D1 = pytest.mark.rule("D1")
D2 = pytest.mark.rule("D2")
D4 = pytest.mark.rule("D4")
E4 = pytest.mark.rule("E4")


def _asked(table: Table, need: str = "misdeal_determination") -> list[Prompt]:
    return [p for p in of_type(table.log, Prompt) if p.need == need]


def _after_deal(wagered: tuple[int, ...] = (2, 3), rules: TableRules | None = None) -> Table:
    table = Table(rules)
    table.open(wagered)
    table.deal_all()
    return table


# --- D1: the shoe's count is the proposal, the croupier's count decides --------------------


@D1
def test_the_shoes_count_of_four_is_a_proposal_the_croupier_confirms() -> None:
    table = _after_deal(wagered=(2, 5))
    stub = table.stub()
    # The deck's last card locks the gate: a limit past it could let the next deck out.
    assert of_type(stub, GateCommand)[-1] == GateCommand(GateMode.LOCKED, 0)
    decisions = table.shoe_empty()
    assert of_type(decisions, StubCounted) == [StubCounted(4, 4, "shoe")]
    # Nothing is decided yet: the croupier is asked, the shoe's count offered, not filled in.
    assert of_type(decisions, RoundEnded) == []
    assert table.phase is Phase.STUB_CONFIRM
    [ask] = of_type(decisions, Prompt)
    assert (ask.need, ask.rule, ask.role) == ("stub_count", "D1", "dealer")
    assert ask.proposal == 4
    assert ask.evidence == StubFigures(4, 4, 4, 4)

    counted = table.count_stub(4)
    figures = StubFigures(4, 4, 4, 4, croupier_count=4)
    assert of_type(counted, StubCounted) == [StubCounted(4, 4, "croupier", figures, True)]
    [ended] = of_type(counted, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.DEALT, "D1")
    assert ended.cards_per_position == (7,) * 7
    # The stub and the positions without a wager go to the discard rack unseen.
    assert ended.collected_unseen == (3, 4, 6, 7)
    assert table.phase is Phase.DEALT


@D1
def test_a_count_before_the_shoe_finished_the_stub_is_refused_with_one_line() -> None:
    table = _after_deal()
    table.stub(2)
    with pytest.raises(ProcedureError) as refused:
        table.procedure.stub_counted(4, by=DEALER)
    assert str(refused.value) == (
        "the shoe has not finished the stub: wait until it reports itself empty, or take the "
        "remaining cards out of the shoe, then count them (D1)"
    )
    assert table.phase is Phase.STUB_COUNT
    [wait] = _asked(table, "wait_stub")
    assert wait.rule == "D1"


@D1
def test_the_stub_cannot_be_counted_during_the_deal() -> None:
    table = Table()
    table.open()
    table.deal(48)
    with pytest.raises(ProcedureError, match=r"^the deal is not complete: 48 of 49 .*\(D1\)$"):
        table.procedure.stub_counted(4, by=DEALER)
    assert table.phase is Phase.DEALING


@D1
@pytest.mark.parametrize("count", [-1, 54, "4", True])
def test_a_count_that_is_not_a_number_of_cards_is_refused(count: object) -> None:
    table = _after_deal()
    table.stub()
    table.shoe_empty()
    with pytest.raises(ProcedureError, match=r"count the remaining cards again \(D1\)$"):
        table.procedure.stub_counted(count, by=DEALER)  # type: ignore[arg-type]
    assert table.phase is Phase.STUB_CONFIRM


@D1
def test_a_stub_counted_twice_is_refused() -> None:
    table = _after_deal()
    table.stub()
    table.shoe_empty()
    table.count_stub(4)
    with pytest.raises(ProcedureError, match=r"already counted"):
        table.procedure.stub_counted(4, by=DEALER)


@D1
@E4
@pytest.mark.parametrize("reports", [0, 3, 5])
def test_stub_reports_that_disagree_with_an_empty_shoe_need_a_supervisor(reports: int) -> None:
    """0, 3 or 5 stub cards reported, then the shoe empty at 53: the shoe counts 4, the
    croupier counts 4, but the reader's reports disagree. The disagreement is recorded with
    every figure; a supervisor accepts the croupier's count."""
    table = _after_deal()
    for _ in range(reports):
        table.draw(gate=GateMode.STUB, unread=reports == 5)
    table.record(table.procedure.shoe_empty(53))
    counted = table.count_stub(4)
    # Five cards that passed the reader unread are not five read (D4).
    figures = StubFigures(4, 0 if reports == 5 else reports, 4, 4, croupier_count=4)
    assert of_type(counted, StubCounted) == [StubCounted(4, 4, "croupier", figures, False)]
    assert of_type(counted, RoundEnded) == []
    assert table.phase is Phase.STUB_DISPUTE
    [ask] = of_type(counted, Prompt)
    assert (ask.need, ask.role, ask.proposal, ask.evidence) == (
        "accept_stub_count",
        "supervisor",
        4,
        figures,
    )
    with pytest.raises(ProcedureError, match=r"is a dealer: accepting a stub count .*\(E4\)$"):
        table.procedure.accept_stub_count(by=DEALER)
    assert table.phase is Phase.STUB_DISPUTE
    accepted = table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    assert of_type(accepted, StubAccepted) == [StubAccepted(4, figures)]
    [ended] = of_type(accepted, RoundEnded)
    assert ended.outcome is Outcome.DEALT
    assert table.phase is Phase.DEALT


@D1
@D4
def test_a_count_against_a_conclusive_reading_contradicts_it_and_the_reading_decides() -> None:
    """Every card read, the shoe counts 3 and read 3 (``deck=short``, or two stub cards that
    left together unseen): the croupier's 4 contradicts the reading, and once accepted the
    reading decides the stub, 3; the reader did its work, so no notice blames it."""
    table = _after_deal(wagered=(4,))
    table.stub(3)
    decisions = table.shoe_empty()
    assert of_type(decisions, StubCounted) == [StubCounted(3, 4, "shoe")]
    assert table.phase is Phase.STUB_CONFIRM
    [ask] = of_type(decisions, Prompt)
    assert (ask.need, ask.proposal) == ("stub_count", 3)
    assert "counted 3 cards" in ask.message
    [counted] = of_type(table.count_stub(4), StubCounted)
    assert counted.contradicts
    assert table.phase is Phase.STUB_DISPUTE
    accepted = table.record(table.procedure.accept_stub_count(by=supervisor("super-9")))
    [acceptance] = of_type(accepted, StubAccepted)
    assert (acceptance.count, acceptance.contradicts) == (4, True)
    assert of_type(accepted, Notice) == []
    assert of_type(accepted, RoundEnded) == []
    assert table.phase is Phase.MISDEAL_REVIEW
    [ask] = _asked(table)
    assert ask.evidence is not None and ask.evidence.stub_count == 3
    assert (ask.code, ask.values["deck"]) == ("misdeal_determination_read", 52)


@D1
def test_a_count_against_a_reading_that_missed_a_card_tells_maintenance() -> None:
    """One stub card passed the reader unread and the shoe counts 3, the croupier 4: the
    reading decides nothing, a supervisor accepts the croupier's count, the reader needs
    service."""
    table = _after_deal(wagered=(4,))
    table.stub(2)
    table.draw(gate=GateMode.STUB, unread=True)
    table.shoe_empty()
    [counted] = of_type(table.count_stub(4), StubCounted)
    assert not counted.contradicts
    accepted = table.record(table.procedure.accept_stub_count(by=supervisor("super-9")))
    [notice] = of_type(accepted, Notice)
    assert notice.code is NoticeCode.STUB_COUNT_MISMATCH and notice.rule == "D1"
    [ended] = of_type(accepted, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.DEALT, "D1")


@D1
def test_in_a_dispute_the_croupier_may_count_again() -> None:
    table = _after_deal()
    table.stub()
    table.shoe_empty()
    table.count_stub(5)
    assert table.phase is Phase.STUB_DISPUTE
    recount = table.count_stub(4)
    assert of_type(recount, RoundEnded)[0].outcome is Outcome.DEALT


@D1
def test_a_stub_taken_out_of_the_shoe_is_counted_by_the_croupier() -> None:
    table = _after_deal()
    table.stub(1)
    decisions = table.record(table.procedure.deck_removed())
    assert table.phase is Phase.STUB_CONFIRM
    [ask] = of_type(decisions, Prompt)
    assert (ask.need, ask.proposal) == ("stub_count", None)
    assert ask.message.startswith("The shoe did not count the stub")
    table.count_stub(4)
    # One figure is missing, one disagrees: a supervisor accepts.
    assert table.phase is Phase.STUB_DISPUTE


@D1
@D2
def test_a_long_deck_whose_extra_card_stays_in_the_shoe_is_no_dead_end() -> None:
    """The 54th card is a second copy (``deck=long``): the gate locks after the deck's 53rd
    card, the shoe never reports itself empty. The display asks for the stub to be taken
    out; the croupier counts 5, a supervisor accepts; the deck leaves the table."""
    table = _after_deal()
    table.stub(4)
    assert table.phase is Phase.STUB_COUNT
    assert table.procedure.gate is GateMode.LOCKED
    assert table.procedure.display == DISPLAY_TAKE_OUT_STUB
    assert table.procedure.prompt is not None and table.procedure.prompt.need == "wait_stub"
    table.record(table.procedure.deck_removed())
    table.count_stub(5)
    table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    assert table.phase is Phase.MISDEAL_REVIEW
    [ask] = _asked(table)
    # The deal's own cards show 7 to each position, whatever became of the stub: the
    # stub's count is the deck's, and the controller proposes so.
    assert ask.proposal is Outcome.VOID_DECK_REMOVED
    assert ask.evidence is not None and ask.evidence.conclusive
    assert ask.evidence.notes == (
        "4 stub cards passed the reader; the rest was taken out of the shoe",
    )
    decisions = table.record(table.procedure.misdeal_determination(False, by=DEALER))
    assert of_type(decisions, RoundEnded)[0].outcome is Outcome.VOID_DECK_REMOVED
    assert table.phase is Phase.DECK_REMOVED


# --- D2: the determination --------------------------------------------------------------


def _stub_of(count: int, how: str) -> Table:
    """The croupier's count of ``count``, accepted by a supervisor: the shoe read the stub
    (``shoe``, or ``stub-jam`` with a jam among its cards), the stub was taken out
    (``hand``), or a jam or an unread card came first in the deal."""
    rules = None
    if how == "unread":
        rules = TableRules(unread_card_policy=UnreadCardPolicy.RECORD_UNKNOWN)
    table = Table(rules)
    table.open()
    if how == "jam":
        table.deal(20)
        table.procedure.jam()
        table.procedure.jam_cleared(card_left=False)
        table.procedure.clear_fault(by=supervisor("att-1"))
    if how == "unread":
        table.deal(10)
        table.draw(unread=True)
    table.deal_all()
    if how == "stub-jam":
        # A jam while the stub passes the reader, after the deal's last card.
        table.stub(1)
        table.procedure.jam()
        table.procedure.jam_cleared(card_left=False)
        table.procedure.clear_fault(by=supervisor("att-1"))
        table.stub(count - 1)
        table.record(table.procedure.shoe_empty(49 + count))
    elif how == "shoe":
        table.stub(count)
        table.record(table.procedure.shoe_empty(49 + count))
    else:
        table.stub(min(count, 4) - 1)
        table.record(table.procedure.deck_removed())
    table.count_stub(count)
    assert table.phase is Phase.STUB_DISPUTE
    table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    return table


# (stub count, how the stub left the shoe, the record rules a misdeal out, the shoe read
# every card of the deck)
STUB_CASES = [
    pytest.param(3, "shoe", False, True, id="3-read"),
    pytest.param(5, "hand", True, False, id="5-taken-out"),
    pytest.param(3, "hand", False, False, id="3-taken-out"),
    pytest.param(3, "stub-jam", False, True, id="3-after-a-jam-in-the-stub"),
    pytest.param(2, "jam", False, False, id="2-after-jam"),
    pytest.param(5, "jam", False, False, id="5-after-jam"),
    pytest.param(3, "unread", False, False, id="3-unknown-card"),
]


@D2
@D4
@pytest.mark.parametrize(("count", "how", "conclusive", "read"), STUB_CASES)
def test_a_stub_that_is_not_four_asks_the_croupier(
    count: int, how: str, conclusive: bool, read: bool
) -> None:
    table = _stub_of(count, how)
    assert table.phase is Phase.MISDEAL_REVIEW
    [ask] = _asked(table)
    assert ask.rule == "D2"
    assert f"The stub holds {count} cards, not 4" in ask.message
    assert ask.evidence is not None
    assert ask.evidence.cards_per_position == (7,) * 7
    assert ask.evidence.stub_count == count and ask.evidence.stub_expected == 4
    assert ask.evidence.conclusive is conclusive
    # Where the record or the reading decides, the controller proposes; else it only asks.
    assert ask.proposal is (Outcome.VOID_DECK_REMOVED if conclusive or read else None)
    if read:
        assert ask.code == "misdeal_determination_read"
    assert of_type(table.log, RoundEnded) == []


@D2
@pytest.mark.parametrize(("count", "how", "conclusive", "read"), STUB_CASES)
def test_not_misdealt_voids_the_hands_and_the_deck_leaves(
    count: int, how: str, conclusive: bool, read: bool
) -> None:
    table = _stub_of(count, how)
    [ask] = _asked(table)
    decisions = table.record(table.procedure.misdeal_determination(False, by=DEALER))
    assert of_type(decisions, DeterminationRecorded) == [
        DeterminationRecorded(False, ask.proposal, False)
    ]
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.VOID_DECK_REMOVED, "D2")
    assert ended.collected_unseen == tuple(range(1, 8))  # all hands void
    assert table.phase is Phase.DECK_REMOVED


@D2
@pytest.mark.parametrize(("count", "how"), [(5, "jam"), (2, "jam"), (3, "unread"), (3, "hand")])
def test_misdealt_on_a_record_that_cannot_tell_voids_the_hands_and_keeps_the_deck(
    count: int, how: str
) -> None:
    table = _stub_of(count, how)
    decisions = table.record(table.procedure.misdeal_determination(True, by=DEALER))
    assert of_type(decisions, DeterminationRecorded) == [DeterminationRecorded(True, None)]
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.VOID_MISDEAL, "D2")
    assert "Section 10.13" in ended.reason
    assert table.phase is Phase.VOID_MISDEAL


@D2
@E4
def test_misdealt_against_a_record_of_seven_each_is_a_supervisors_and_the_deck_leaves() -> None:
    """``deck=long``, the stub taken out, ``--stub-count 5 --on-review misdeal``: every card
    of the deal read, 7 to each position, a stub of 5. "Misdealt" contradicts the record: a
    dealer may not give it; a supervisor's is recorded as contradicting it, and the deck's
    count being wrong, the deck leaves."""
    table = _stub_of(5, "hand")
    with pytest.raises(ProcedureError, match=r"^dealer-1 is a dealer: a misdeal determination"):
        table.procedure.misdeal_determination(True, by=DEALER)
    assert table.phase is Phase.MISDEAL_REVIEW
    decisions = table.record(table.procedure.misdeal_determination(True, by=SUPERVISOR))
    assert of_type(decisions, DeterminationRecorded) == [
        DeterminationRecorded(True, Outcome.VOID_DECK_REMOVED, contradicts=True)
    ]
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.VOID_DECK_REMOVED, "D2")
    assert "against the record" in ended.reason and "deck leaves the table" in ended.reason
    assert table.phase is Phase.DECK_REMOVED


@D2
@D4
def test_misdealt_on_a_deck_read_short_contradicts_nothing_and_the_deck_leaves() -> None:
    """``deck=short``, ``--on-review misdeal``: every card read, 7 to each position as read,
    a stub of 3 read. Two cards that passed the reader as one would put 8 at a position, so
    "misdealt" contradicts nothing and is the dealer's; but the shoe read a deck of 52,
    which leaves the table whatever the determination."""
    table = _stub_of(3, "shoe")
    decisions = table.record(table.procedure.misdeal_determination(True, by=DEALER))
    assert of_type(decisions, DeterminationRecorded) == [
        DeterminationRecorded(True, Outcome.VOID_DECK_REMOVED, contradicts=False)
    ]
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.VOID_DECK_REMOVED, "D2")
    assert "against the record" not in ended.reason
    assert "a deck of 52" in ended.reason
    assert table.procedure.facts().deck_must_change


def _deck_of_wrong_size(deck: str, count: int) -> Table:
    """Every card of the deal read and given in turn, then the stub of a deck that is not
    53 cards, as the croupier counts it (``count``), accepted by a supervisor."""
    table = _after_deal()
    if deck == "long, the 54th left in the shoe":
        # The gate locks at the deck's 53rd card: the rest is taken out by hand.
        table.stub(4)
        table.record(table.procedure.deck_removed())
    elif deck == "long, the extra card read in the stub":
        # A card of another deck, which the reader cannot read, among the stub's.
        table.stub(2)
        table.draw(gate=GateMode.STUB, unread=True)
        for card in table.deck[51:]:
            table.draw(card, gate=GateMode.STUB)
        table.record(table.procedure.shoe_empty(54))
    elif deck == "short, read":
        table.stub(3)
        table.record(table.procedure.shoe_empty(52))
    else:  # "short, taken out"
        table.stub(2)
        table.record(table.procedure.deck_removed())
    table.count_stub(count)
    table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    assert table.phase is Phase.MISDEAL_REVIEW
    return table


LONG_DECKS = [
    pytest.param("long, the 54th left in the shoe", 5, id="long-54th-in-shoe"),
    pytest.param("long, the extra card read in the stub", 5, id="long-extra-in-stub"),
]
SHORT_DECKS = [
    pytest.param("short, read", 3, id="short"),
    pytest.param("short, read", 5, id="short-miscounted"),
    pytest.param("short, taken out", 3, id="short-taken-out"),
]
DECKS_OF_WRONG_SIZE = LONG_DECKS + SHORT_DECKS


@D2
@E4
@pytest.mark.parametrize(("deck", "count"), LONG_DECKS)
def test_a_deck_of_the_wrong_size_leaves_the_table_whatever_the_determination(
    deck: str, count: int
) -> None:
    """The regulation: "Si las cartas se repartieron mal y un jugador o el Croupier tiene
    más o menos de siete cartas": whether every position holds 7 is a fact of the deal's
    cards, each read and given in turn, not of the stub. Here it does, so the stub's wrong
    count is the deck's: the controller proposes so, "misdealt" contradicts the record (a
    dealer's is refused, a supervisor's recorded as contradicting it), and the deck leaves
    the table (``sim://?seed=71&deck=long``, ``--stub-count 5 --on-review misdeal``)."""
    table = _deck_of_wrong_size(deck, count)
    [ask] = _asked(table)
    assert ask.proposal is Outcome.VOID_DECK_REMOVED
    assert ask.evidence is not None and ask.evidence.conclusive
    assert ask.evidence.cards_per_position == (7,) * 7
    with pytest.raises(ProcedureError, match=r"^dealer-1 is a dealer: a misdeal determination"):
        table.procedure.misdeal_determination(True, by=DEALER)
    assert table.phase is Phase.MISDEAL_REVIEW
    decisions = table.record(table.procedure.misdeal_determination(True, by=SUPERVISOR))
    assert of_type(decisions, DeterminationRecorded) == [
        DeterminationRecorded(True, Outcome.VOID_DECK_REMOVED, contradicts=True)
    ]
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.VOID_DECK_REMOVED, "D2")
    assert ended.collected_unseen == tuple(range(1, 8))
    assert table.phase is Phase.DECK_REMOVED
    assert table.procedure.facts().deck_must_change


@D2
@D4
@pytest.mark.parametrize(("deck", "count"), SHORT_DECKS)
def test_misdealt_on_a_short_deck_is_the_dealers_and_the_reading_decides_the_deck(
    deck: str, count: int
) -> None:
    """A stub short beside a complete deal may be an undetected double, so "misdealt" is
    no contradiction. Where the shoe read every card (whatever the croupier counted), the
    deck of 52 leaves the table (D4); where the stub was taken out, nothing tells a short
    deck from a double, and the misdeal voids the hands."""
    table = _deck_of_wrong_size(deck, count)
    read = deck == "short, read"
    [ask] = _asked(table)
    assert ask.proposal is (Outcome.VOID_DECK_REMOVED if read else None)
    decisions = table.record(table.procedure.misdeal_determination(True, by=DEALER))
    assert of_type(decisions, DeterminationRecorded) == [
        DeterminationRecorded(True, ask.proposal, contradicts=False)
    ]
    [ended] = of_type(decisions, RoundEnded)
    if read:
        assert ended.outcome is Outcome.VOID_DECK_REMOVED
        assert table.procedure.facts().deck_must_change
    else:
        assert ended.outcome is Outcome.VOID_MISDEAL


@D2
@pytest.mark.parametrize(("deck", "count"), DECKS_OF_WRONG_SIZE)
def test_not_misdealt_on_a_deck_of_the_wrong_size_is_the_dealers_and_the_deck_leaves(
    deck: str, count: int
) -> None:
    table = _deck_of_wrong_size(deck, count)
    [ask] = _asked(table)
    decisions = table.record(table.procedure.misdeal_determination(False, by=DEALER))
    assert of_type(decisions, DeterminationRecorded) == [
        DeterminationRecorded(False, ask.proposal, contradicts=False)
    ]
    assert of_type(decisions, RoundEnded)[0].outcome is Outcome.VOID_DECK_REMOVED
    assert table.procedure.facts().deck_must_change


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
def test_a_stub_reported_out_of_sequence_is_evidence_not_a_doubt_on_the_hands() -> None:
    """The stub's cards say nothing of the hands: the note is in the evidence, and the
    deal's cards still show every position complete."""
    table = _after_deal()
    table.draw(gate=GateMode.STUB)
    table.draw(gate=GateMode.STUB, index=60)
    table.record(table.procedure.shoe_empty(53))
    table.count_stub(5)
    table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    [ask] = _asked(table)
    assert ask.proposal is Outcome.VOID_DECK_REMOVED and ask.evidence is not None
    assert ask.evidence.notes == ("stub card reported as card 60, 51 was due",)
    assert ask.evidence.composition is Composition.UNVERIFIED


@D2
@E4
def test_a_deck_removed_from_the_table_needs_a_supervisors_different_deck() -> None:
    table = _stub_of(3, "shoe")
    table.procedure.misdeal_determination(False, by=DEALER)
    with pytest.raises(ProcedureError, match=r"no new deck is waiting"):
        table.procedure.confirm_new_deck(by=SUPERVISOR)
    decisions = table.procedure.deck_loaded()
    [ask] = of_type(decisions, Prompt)
    assert (ask.need, ask.role) == ("new_deck", "supervisor")
    with pytest.raises(ProcedureError, match=r"load a different deck and confirm it"):
        table.procedure.confirm_shuffle(by=DEALER)
    with pytest.raises(ProcedureError, match=r"is a dealer: that a deck is a different one"):
        table.procedure.confirm_new_deck(by=DEALER)
    assert table.phase is Phase.DECK_REMOVED
    table.procedure.confirm_new_deck(by=SUPERVISOR)
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
    table.stub()
    table.shoe_empty()
    table.count_stub(4)
    with pytest.raises(ProcedureError, match=r"no misdeal determination is pending.*\(D2\)$"):
        table.procedure.misdeal_determination(True, by=SUPERVISOR)
    assert table.phase is Phase.DEALT


@D2
def test_the_round_cannot_be_closed_before_the_determination() -> None:
    table = _stub_of(5, "hand")
    with pytest.raises(ProcedureError, match=r"determine whether the cards were misdealt"):
        table.procedure.close_round(by=DEALER)
    assert table.phase is Phase.MISDEAL_REVIEW


@D1
def test_the_round_cannot_be_closed_before_the_stub_is_counted() -> None:
    table = _after_deal()
    table.stub()
    table.shoe_empty()
    with pytest.raises(ProcedureError, match=r"count the stub and enter the count first \(D1\)$"):
        table.procedure.close_round(by=DEALER)
