"""Smoke runs of the benchmarks, so that they cannot rot: each ``--quick`` run in a
subprocess prints one JSON line of the documented shape. Figures are not judged here:
timing belongs to the benchmarks' own runs, not to a test."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
NAMES = ("decode", "round", "startup", "idle", "memory", "verify", "journal_open", "api", "floor")
#: The real parts a benchmark drives.
NEEDS = {"floor": ("mosquitto", "postgresql")}
#: Extra numeric keys each benchmark promises (the docs' table reads them).
EXTRA = {
    "decode": ("value_one_frame_per_call", "frame_bytes", "wire_frames_per_s"),
    "round": ("latency_p50_ms", "latency_p99_ms", "host_us_per_card", "wire_us_per_card"),
    "startup": ("runs",),
    "idle": ("percent_of_core", "seconds", "poller_percent_of_core", "bytes_to_host"),
    "memory": (
        "growth_mb",
        "growth_second_half_mb",
        "sim_last_mb",
        "sim_growth_mb",
        "rounds_first",
        "rounds_last",
    ),
    "verify": ("records", "append_rate"),
    "journal_open": ("first_open_ms", "first_open_ratio", "records"),
    "api": ("latency_p50_ms", "latency_p99_ms", "bare_p50_ms", "clients", "cards"),
    "floor": (
        "catchup_signed_per_s",
        "catchup_unsigned_per_s",
        "catchup_signature_ratio",
        "latency_p50_ms",
        "latency_p99_ms",
        "floor_latency_p50_ms",
        "floor_latency_p99_ms",
        "floor_latency_unsigned_p99_ms",
        "floor_latency_signature_ratio",
        "one_table_hour_records",
        "one_table_hour_seconds",
    ),
}


def run_quick(name: str) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{name}.py"), "--quick"],
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert len(lines) == 1, completed.stdout
    line: dict[str, Any] = json.loads(lines[0])
    return line


def is_number(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=[pytest.mark.needs(*NEEDS[n])] if n in NEEDS else []) for n in NAMES],
)
def test_quick_run_prints_one_result_line(name: str) -> None:
    line = run_quick(name)
    assert line["name"] == name
    assert isinstance(line["unit"], str) and line["unit"]
    assert isinstance(line["baseline"], str) and line["baseline"]
    for key in ("value", "baseline_value", "ratio", *EXTRA[name]):
        assert is_number(line[key]), (key, line[key])
    assert line["value"] > 0 and line["baseline_value"] > 0
    # The ratio is the value over the baseline, to the precision the line keeps: both are
    # rounded to 0.1 there, the ratio to its own last digit.
    value, baseline, ratio = line["value"], line["baseline_value"], line["ratio"]
    ratio_step = 10.0 ** -len(str(ratio).partition(".")[2])
    lowest = (value - 0.05) / (baseline + 0.05) - ratio_step / 2
    highest = (value + 0.05) / max(baseline - 0.05, 1e-9) + ratio_step / 2
    assert lowest <= ratio <= highest, (value, baseline, ratio)
