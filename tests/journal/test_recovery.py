"""Start-up recovery, the journal's part: which rounds a stopped controller left open, and
what each holds (rule F3). Voiding them is the procedure's decision (tests/service)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.journal.helpers import deal_round, open_journal


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "journal.sqlite3"


def test_a_fresh_journal_has_no_open_round(path: Path) -> None:
    with open_journal(path) as journal:
        assert journal.open_rounds() == []
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


def test_a_rounds_records_come_back_in_journal_order(path: Path) -> None:
    with open_journal(path) as journal:
        deal_round(journal, "r-1", wagered=[2], seed=1)
        deal_round(journal, "r-2", wagered=[3, 6], seed=2, cards=5)
        records = journal.round_records("r-2")
    assert [r.seq for r in records] == sorted(r.seq for r in records)
    assert {r.round_id for r in records} == {"r-2"}
    assert [r.kind for r in records][:1] == ["round_opened"]
    assert len([r for r in records if r.kind == "card"]) == 5
