"""Start-up recovery end to end on a real journal: what the journal says, what the
procedure decides, and that a second start finds nothing left to void (F3, F4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shoe_controller.journal import Journal, verify
from shoe_controller.journal.records import Kind
from shoe_controller.procedure import (
    Outcome,
    Phase,
    Procedure,
    RoundClosed,
    RoundEnded,
    TableFacts,
)
from shoe_controller.service.journaling import carry_from, decision_records, resume_points
from tests.journal.helpers import deal_round, open_journal, rows
from tests.procedure.people import DEALER, supervisor


def _start(journal: Journal) -> Procedure:
    """What the service does first at every start: take the journal over, journal that."""
    procedure = Procedure()
    decisions = procedure.recover(carry_from(journal))
    with journal.transaction():
        for kind, payload, round_id in decision_records(decisions, procedure.round_id, "x"):
            journal.append(kind, payload, round_id)
    return procedure


@pytest.mark.rule("F3")
def test_a_round_cut_short_is_voided_once_with_what_the_journal_holds(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        deal_round(journal, "r-1", wagered=[2], seed=1, cards=9)
    with open_journal(path) as journal:
        procedure = _start(journal)
        assert procedure.phase is Phase.FAULT
        assert journal.open_rounds() == []
        after_first = journal.last_seq
    [(ended,)] = rows(
        path, "SELECT payload FROM records WHERE kind = ? AND round_id = ?", "round_ended", "r-1"
    )
    payload = json.loads(ended)
    assert (payload["outcome"], payload["rule"]) == ("void_fault", "F3")
    assert sum(payload["cards_per_position"].values()) == 9
    assert payload["wagered"] == [2] and payload["start_position"] in range(1, 8)
    # A second start: the round has its outcome; only the fault still stands.
    with open_journal(path) as journal:
        again = _start(journal)
        assert again.phase is Phase.FAULT
        ended_again = rows(
            path,
            "SELECT count(*) FROM records WHERE kind = ? AND round_id = ?",
            "round_ended",
            "r-1",
        )
        assert ended_again == [(1,)]
        assert journal.last_seq > after_first
    assert verify(path).ok


@pytest.mark.rule("F4")
def test_the_tables_facts_are_read_back_as_journaled(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    facts = TableFacts("stopped", (), None, True, False, False, ("ES-7", "SN-1"), None)
    with open_journal(path) as journal:
        journal.append(
            Kind.TABLE,
            {
                "phase": "stopped",
                "faults": [],
                "fault_origin": None,
                "deck_must_change": True,
                "deck_waiting": False,
                "deck_spent": False,
                "shoe": ["ES-7", "SN-1"],
                "round_id": None,
            },
        )
        carry = carry_from(journal)
    assert carry.facts == facts and carry.round is None and not carry.crashed


@pytest.mark.rule("F3")
def test_a_dealt_round_not_yet_closed_comes_back_with_its_hands(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        dealt = deal_round(journal, "r-1", wagered=[2, 5], seed=4, close=False)
        journal.append(
            Kind.TABLE,
            {
                "phase": "dealt",
                "faults": [],
                "fault_origin": None,
                "deck_must_change": False,
                "deck_waiting": False,
                "deck_spent": False,
                "shoe": ["ES-7", "SN-1"],
                "round_id": "r-1",
            },
        )
        carry = carry_from(journal)
    assert carry.round is not None
    assert carry.round.outcome is Outcome.DEALT
    assert len(carry.round.cards) == 49
    procedure = Procedure()
    decisions = procedure.recover(carry)
    assert not [d for d in decisions if isinstance(d, RoundEnded)]
    assert procedure.phase is Phase.FAULT  # a crash: the attendant looks first
    procedure.shoe_approved()
    procedure.clear_fault(by=supervisor("att"))
    [record] = [d for d in procedure.close_round(by=DEALER) if isinstance(d, RoundClosed)]
    assert {h.position: [c.text for c in h.cards] for h in record.hands} == {
        p: dealt.hands[p] for p in (1, 2, 5)
    }


@pytest.mark.rule("F3")
def test_the_resume_points_are_each_shoes_last_event_journaled(tmp_path: Path) -> None:
    """Events follow the connection of their shoe: each shoe's last one is found in its
    latest connection that has one, whichever shoe connected last."""
    path = tmp_path / "journal.sqlite3"

    def connected(journal: Journal, serial: str) -> None:
        identity = {"model": "ES-7", "serial_number": serial}
        payload = {"identity": identity, "approved": True, "reason": "listed"}
        journal.append(Kind.SHOE_CONNECTED, payload)

    def event(journal: Journal, serial: str, shoe_seq: int) -> None:
        payload = {"seq": 1, "shoe_seq": shoe_seq, "message": {"type": "Jam"}}
        journal.append(Kind.SHOE_EVENT, {**payload, "model": "ES-7", "serial_number": serial})

    with open_journal(path) as journal:
        assert resume_points(journal) == []
        connected(journal, "SN-1")
        event(journal, "SN-1", 4)
        event(journal, "SN-1", 5)
        connected(journal, "SN-2")
        event(journal, "SN-2", 9)
        connected(journal, "SN-1")  # back, and gone again before it sent anything
        connected(journal, "SN-2")
        assert resume_points(journal) == [("ES-7", "SN-2", 9), ("ES-7", "SN-1", 5)]
