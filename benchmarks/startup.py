"""Start-up time: ``shoe-diag --help`` against ``python -c pass``, in the same run.

Both are started as new processes by the same interpreter, interleaved run by run so that
both see the same state of the machine; each figure is the median of its runs. ``value``
is the command's wall time in milliseconds, ``ratio`` the command's time over the bare
interpreter's (aim: at most 3).

The command is the installed console script beside this interpreter, as a technician runs
it; without one (a checkout not installed), ``python -m shoe_controller.cli.diag``.

    python benchmarks/startup.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import emit, result


def diag_command() -> list[str]:
    script = Path(sys.executable).with_name("shoe-diag")
    if script.is_file():
        return [str(script), "--help"]
    return [sys.executable, "-m", "shoe_controller.cli.diag", "--help"]


def wall_time(command: list[str]) -> float:
    start = time.perf_counter()
    completed = subprocess.run(
        command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {completed.stderr.decode().strip()}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run, for CI")
    parser.add_argument("--runs", type=int, help="runs of each (default 31, quick 5)")
    args = parser.parse_args(argv)
    runs = args.runs or (5 if args.quick else 31)
    diag = diag_command()
    bare = [sys.executable, "-c", "pass"]
    # One run of each first, not counted: it brings the files into the page cache.
    wall_time(diag)
    wall_time(bare)
    diag_times: list[float] = []
    bare_times: list[float] = []
    for _ in range(runs):
        diag_times.append(wall_time(diag))
        bare_times.append(wall_time(bare))
    diag_ms = statistics.median(diag_times) * 1e3
    bare_ms = statistics.median(bare_times) * 1e3
    line = result(
        "startup",
        diag_ms,
        "ms",
        "python -c pass",
        bare_ms,
        value_min=round(min(diag_times) * 1e3, 1),
        baseline_min=round(min(bare_times) * 1e3, 1),
        runs=runs,
        command=" ".join([Path(diag[0]).name, *diag[1:]]),
    )
    emit(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
