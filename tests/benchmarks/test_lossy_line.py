"""``benchmarks/lossy_line.py``, short: the table controller deals over every faulty line
with a shoe that has FAST_RECOVERY, and over a lossy one with a shoe of the first release;
every card arrives exactly once, and the line printed has the documented shape. Figures
are not judged here: timing belongs to the benchmark's own runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lossy_line import LINES

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "lossy_line.py"
FIGURES = ("gap_p50_ms", "gap_p99_ms", "gap_max_ms", "wall_s", "connect_s", "p99_ratio")


def run(*options: str) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick", *options],
        check=False,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    (text,) = completed.stdout.splitlines()
    line: dict[str, Any] = json.loads(text)
    assert "| line |" in completed.stderr  # the table, for a person
    return line


@pytest.mark.rule("E3")
@pytest.mark.rule("F5")
def test_every_line_deals_every_card_once_with_fast_recovery() -> None:
    line = run()
    assert line["name"] == "lossy_line" and line["unit"] == "ms"
    assert line["fast_recovery"] and line["exactly_once"] and line["complete"]
    assert line["problems"] == []
    assert [row["line"] for row in line["lines"]] == [ln.key for ln in LINES]
    for row in line["lines"]:
        assert row["exactly_once"] and row["complete"] and row["outcomes"]["dealt"] == 1
        # The stop closes the next round before its gate opened: not played (F4).
        assert set(row["outcomes"]) <= {"dealt", "not_played"}
        assert row["gaps"] == 48  # one round: 49 cards dealt
        assert all(isinstance(row[key], int | float) and row[key] >= 0 for key in FIGURES)
    rows = {row["line"]: row for row in line["lines"]}
    assert line["value"] == pytest.approx(rows["drop2"]["gap_p99_ms"], abs=0.1)
    assert line["baseline_value"] == pytest.approx(rows["clean"]["gap_p99_ms"], abs=0.1)
    assert rows["drop2"]["shoe"]["frames"] > 0
    noisy = rows["noise2"]["shoe"]
    assert noisy["corrupted_bytes"] > 0 and noisy["resend_requests"] > 0
    assert set(line["aims_ms"]) == {"drop2", "noise2"}


@pytest.mark.rule("F5")
def test_a_shoe_of_the_first_release_still_deals_over_a_lossy_line() -> None:
    line = run("--timer-only", "--lines", "drop2", "noise05")
    assert not line["fast_recovery"] and line["exactly_once"] and line["complete"]
    assert [row["line"] for row in line["lines"]] == ["clean", "drop2", "noise05"]
    for row in line["lines"]:
        assert row["shoe"]["resend_requests"] == row["shoe"]["resent_on_request"] == 0
    assert line["noise_p99_ms"] is None  # that line did not run
