"""Crash safety: a writer killed with SIGKILL at random points loses no acknowledged record.

The child (crash_child.py) appends group commits and prints an acknowledgement after each.
The parent kills it after a random number of acknowledgements, then checks that the journal
verifies, that the round left open is voided on restart (rule F3), and that every
acknowledged event is in the journal exactly once (rule E3). The trials share one journal,
so each child also starts from whatever its predecessor left behind.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from shoe_controller.journal import Journal, verify
from tests.service.test_recovery import _start as start_once
from tools import children

CHILD = Path(__file__).with_name("crash_child.py")


def run_and_kill(path: Path, trial: int, acks_wanted: int) -> list[tuple[int, int, int]]:
    """Run a child until it has acknowledged ``acks_wanted`` groups, SIGKILL it, and return
    every acknowledgement it wrote (some may arrive after the ones waited for)."""
    child = children.spawn(
        [sys.executable, str(CHILD), str(path), str(trial)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    lines: list[bytes] = []
    try:
        while len(lines) < acks_wanted:
            line = child.stdout.readline()
            if not line:
                break  # the child ended by itself, which the checks below report
            lines.append(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    rest = child.stdout.read()
    errors = child.stderr.read().decode(errors="replace")
    child.stdout.close()
    child.stderr.close()
    assert child.returncode == -signal.SIGKILL, f"the child ended by itself: {errors}"
    # Only complete lines are acknowledgements; a line cut by the kill is not.
    lines += rest.splitlines(keepends=True)
    return [
        (int(a), int(b), int(c))
        for a, b, c in (line.split() for line in lines if line.endswith(b"\n"))
    ]


def journal_events(path: Path) -> tuple[Counter[int], dict[int, int]]:
    conn = sqlite3.connect(path)
    try:
        found = conn.execute(
            "SELECT json_extract(payload, '$.seq'), seq FROM records WHERE kind = 'shoe_event'"
        ).fetchall()
    finally:
        conn.close()
    return Counter(event for event, _ in found), dict(found)


def rounds_ended(path: Path) -> tuple[set[str], Counter[str]]:
    conn = sqlite3.connect(path)
    try:
        opened = {
            r for (r,) in conn.execute("SELECT round_id FROM records WHERE kind = 'round_opened'")
        }
        ended = Counter(
            r for (r,) in conn.execute("SELECT round_id FROM records WHERE kind = 'round_ended'")
        )
        voids = [
            json.loads(p)
            for (p,) in conn.execute(
                "SELECT payload FROM records WHERE kind = 'round_ended' "
                "AND json_extract(payload, '$.outcome') = 'void_fault'"
            )
        ]
    finally:
        conn.close()
    assert all(v["rule"] == "F3" for v in voids)
    return opened, ended


@pytest.mark.rule("E3")
@pytest.mark.rule("F3")
@pytest.mark.parametrize(
    "trials",
    [
        pytest.param(50, id="50-trials"),
        pytest.param(
            500,
            id="500-trials",
            marks=[
                pytest.mark.soak,
                pytest.mark.timeout(1800),
            ],
        ),
    ],
)
def test_killed_writers_lose_no_acknowledged_record(tmp_path: Path, trials: int) -> None:
    path = tmp_path / "state" / "journal.sqlite3"
    rng = random.Random(20250501 + trials)
    groups: list[tuple[int, int, int]] = []  # acknowledged: journal seq, first, last event
    for trial in range(1, trials + 1):
        # Now and then before the first acknowledgement: a kill during start-up, creation
        # or recovery.
        wanted = 0 if rng.random() < 0.15 else rng.randint(1, 12)
        groups += run_and_kill(path, trial, wanted)
        if not path.exists():
            assert not groups
            continue

        report = verify(path)
        assert report.ok, f"trial {trial}: {report.summary()}"
        counts, where = journal_events(path)
        assert [e for e, n in counts.items() if n > 1] == [], f"trial {trial}: duplicates"
        for journal_seq, first, last in groups:
            lost = [e for e in range(first, last + 1) if e not in counts]
            assert lost == [], f"trial {trial}: acknowledged events lost"
            # The group's last record is the card that follows its last event's record.
            assert where[last] == journal_seq - 1, f"trial {trial}: event {last} misplaced"

    # The last child's round is voided by the next start, once.
    with Journal.open(path) as journal:
        start_once(journal)
        assert journal.open_rounds() == []
        start_once(journal)
    opened, ended = rounds_ended(path)
    assert set(ended) == opened
    assert [r for r, n in ended.items() if n != 1] == []
    assert verify(path).ok
