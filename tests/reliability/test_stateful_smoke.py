"""The stateful test's long run, short: ``python benchmarks/stateful.py`` runs the state machine of
tests/service/test_stateful.py from a seed and prints one JSON line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_the_stateful_benchmark_prints_one_line_of_its_run() -> None:
    completed = subprocess.run(
        [sys.executable, str(BENCHMARKS / "stateful.py"), "--examples", "2", "--steps", "5"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert len(lines) == 1, completed.stdout
    line = json.loads(lines[0])
    assert (line["name"], line["ok"], line["failure"]) == ("stateful", True, None)
    assert line["examples"] >= 2 and line["steps"] >= 1
    assert sum(line["rules"].values()) == line["steps"]
    # Every example ends with a round dealt from wherever it stopped (F3).
    assert line["rounds_by_outcome"].get("dealt", 0) >= 2
