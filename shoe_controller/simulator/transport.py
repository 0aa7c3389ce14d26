"""``sim://`` addresses: the simulated shoe running in this process, as a Transport.

The shoe runs on the caller's thread: ``read`` lets its time pass (on a monotonic clock
that tests may inject) and returns what it sent; ``write`` hands it the host's bytes.

Shoes live in a registry keyed by the address string, so that reconnecting reaches the
same shoe, as reconnecting a cable reaches the same hardware: a shoe stays on, in whatever
state it is, until :func:`switch_off` forgets it (or the process ends). Opening an address
whose shoe is open already attaches to that shoe, and the newest opener takes the link
over (the previous one reads LinkLost). Nobody runs a shoe that no transport has open;
its time catches up when one opens it again.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from shoe_controller.errors import LinkLost, TransportError
from shoe_controller.hal.base import Transport
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.runner import Clock, ShoeRunner
from shoe_controller.simulator.shoe import SimulatedShoe

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _LiveShoe:
    runner: ShoeRunner
    #: Bumped whenever the link drops or is taken over: a transport opened under an
    #: older epoch has lost its link.
    epoch: int = 0
    users: set[SimTransport] = field(default_factory=set)


_registry: dict[str, _LiveShoe] = {}
_registry_lock = threading.Lock()


def live_addresses() -> list[str]:
    """The addresses of the simulated shoes alive in this process."""
    with _registry_lock:
        return sorted(_registry)


def runner_at(address: str) -> ShoeRunner | None:
    """The runner of the simulated shoe alive at ``address``, for tests and benches that
    play the croupier's hands (take a deck out, open the door)."""
    with _registry_lock:
        live = _registry.get(address)
    return live.runner if live is not None else None


def switch_off(address: str) -> None:
    """Forget the shoe at ``address``: the next open starts a fresh one. A transport still
    open on it keeps the old shoe until it closes."""
    with _registry_lock:
        _registry.pop(address, None)


class SimTransport(Transport):
    in_process_simulator = True

    def __init__(
        self,
        options: SimOptions | None = None,
        *,
        address: str | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.options = options or SimOptions()
        self.address = address if address is not None else "sim://"
        self._clock = clock
        self._live: _LiveShoe | None = None
        self._epoch = 0
        self._interrupted = False

    @classmethod
    def from_address(cls, address: str) -> SimTransport:
        return cls(SimOptions.from_address(address), address=address)

    # --- Transport ---------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._live is not None

    def open(self) -> None:
        if self._live is not None:
            raise RuntimeError(f"{self.address} is already open")
        with _registry_lock:
            live = _registry.get(self.address)
            if live is None:
                shoe = SimulatedShoe(self.options)
                live = _LiveShoe(ShoeRunner(shoe, self._clock))
                _registry[self.address] = live
            with live.runner.locked():
                if live.users:
                    log.info("%s: a new connection takes the link over", self.address)
                live.epoch += 1
                live.users.add(self)
                self._epoch = live.epoch
        self._live = live

    def close(self) -> None:
        live, self._live = self._live, None
        if live is None:
            return
        with _registry_lock:
            live.users.discard(self)
        live.runner.wake()  # a read waiting in another thread returns

    def read(self, timeout: float) -> bytes:
        if timeout < 0:
            raise ValueError(f"read timeout must be >= 0, not {timeout}")
        live = self._require_link()
        data = live.runner.wait_for_output(
            timeout,
            stop=lambda: self._interrupted or self._live is not live or self._link_gone(live),
        )
        self._interrupted = False
        if self._live is not live:
            return b""  # closed by another thread while we waited
        self._require_link()
        return data

    def interrupt(self) -> None:
        live = self._live
        if live is not None:
            self._interrupted = True
            live.runner.wake()

    @property
    def interruptible(self) -> bool:
        return True

    def write(self, data: bytes) -> None:
        # A drop the bytes cause (a fault at the card they let out) shows on the next read.
        self._require_link().runner.feed(bytes(data))

    # --- for tests and diagnostics -----------------------------------------------------

    @property
    def runner(self) -> ShoeRunner:
        """The runner of the shoe this transport is attached to (open it first)."""
        if self._live is None:
            raise TransportError(f"{self.address} is not open")
        return self._live.runner

    @property
    def shoe(self) -> SimulatedShoe:
        return self.runner.shoe

    # --- internals ---------------------------------------------------------------------

    def _link_gone(self, live: _LiveShoe) -> bool:
        # Called with the runner's lock held.
        shoe = live.runner.shoe
        if shoe.take_link_drop():
            live.epoch += 1
            # What the shoe sent after the drop went nowhere.
            while shoe.data_to_send():
                pass
            log.info("%s: the link dropped (disconnect fault)", self.address)
        return live.epoch != self._epoch

    def _require_link(self) -> _LiveShoe:
        live = self._live
        if live is None:
            raise TransportError(f"{self.address} is not open; open it first")
        with live.runner.locked():
            gone = self._link_gone(live)
        if gone:
            raise LinkLost(
                f"link to the simulated shoe {self.address} lost; close and open it again "
                "to reconnect"
            )
        return live

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"<SimTransport {self.address!r} {state}>"
