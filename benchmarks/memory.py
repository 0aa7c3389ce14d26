"""Peak memory of the controller after a few rounds and after many: does it grow?

A child process runs the table controller, journal on a real file, scripted croupier, and
reads its own peak resident set (VmHWM in /proc/self/status) when round FIRST and round
LAST finish. Measured twice, on two shoes:

- ``pty`` (``value``): the simulated shoe in a process of its own behind a real pty, as a
  shoe is its own device: the child holds the controller, and only the controller;
- ``sim`` (``sim_*`` keys): the shoe in the child itself (``sim://?pace=0``). The
  simulated shoe keeps its own record of every card and event it produced (ground truth
  for tests), which grows with the rounds, so this growth is the controller's plus the
  simulator's: an upper bound.

``value`` is the peak after LAST rounds (aim: under 40 MB), the baseline the peak after
FIRST rounds; ``growth_mb`` (aim: under 2) and ``ratio`` tell whether the controller keeps
what it no longer needs. ``growth_second_half_mb`` is the growth from the round halfway
between FIRST and LAST to LAST: near zero when what grew was warm-up (caches filling to
their bounds), not a leak.

    python benchmarks/memory.py [--quick] [--rounds FIRST LAST]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import emit, result
from _table import RoundCounter, log_errors_only, start_table
from _timed_shoe import ShoeProcess

SIM_DEVICE = "sim://?pace=0"
SHOES = ("pty", "sim")


def peak_rss_mb() -> float:
    """This process's peak resident set so far (VmHWM), in MB (10**6 bytes)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError("/proc/self/status has no VmHWM line")


def child(first: int, last: int, shoe: str) -> int:
    """Run LAST rounds; print the peaks after FIRST and LAST as one JSON line."""
    log_errors_only()
    peaks: dict[int, float] = {}

    middle = (first + last) // 2

    def on_round(finished: int) -> None:
        if finished in (first, middle, last):
            peaks[finished] = peak_rss_mb()

    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-memory-"))
        device = SIM_DEVICE if shoe == "sim" else stack.enter_context(ShoeProcess()).path
        counter = RoundCounter(target=last, on_round=on_round)
        controller = start_table(device, Path(tmp) / "journal.sqlite3", counter)
        try:
            counter.wait_rounds(last, timeout=60 + last)
        finally:
            controller.stop()
    if counter.played != {"dealt": last}:
        raise RuntimeError(f"rounds ended otherwise than dealt: {counter.outcomes}")
    figures = {"first": peaks[first], "middle": peaks[middle], "last": peaks[last]}
    print(json.dumps({**figures, "cards": counter.cards}))
    return 0


def measure(first: int, last: int, shoe: str) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, str(Path(__file__)), "--child", str(first), str(last), shoe],
        check=False,
        capture_output=True,
        text=True,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"the measured child ({shoe}) failed: {completed.stderr.strip()}")
    figures: dict[str, Any] = json.loads(completed.stdout)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run, for CI")
    parser.add_argument(
        "--rounds", type=int, nargs=2, metavar=("FIRST", "LAST"), help="default 10 1000"
    )
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        first_text, last_text, shoe = args.child
        return child(int(first_text), int(last_text), shoe)
    first, last = args.rounds or ((5, 50) if args.quick else (10, 1000))
    if not 0 < first < last:
        parser.error("--rounds FIRST LAST: give 0 < FIRST < LAST")
    pty, sim = (measure(first, last, shoe) for shoe in SHOES)
    emit(
        result(
            "memory",
            pty["last"],
            "MB peak RSS",
            f"peak RSS after {first} rounds",
            pty["first"],
            ratio_digits=3,
            growth_mb=round(pty["last"] - pty["first"], 2),
            growth_second_half_mb=round(pty["last"] - pty["middle"], 2),
            sim_first_mb=round(sim["first"], 1),
            sim_last_mb=round(sim["last"], 1),
            sim_growth_mb=round(sim["last"] - sim["first"], 2),
            rounds_first=first,
            rounds_last=last,
            cards=pty["cards"],
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
