"""A transport module that the registry test imports by name only (see test_addresses)."""

from __future__ import annotations

from shoe_controller.hal.base import Transport


class LazyTransport(Transport):
    def __init__(self, address: str) -> None:
        self.address = address
        self._open = False

    @classmethod
    def from_address(cls, address: str) -> LazyTransport:
        return cls(address)

    @property
    def is_open(self) -> bool:
        return self._open

    def open(self) -> None:
        self._open = True

    def close(self) -> None:
        self._open = False

    def read(self, timeout: float) -> bytes:
        return b""

    def write(self, data: bytes) -> None:
        pass
