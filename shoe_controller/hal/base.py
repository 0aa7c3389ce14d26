"""The one interface every transport implements: bytes in, bytes out, nothing else."""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self


class Transport(abc.ABC):
    """A byte pipe to a shoe.

    ``open`` and ``close`` are explicit; ``close`` is idempotent and safe on an object whose
    construction or ``open`` failed half way. ``read`` waits at most ``timeout`` seconds and
    returns what arrived, possibly ``b""``. Failures raise the errors of
    :mod:`shoe_controller.errors` (``LinkLost`` when the device vanished while open).
    """

    #: The address this transport was made from, for messages and reconnection.
    address: str = ""
    #: True only for the simulator running in this process (see the link's approval rule).
    in_process_simulator: bool = False

    @classmethod
    def from_address(cls, address: str) -> Transport:
        """The transport for a device address (see :mod:`shoe_controller.hal.addresses`),
        not yet opened. Every class registered for an address scheme implements this."""
        raise NotImplementedError(f"{cls.__qualname__} cannot be made from a device address")

    @abc.abstractmethod
    def open(self) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    @property
    @abc.abstractmethod
    def is_open(self) -> bool: ...

    @abc.abstractmethod
    def read(self, timeout: float) -> bytes: ...

    @abc.abstractmethod
    def write(self, data: bytes) -> None: ...

    def interrupt(self) -> None:  # noqa: B027 (optional: the default does nothing)
        """Make a ``read`` blocked in another thread return early (with what it has), where
        the transport can (see :attr:`interruptible`); elsewhere the read ends at its
        timeout. An interrupt while no read is blocked ends the next read early. The
        transport stays open."""

    @property
    def interruptible(self) -> bool:
        """True when :meth:`interrupt` ends a blocked read at once. A reader that other
        threads need to reach has to wake by itself, often, on a transport that is not."""
        return False

    def __enter__(self) -> Self:
        if not self.is_open:
            self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
