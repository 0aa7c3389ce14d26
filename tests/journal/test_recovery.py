"""Start-up recovery: a round left open by a stopped controller is voided once (rule F3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shoe_controller.journal import Kind, OpenRound, verify
from tests.journal.helpers import deal_round, open_journal, rows

REASON = "the controller restarted during the round (Section 10.13)"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "journal.sqlite3"


def test_a_fresh_journal_has_no_open_round(path: Path) -> None:
    with open_journal(path) as journal:
        assert journal.open_rounds() == []
        assert journal.void_open_rounds(REASON) == []
        assert journal.last_seq == 0


def test_rounds_that_ended_are_not_open(path: Path) -> None:
    with open_journal(path) as journal:
        deal_round(journal, "r-1", wagered=[2], seed=1)
        deal_round(journal, "r-2", wagered=[3], seed=2, close=False)
        assert journal.open_rounds() == []


def test_a_round_cut_short_is_open_with_what_it_had(path: Path) -> None:
    with open_journal(path) as journal:
        deal_round(journal, "r-1", wagered=[2], seed=1)
        opened_at = journal.last_seq + 1
        dealt = deal_round(journal, "r-2", wagered=[3, 6], seed=2, cards=12)
        [open_round] = journal.open_rounds()
    assert open_round.round_id == "r-2"
    assert open_round.opened_seq == opened_at
    assert open_round.wagered == (3, 6)
    assert open_round.start_position in range(1, 8)
    assert open_round.cards_per_position == {p: len(c) for p, c in sorted(dealt.hands.items())}
    assert sum(open_round.cards_per_position.values()) == 12


@pytest.mark.rule("F3")
def test_open_rounds_are_voided_once_with_the_reason(path: Path) -> None:
    with open_journal(path) as journal:
        deal_round(journal, "r-1", wagered=[2], seed=1, cards=9)
    # The controller restarts: recovery is the first thing it journals.
    with open_journal(path) as journal:
        before = journal.last_seq
        voided = journal.void_open_rounds(REASON)
        assert [r.round_id for r in voided] == ["r-1"]
        assert journal.open_rounds() == []
        assert journal.last_seq == before + 2
    records = rows(path, "SELECT seq, round_id, kind, payload FROM records WHERE seq > ?", before)
    (_, ended_round, ended_kind, ended), (_, rec_round, rec_kind, recovery) = records
    assert (ended_round, ended_kind, rec_round, rec_kind) == (
        "r-1",
        "round_ended",
        None,
        "recovery",
    )
    ended_payload = json.loads(ended)
    assert ended_payload["outcome"] == "void_fault"
    assert ended_payload["rule"] == "F3"
    assert ended_payload["reason"] == REASON
    assert sum(ended_payload["cards_per_position"].values()) == 9
    assert ended_payload["wagered"] == [2]
    assert ended_payload["collected_unseen"] == sorted(
        int(p) for p in ended_payload["cards_per_position"]
    )
    assert json.loads(recovery) == {"reason": REASON, "rule": "F3", "voided": ["r-1"]}
    # Idempotent: a second start finds nothing to void and journals nothing.
    with open_journal(path) as journal:
        assert journal.void_open_rounds(REASON) == []
        assert journal.last_seq == before + 2
    assert verify(path).ok


@pytest.mark.rule("F3")
def test_every_open_round_is_voided_in_one_group(path: Path) -> None:
    with open_journal(path) as journal:
        deal_round(journal, "r-1", wagered=[2], seed=1, cards=0)
        deal_round(journal, "r-2", wagered=[4], seed=2, cards=20)
        statements: list[str] = []
        journal._connection().set_trace_callback(statements.append)
        voided = journal.void_open_rounds(REASON)
    assert [r.round_id for r in voided] == ["r-1", "r-2"]
    assert all(isinstance(r, OpenRound) for r in voided)
    assert statements.count("COMMIT") == 1
    kinds = rows(path, "SELECT kind, round_id FROM records ORDER BY seq DESC LIMIT 3")
    assert kinds == [("recovery", None), ("round_ended", "r-2"), ("round_ended", "r-1")]
    [(empty,)] = rows(
        path, "SELECT payload FROM records WHERE kind = ? AND round_id = ?", Kind.ROUND_ENDED, "r-1"
    )
    assert json.loads(empty)["cards_per_position"] == {}
