"""The decode benchmark runs (quick mode) and prints its one JSON line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "decode.py"


def test_the_quick_decode_benchmark_prints_one_json_line() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = run.stdout.splitlines()
    assert len(lines) == 1, run.stdout
    line = json.loads(lines[0])
    assert line["name"] == "decode" and line["unit"] == "frames/s"
    assert line["baseline"] == "pymodbus FramerRTU"
    assert line["value"] > 0 and line["baseline_value"] > 0
    assert line["ratio"] == pytest.approx(line["value"] / line["baseline_value"], rel=0.01)
    # Not a performance gate (CI machines vary), only a sanity check of the comparison.
    assert line["ratio"] > 1
