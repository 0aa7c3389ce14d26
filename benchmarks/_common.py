"""Shared by the benchmarks: timing helpers and the one JSON line each benchmark prints.

Every benchmark prints exactly one line, a JSON object with at least ``name``, ``value``,
``unit``, ``baseline`` (what it is compared with), ``baseline_value`` and ``ratio``
(value / baseline_value, so above 1 is better when the unit is a rate); extra keys describe
the conditions of the run.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
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
    *,
    ratio_digits: int = 2,
    **extra: Any,
) -> dict[str, Any]:
    """The benchmark's result line as a dict, with the ratio and the interpreter added.
    ``ratio_digits``: decimals kept in the ratio (more for a ratio far below 1)."""
    return {
        "name": name,
        "value": round(value, 1),
        "unit": unit,
        "baseline": baseline,
        "baseline_value": round(baseline_value, 1),
        "ratio": round(value / baseline_value, ratio_digits) if baseline_value else None,
        **extra,
        "python": platform.python_version(),
    }


def emit(line: dict[str, Any]) -> None:
    """Print the result line: one JSON object, nothing else on stdout."""
    print(json.dumps(line, sort_keys=False))
    sys.stdout.flush()


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``values`` (nearest rank; 0.5 is the median)."""
    if not values:
        raise ValueError("no values to take a percentile of")
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def machine() -> dict[str, Any]:
    """The conditions of a run, for the report: cores, interpreter, platform."""
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "machine": platform.machine(),
    }


def filesystem_of(path: str | os.PathLike[str]) -> str:
    """The type of the file system holding ``path`` (e.g. ext4, tmpfs), from /proc/mounts;
    "unknown" where that cannot be read. A journal on tmpfs never waits for a disk."""
    target = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) < 3:
                    continue
                point = fields[1].replace("\\040", " ")
                inside = target == point or target.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, fields[2]
    except OSError:
        pass
    return kind
