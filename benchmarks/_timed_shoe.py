"""A simulated shoe behind a real pseudo-terminal that times its own cards, for ``round``.

The latency of a card is measured where the shoe sees it: from the moment the shoe puts
its CardDrawn on the wire to the moment it receives the AckEvents that covers it. The front
end's runner is wrapped to take both times; the shoe itself is unchanged.

Run as a child process, it speaks on its standard streams:

- stdout, first line: the pty's path, for the host to open;
- stdin ``mark``: start the measured window (counters and latencies start from zero);
- stdin ``stop`` (or end of input): print one JSON line of the window's figures, exit.

    python benchmarks/_timed_shoe.py [--seed N]

:class:`ShoeProcess` is the parent's side of that conversation.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from _common import percentile

from firmware_protocol import CardDrawn
from shoe_controller.simulator import SimOptions, SimulatedShoe
from shoe_controller.simulator.pty_frontend import PtyFrontEnd
from shoe_controller.simulator.runner import Clock, ShoeRunner


class TimedRunner(ShoeRunner):
    """The front end's runner, timing every card from its wire to its acknowledgement.

    Both hooks run on the front end's thread; the lock guards the figures against the
    thread that marks and reads them."""

    def __init__(self, shoe: SimulatedShoe, clock: Clock = time.monotonic) -> None:
        super().__init__(shoe, clock)
        self._lock = threading.Lock()
        #: How many of ``shoe.events`` have been looked at.
        self._seen = 0
        #: Cards on the wire not yet acknowledged: (event seq, when sent).
        self._unacked: deque[tuple[int, float]] = deque()
        self.latencies: list[float] = []
        self.cards_sent = 0
        self.bytes_to_host = 0
        self.bytes_from_host = 0

    def poll(self) -> bytes:
        data = super().poll()
        if data:
            sent = time.perf_counter()
            events = self.shoe.events
            with self._lock:
                self.bytes_to_host += len(data)
                # Events the shoe issued since the last look left in this segment: with no
                # line faults configured, a poll returns everything queued for the wire.
                for seq, message in events[self._seen :]:
                    if isinstance(message, CardDrawn):
                        self._unacked.append((seq, sent))
                        self.cards_sent += 1
                self._seen = len(events)
        return data

    def feed(self, data: bytes) -> None:
        received = time.perf_counter()
        super().feed(data)
        acknowledged = self.shoe.acknowledged
        with self._lock:
            self.bytes_from_host += len(data)
            unacked = self._unacked
            while unacked and unacked[0][0] <= acknowledged:
                self.latencies.append(received - unacked.popleft()[1])

    def mark(self) -> None:
        """Start the measured window now."""
        with self._lock:
            self.latencies = []
            self.cards_sent = self.bytes_to_host = self.bytes_from_host = 0

    def figures(self) -> dict[str, Any]:
        with self._lock:
            latencies = list(self.latencies)
            figures: dict[str, Any] = {
                "cards_sent": self.cards_sent,
                "cards_acknowledged": len(latencies),
                "bytes_to_host": self.bytes_to_host,
                "bytes_from_host": self.bytes_from_host,
            }
        if latencies:
            figures.update(
                latency_p50_ms=percentile(latencies, 0.50) * 1e3,
                latency_p99_ms=percentile(latencies, 0.99) * 1e3,
                latency_max_ms=max(latencies) * 1e3,
            )
        return figures


class ShoeProcess:
    """This module run as a child process: start it, open :attr:`path`, :meth:`mark`,
    then :meth:`figures` once the host is done with it."""

    def __init__(self, seed: int = 0) -> None:
        self._process = subprocess.Popen(
            [sys.executable, str(Path(__file__)), "--seed", str(seed)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin, self._stdout = self._process.stdin, self._process.stdout
        self.path = self._stdout.readline().strip()
        if not self.path.startswith("/dev/"):
            self.close()
            raise RuntimeError(f"the simulated shoe did not start (it said {self.path!r})")

    def mark(self) -> None:
        """Start the measured window; safe from any one thread at a time."""
        self._stdin.write("mark\n")
        self._stdin.flush()

    def figures(self) -> dict[str, Any]:
        """Stop the shoe and return the window's figures."""
        self._stdin.write("stop\n")
        self._stdin.flush()
        line = self._stdout.readline()
        self.close()
        if not line:
            raise RuntimeError("the simulated shoe stopped without its figures")
        figures: dict[str, Any] = json.loads(line)
        return figures

    def close(self) -> None:
        if not self._stdin.closed:
            self._stdin.close()
        if self._process.wait(timeout=10) != 0:
            raise RuntimeError(f"the simulated shoe exited with status {self._process.returncode}")

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self._process.kill()
            self._process.wait()


def serve(seed: int) -> int:
    options = SimOptions(seed=seed, pace=0.0)
    front_end = PtyFrontEnd(options)
    runner = TimedRunner(front_end.shoe, front_end.runner.clock)
    runner.on_change = front_end.runner.on_change
    front_end.runner = runner
    with front_end:
        print(front_end.address, flush=True)
        for line in sys.stdin:
            command = line.strip()
            if command == "mark":
                runner.mark()
            elif command == "stop":
                break
        if front_end.error is not None:
            raise front_end.error
        print(json.dumps(runner.figures()), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="the simulator's seed")
    args = parser.parse_args(argv)
    return serve(args.seed)


if __name__ == "__main__":
    sys.exit(main())
