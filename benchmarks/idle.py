"""CPU used by a connected, idle controller: only the shoe's heartbeats come and go.

The simulated shoe runs in a child process behind a real pty (so its own work is not
counted); this process runs the table controller on it, journal on a real file, and
nobody answers its prompts: the deck is loaded and the table waits for the croupier
to confirm its shuffle. Once it waits, the CPU time of this whole process (user +
system, every thread, from ``resource.getrusage``) is read over the interval.

``value`` is the CPU milliseconds used in the interval, the baseline the interval's wall
milliseconds, so ``ratio`` is the fraction of one core; ``percent_of_core`` says the same
in per cent (aim: under 1). ``bytes_to_host`` shows that the link was alive meanwhile.

``poller_percent_of_core`` is a floor for comparison, measured next in the same run: a
bare Python thread that only wakes up at the link driver's poll interval
(``POLL_INTERVAL``) and waits again, as its reader does when nothing arrives.

    python benchmarks/idle.py [--quick] [--seconds S]
"""

from __future__ import annotations

import argparse
import os
import resource
import select
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import emit, result
from _table import RoundCounter, log_errors_only, start_table
from _timed_shoe import ShoeProcess

from shoe_controller.link.reader import POLL_INTERVAL

#: What the controller asks for once the deck is in: it then waits for the croupier
#: to confirm the shuffle (A2).
IDLE_PROMPT = "confirm_shuffle"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def poller_cpu(seconds: float) -> float:
    """CPU seconds a thread spends waking every POLL_INTERVAL for ``seconds``."""
    read_end, write_end = os.pipe()

    def poll() -> None:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            select.select([read_end], [], [], POLL_INTERVAL)

    try:
        thread = threading.Thread(target=poll, name="bare-poller")
        start = cpu_seconds()
        thread.start()
        thread.join()
        return cpu_seconds() - start
    finally:
        os.close(read_end)
        os.close(write_end)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run, for CI")
    parser.add_argument("--seconds", type=float, help="the interval (default 10, quick 2)")
    args = parser.parse_args(argv)
    log_errors_only()
    seconds = args.seconds or (2.0 if args.quick else 10.0)
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp, ShoeProcess() as shoe:
        counter = RoundCounter()
        controller = start_table(shoe.path, Path(tmp) / "journal.sqlite3", counter, croupier=False)
        try:
            counter.wait_for(lambda c: c.last_prompt == IDLE_PROMPT, timeout=30)
            shoe.mark()
            wall_start, cpu_start = time.perf_counter(), cpu_seconds()
            # The controller's stop ends the interval early, and the run fails below.
            stopped = controller.wait(seconds)
            wall = time.perf_counter() - wall_start
            cpu = cpu_seconds() - cpu_start
            still = counter.last_prompt == IDLE_PROMPT and not stopped
        finally:
            controller.stop()
        figures = shoe.figures()
    if not still:
        raise RuntimeError(f"the table did not stay idle: last prompt {counter.last_prompt}")
    floor = poller_cpu(seconds)
    emit(
        result(
            "idle",
            cpu * 1e3,
            "ms CPU",
            "wall time of the interval (ms)",
            wall * 1e3,
            ratio_digits=5,
            percent_of_core=round(100 * cpu / wall, 3),
            seconds=round(wall, 2),
            poller_percent_of_core=round(100 * floor / seconds, 3),
            poll_interval_ms=POLL_INTERVAL * 1e3,
            bytes_to_host=figures["bytes_to_host"],
            bytes_from_host=figures["bytes_from_host"],
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
