"""SIGKILL at random points: 30 trials in every test run (``python benchmarks/crash.py``
runs the long one). A child process runs ``shoe-controller run`` against a shoe that
outlives it; after each kill the journal verifies, the open round is voided at the next
start, every event and card the shoe saw acknowledged is journaled exactly once, and after
the last kill the table deals a round again."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import crash


@pytest.mark.rule("E3")
@pytest.mark.rule("F3")
@pytest.mark.timeout(300)
def test_thirty_kills_lose_nothing_acknowledged(tmp_path: Path) -> None:
    report = crash.crash_trials(30, seed=20261129, workdir=tmp_path)
    assert report.failures == []
    assert report.trials == 30
    assert report.dealt_after
    assert report.cards_checked > 0, "the kills came too early to check anything"
    line = report.line(7, 0.0)
    assert line["ok"] and line["failed_trials"] == 0


def test_the_checks_see_an_acknowledged_event_missing(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    report = crash.crash_trials(1, seed=8, workdir=tmp_path)
    assert report.failures == []
    issued: list[tuple[int, object]] = [(10**6, object())]
    problems, _ = crash.check_trial(
        journal, before=0, shoe_base=0, left_open=set(), acked=10**6, issued=issued
    )
    assert any("not journaled" in p for p in problems)
    problems, _ = crash.check_trial(
        journal, before=0, shoe_base=0, left_open={"no-such-round"}, acked=0, issued=[]
    )
    assert any("not voided" in p for p in problems)
