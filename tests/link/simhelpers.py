"""Openers for driver tests: the in-process simulated shoe, and transports wrapping it."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from shoe_controller.hal.base import Transport
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.runner import ShoeRunner
from shoe_controller.simulator.shoe import SimulatedShoe
from shoe_controller.simulator.transport import SimTransport, switch_off

_unique = itertools.count(1)

Clock = Callable[[], float]


def scaled_clock(factor: float) -> Clock:
    """A monotonic clock running ``factor`` times faster than real time: the protocol's
    timeouts (retransmission, heartbeat, silence) pass quickly, with their proportions."""
    origin = time.monotonic()
    return lambda: origin + (time.monotonic() - origin) * factor


@contextmanager
def sim_address(query: str) -> Iterator[str]:
    """A ``sim://`` address of its own for one test, switched off afterwards."""
    address = f"sim://?{query}&serial=T{next(_unique):05d}"
    try:
        yield address
    finally:
        switch_off(address)


class SimOpener:
    """Opens ``sim://`` addresses in this process on ``clock``, keeping what it opened."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self.opened: list[Transport] = []
        #: Every write to the shoe, as it was made.
        self.writes: list[bytes] = []
        self._runner: ShoeRunner | None = None

    def __call__(self, address: str) -> Transport:
        transport = self.wrap(
            SimTransport(SimOptions.from_address(address), address=address, clock=self.clock)
        )
        self.opened.append(transport)
        return transport

    def wrap(self, transport: SimTransport) -> Transport:
        return _Recording(transport, self)

    @property
    def runner(self) -> ShoeRunner:
        assert self._runner is not None, "no simulated shoe was opened yet"
        return self._runner

    def shoe_events(self) -> list[tuple[int, object]]:
        with self.runner.locked() as shoe:
            return list(shoe.events)

    def quiet(self) -> bool:
        """The shoe holds no unacknowledged event and its gate is locked."""
        with self.runner.locked() as shoe:
            return not shoe.unacked and shoe.gate.name == "LOCKED"

    def shoe(self) -> SimulatedShoe:
        return self.runner.shoe


class _Recording(Transport):
    """Delegates to a SimTransport and remembers its shoe's runner once open."""

    def __init__(self, inner: SimTransport, opener: SimOpener, *, interruptible: bool = True):
        self.inner = inner
        self._interruptible = interruptible
        self.address = inner.address
        self.in_process_simulator = inner.in_process_simulator
        self._opener = opener

    def open(self) -> None:
        self.inner.open()
        self._opener._runner = self.inner.runner

    def close(self) -> None:
        self.inner.close()

    @property
    def is_open(self) -> bool:
        return self.inner.is_open

    def read(self, timeout: float) -> bytes:
        return self.inner.read(timeout)

    def write(self, data: bytes) -> None:
        self._opener.writes.append(bytes(data))
        self.inner.write(data)

    def interrupt(self) -> None:
        if self._interruptible:
            self.inner.interrupt()

    @property
    def interruptible(self) -> bool:
        return self._interruptible


class ClaimsToBeSimulator(SimOpener):
    """The simulator's bytes, but not the in-process simulator: like one over a port."""

    def wrap(self, transport: SimTransport) -> Transport:
        wrapped = super().wrap(transport)
        wrapped.in_process_simulator = False
        return wrapped


class Uninterruptible(SimOpener):
    """The simulator behind a transport whose read cannot be interrupted (like pyusb)."""

    def wrap(self, transport: SimTransport) -> Transport:
        return _Recording(transport, self, interruptible=False)
