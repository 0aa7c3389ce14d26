"""Export: events and rounds as JSON lines and CSV, sealed by default (E1, E2)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest

from shoe_controller.errors import JournalError
from shoe_controller.journal import SEALED, Journal, Kind, export
from shoe_controller.journal.exporting import EVENT_FIELDS, ROUND_FIELDS
from tests.journal.helpers import DealtRound, deal_round, open_journal, tamper

FORMATS = ["jsonl", "csv"]
VIEWS = ["events", "rounds"]


def mentioned(card: str, text: str) -> bool:
    """Whether ``card`` ("AS", "TD", "JK") appears in ``text`` as a token of its own."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(card)}(?![A-Za-z0-9])", text) is not None


def exported(path: Path, fmt: str, what: str, **kwargs: object) -> str:
    out = io.StringIO()
    export(path, out, fmt, what=what, **kwargs)  # type: ignore[arg-type]
    return out.getvalue()


def journal_with(tmp_path: Path, name: str, **round_args: object) -> tuple[Path, DealtRound]:
    path = tmp_path / name / "journal.sqlite3"
    with open_journal(path) as journal:
        dealt = deal_round(journal, "r-1", **round_args)  # type: ignore[arg-type]
    return path, dealt


SCENARIOS = {
    "closed": {"wagered": [2, 5], "seed": 1},
    "closed-no-wager": {"wagered": [], "seed": 2},
    "closed-all-wagered": {"wagered": [2, 3, 4, 5, 6, 7], "seed": 3},
    "ended-not-closed": {"wagered": [3, 4], "seed": 4, "close": False},
    "open-mid-deal": {"wagered": [2, 6], "seed": 5, "cards": 30},
}


@pytest.mark.rule("E1")
@pytest.mark.rule("E2")
@pytest.mark.parametrize("what", VIEWS)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_default_export_never_contains_a_sealed_identity(
    tmp_path: Path, scenario: str, fmt: str, what: str
) -> None:
    path, dealt = journal_with(tmp_path, scenario, **SCENARIOS[scenario])
    text = exported(path, fmt, what)
    sealed = dealt.sealed_cards()
    assert sealed, "every scenario has cards that must stay sealed"
    leaked = sorted(card for card in sealed if mentioned(card, text))
    assert leaked == []
    # And what may be published is: the export is not simply empty.
    visible = dealt.visible_cards()
    assert sorted(card for card in visible if not mentioned(card, text)) == []
    assert SEALED in text


@pytest.mark.rule("E1")
@pytest.mark.parametrize("what", VIEWS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_an_audit_export_with_the_key_contains_everything(
    tmp_path: Path, fmt: str, what: str
) -> None:
    path, dealt = journal_with(tmp_path, "closed", wagered=[2, 5], seed=1)
    text = exported(path, fmt, what, audit=True)
    every = dealt.sealed_cards() | dealt.visible_cards()
    assert len(every) == 53
    assert sorted(card for card in every if not mentioned(card, text)) == []


@pytest.mark.rule("E2")
def test_hands_appear_only_once_the_round_is_closed(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        dealt = deal_round(journal, "r-1", wagered=[4], seed=6, close=False)
        banker = dealt.hands[1]
        before = exported(path, "jsonl", "events")
        assert [card for card in banker if mentioned(card, before)] == []
        journal.append(
            Kind.ROUND_CLOSED,
            {"hands": {"1": dealt.hands[1], "4": dealt.hands[4]}},
            "r-1",
        )
    after = exported(path, "jsonl", "events")
    assert [card for card in banker + dealt.hands[4] if not mentioned(card, after)] == []
    for position in (2, 3, 5, 6, 7):
        assert [card for card in dealt.hands[position] if mentioned(card, after)] == []


def test_events_in_json_lines(tmp_path: Path) -> None:
    path, dealt = journal_with(tmp_path, "closed", wagered=[2, 5], seed=1)
    lines = [json.loads(line) for line in exported(path, "jsonl", "events").splitlines()]
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    assert all(tuple(line) == EVENT_FIELDS for line in lines)
    cards = [line for line in lines if line["kind"] == "card"]
    assert len(cards) == 49
    for line in cards:
        payload = line["payload"]
        expected = payload["card"] if payload["position"] in (1, 2, 5) else SEALED
        assert payload["card"] == expected
        assert line["round_id"] == "r-1"
        assert line["time"].endswith("Z")
    stub = [line["payload"]["card"] for line in lines if line["kind"] == "stub_card"]
    assert stub == [SEALED] * 4
    [closed] = [line for line in lines if line["kind"] == "round_closed"]
    assert closed["payload"]["hands"] == {str(p): dealt.hands[p] for p in (1, 2, 5)}


def test_rounds_in_csv(tmp_path: Path) -> None:
    path, dealt = journal_with(tmp_path, "closed", wagered=[2, 5], seed=1)
    table = list(csv.reader(io.StringIO(exported(path, "csv", "rounds"))))
    assert tuple(table[0]) == ROUND_FIELDS
    [row] = [dict(zip(ROUND_FIELDS, values, strict=True)) for values in table[1:]]
    assert row["round_id"] == "r-1"
    assert row["outcome"] == "dealt"
    assert json.loads(row["wagered"]) == [2, 5]
    hands = json.loads(row["hands"])
    assert hands == {str(p): dealt.hands[p] if p in (1, 2, 5) else SEALED for p in range(1, 8)}
    assert row["stub"] == SEALED
    assert row["closed_at"].endswith("Z")


def test_events_in_csv_carry_the_sealed_payload(tmp_path: Path) -> None:
    path, _ = journal_with(tmp_path, "closed", wagered=[2, 5], seed=1)
    table = list(csv.DictReader(io.StringIO(exported(path, "csv", "events"))))
    stub = [json.loads(row["payload"]) for row in table if row["kind"] == "stub_card"]
    assert [payload["card"] for payload in stub] == [SEALED] * 4
    assert table[0]["round_id"] == "r-1" and table[0]["seq"] == "1"


def test_one_round_can_be_exported_alone(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        deal_round(journal, "r-1", wagered=[2], seed=1)
        journal.append(Kind.LINK, {"state": "down"})
        deal_round(journal, "r-2", wagered=[3], seed=2)
    text = exported(path, "jsonl", "events", round_id="r-2")
    lines = [json.loads(line) for line in text.splitlines()]
    assert {line["round_id"] for line in lines} == {"r-2"}
    rounds = [json.loads(line) for line in exported(path, "jsonl", "rounds").splitlines()]
    assert [r["round_id"] for r in rounds] == ["r-1", "r-2"]


@pytest.mark.rule("E1")
def test_identities_a_writer_should_not_have_published_are_sealed_anyway(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        journal.append(Kind.ROUND_OPENED, {"round_id": "r-1"}, "r-1")
        journal.append(Kind.BETS_CLOSED, {"wagered": [2]}, "r-1")
        # A hand of an unwagered position in round_closed, a card in a shoe event.
        journal.append(Kind.ROUND_CLOSED, {"hands": {"1": ["QH"], "3": ["KD"]}}, "r-1")
        journal.append(Kind.SHOE_EVENT, {"seq": 99, "message": {"type": "CardDrawn", "card": "8C"}})
        # A card outside the procedure, a duplicate card, evidence listing cards.
        journal.append(
            Kind.FAULT,
            {"code": "unassigned_card", "reason": "card 50", "rule": "F1", "card": "2D"},
            "r-1",
        )
        journal.append(
            Kind.FAULT,
            {"code": "composition", "reason": "duplicate", "rule": "D3", "card": "9S"},
        )
        journal.append(
            Kind.INPUT,
            {"by": "controller", "name": "ask", "evidence": [{"cards": ["TH", "5C"]}]},
        )
    text = exported(path, "jsonl", "events")
    for card in ("KD", "8C", "2D", "9S", "TH", "5C"):
        assert not mentioned(card, text), card
    assert mentioned("QH", text)
    audit = exported(path, "jsonl", "events", audit=True)
    assert all(mentioned(card, audit) for card in ("KD", "8C", "2D", "9S", "TH", "5C"))


@pytest.mark.rule("E1")
def test_an_audit_export_needs_the_journals_key(tmp_path: Path) -> None:
    path, _ = journal_with(tmp_path, "closed", wagered=[2, 5], seed=1)
    key = path.with_suffix(".key")
    with pytest.raises(JournalError, match="not found"):
        export(path, io.StringIO(), audit=True, key_path=tmp_path / "missing.key")
    other = tmp_path / "other.key"
    other.write_text(os.urandom(32).hex())
    with pytest.raises(JournalError, match="an audit export needs the journal's own key"):
        export(path, io.StringIO(), audit=True, key_path=other)
    unreadable = tmp_path / "dir.key"
    unreadable.mkdir()
    with pytest.raises(JournalError, match="is not a journal key: it is a directory"):
        export(path, io.StringIO(), audit=True, key_path=unreadable)
    # The default key, beside the journal, works.
    assert key.exists()
    assert export(path, io.StringIO(), audit=True) > 0


@pytest.mark.rule("E1")
def test_an_audit_export_checks_the_first_record_against_the_key(tmp_path: Path) -> None:
    path, _ = journal_with(tmp_path, "closed", wagered=[2, 5], seed=1)
    tamper(path, 'UPDATE records SET payload = \'{"round_id":"r-9"}\' WHERE seq = 1')
    with pytest.raises(JournalError, match=r"first record .* does not match key"):
        export(path, io.StringIO(), audit=True)


def test_an_unknown_format_is_refused(tmp_path: Path) -> None:
    path, _ = journal_with(tmp_path, "closed", wagered=[2], seed=1)
    with pytest.raises(JournalError, match="use jsonl or csv"):
        export(path, io.StringIO(), "xml")  # type: ignore[arg-type]


def test_an_export_reads_a_journal_the_service_holds(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with Journal.open(path) as journal:
        deal_round(journal, "r-1", wagered=[2], seed=1)
        assert export(path, io.StringIO()) == journal.last_seq
