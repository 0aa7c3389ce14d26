"""Drives one simulated shoe from any number of threads, with one clock.

Front ends share this: it serialises access to the sans-I/O core, reads the clock for
every call, and lets a reader wait (on a condition, never a sleep) until the shoe has
something to send, the host wrote, or the wait's bound passed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from shoe_controller.simulator.shoe import SimulatedShoe

Clock = Callable[[], float]


class ShoeRunner:
    def __init__(self, shoe: SimulatedShoe, clock: Clock = time.monotonic) -> None:
        self.shoe = shoe
        self.clock = clock
        self._cond = threading.Condition()
        #: Called after :meth:`locked` released the shoe (a front end's wake-up).
        self.on_change: Callable[[], None] | None = None

    @contextmanager
    def locked(self) -> Iterator[SimulatedShoe]:
        """Hold the shoe, e.g. to press a button or inspect it while a front end runs.
        The front ends are woken on the way out, in case the change gave them work."""
        with self._cond:
            yield self.shoe
            self._cond.notify_all()
        if self.on_change is not None:
            self.on_change()

    def feed(self, data: bytes) -> None:
        with self._cond:
            self.shoe.receive_data(data, self.clock())
            self._cond.notify_all()

    def poll(self) -> bytes:
        """Let the shoe's time pass and take one segment of what it sends."""
        with self._cond:
            self.shoe.tick(self.clock())
            return self.shoe.data_to_send()

    def take_link_drop(self) -> bool:
        with self._cond:
            return self.shoe.take_link_drop()

    def seconds_until_due(self) -> float | None:
        """Seconds until the shoe next acts by itself, never negative; None: not before the
        host sends something."""
        with self._cond:
            deadline = self.shoe.next_deadline()
            if deadline is None:
                return None
            return max(0.0, deadline - self.clock())

    def wait_for_output(self, timeout: float | None, stop: Callable[[], bool]) -> bytes:
        """Wait until the shoe sends something (returned) or ``stop()`` is true or
        ``timeout`` real seconds passed (b"" then). ``None`` waits without bound."""
        give_up = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                now = self.clock()
                self.shoe.tick(now)
                data = self.shoe.data_to_send()
                if data or stop():
                    return data
                wait = None
                deadline = self.shoe.next_deadline()
                if deadline is not None:
                    wait = max(0.0, deadline - now)
                if give_up is not None:
                    remaining = give_up - time.monotonic()
                    if remaining <= 0:
                        return b""
                    wait = remaining if wait is None else min(wait, remaining)
                self._cond.wait(wait)

    def wait_until(self, predicate: Callable[[SimulatedShoe], bool], timeout: float) -> bool:
        """Wait until ``predicate(shoe)`` holds, re-checked whenever the host writes or
        the shoe is changed through :meth:`locked`; False when ``timeout`` passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self.shoe), timeout)

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()
