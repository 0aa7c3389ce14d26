"""The address ``auto``: whichever single shoe discovery finds, looked up at every open.

Looking up again at each open lets a reconnect follow a shoe that came back under another
name (``/dev/ttyACM0`` unplugged, back as ``/dev/ttyACM1``).
"""

from __future__ import annotations

from collections.abc import Callable

from shoe_controller.errors import ConfigError, TransportError
from shoe_controller.hal import discovery
from shoe_controller.hal.addresses import open_transport, parse_address
from shoe_controller.hal.base import Transport


class AutoTransport(Transport):
    """Delegates to the transport of the one shoe found when it opens.

    ``candidates`` lists the devices (default :func:`discovery.list_candidates`);
    ``opener`` makes a transport from an address (default :func:`open_transport`).
    """

    def __init__(
        self,
        *,
        candidates: Callable[[], list[discovery.Candidate]] = discovery.list_candidates,
        opener: Callable[[str], Transport] = open_transport,
        address: str = "auto",
    ) -> None:
        self.address = address
        self._candidates = candidates
        self._opener = opener
        self._inner: Transport | None = None
        #: The shoe chosen by the last open, for messages and reconnection.
        self.chosen: discovery.Candidate | None = None

    @classmethod
    def from_address(cls, address: str) -> AutoTransport:
        parsed = parse_address(address)
        if parsed.scheme != "auto":
            raise ConfigError(f"{address!r} is not the address auto")
        return cls(address=parsed.text)

    @property
    def is_open(self) -> bool:
        return self._inner is not None and self._inner.is_open

    @property
    def inner(self) -> Transport | None:
        """The transport of the chosen shoe while open."""
        return self._inner

    def open(self) -> None:
        if self._inner is not None:
            raise RuntimeError(f"{self.address} is already open")
        chosen = discovery.choose_one(self._candidates())
        inner = self._opener(chosen.address)
        try:
            inner.open()
        except BaseException:
            inner.close()
            raise
        self.chosen = chosen
        self._inner = inner

    def close(self) -> None:
        inner, self._inner = self._inner, None
        if inner is not None:
            inner.close()

    def read(self, timeout: float) -> bytes:
        return self._require_open().read(timeout)

    def write(self, data: bytes) -> None:
        self._require_open().write(data)

    def interrupt(self) -> None:
        inner = self._inner
        if inner is not None:
            inner.interrupt()

    @property
    def interruptible(self) -> bool:
        inner = self._inner
        return inner is not None and inner.interruptible

    def _require_open(self) -> Transport:
        inner = self._inner
        if inner is None:
            raise TransportError(f"{self.address} is not open")
        return inner

    def __repr__(self) -> str:
        chosen = f" -> {self.chosen.address}" if self.chosen and self.is_open else ""
        return f"<AutoTransport {self.address!r}{chosen}>"
