"""Shared by the benchmarks: timing helpers and the one JSON line each benchmark prints.

Every benchmark prints exactly one line, a JSON object with at least ``name``, ``value``,
``unit``, ``baseline`` (what it is compared with), ``baseline_value`` and ``ratio``
(value / baseline_value, so above 1 is better when the unit is a rate); extra keys describe
the conditions of the run.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable
from typing import Any


def best_rate(run: Callable[[], int], rounds: int) -> float:
    """The best of ``rounds`` runs, in items per second; ``run`` returns how many items it
    processed. The best run is the one least disturbed by the rest of the machine."""
    best = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        items = run()
        elapsed = time.perf_counter() - start
        if elapsed > 0:
            best = max(best, items / elapsed)
    return best


def result(
    name: str,
    value: float,
    unit: str,
    baseline: str,
    baseline_value: float,
    **extra: Any,
) -> dict[str, Any]:
    """The benchmark's result line as a dict, with the ratio and the interpreter added."""
    return {
        "name": name,
        "value": round(value, 1),
        "unit": unit,
        "baseline": baseline,
        "baseline_value": round(baseline_value, 1),
        "ratio": round(value / baseline_value, 2) if baseline_value else None,
        **extra,
        "python": platform.python_version(),
    }


def emit(line: dict[str, Any]) -> None:
    """Print the result line: one JSON object, nothing else on stdout."""
    print(json.dumps(line, sort_keys=False))
    sys.stdout.flush()
