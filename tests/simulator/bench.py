"""A test bench for the sans-I/O shoe: a hand-turned clock and a decoder for its output."""

from __future__ import annotations

from firmware_protocol import (
    PROTOCOL_VERSION,
    CardDrawn,
    Flags,
    Message,
    Packet,
    StreamDecoder,
    encode_frame,
)
from shoe_controller.simulator import SimOptions, SimulatedShoe


class Bench:
    def __init__(self, query: str = "", start: float = 100.0) -> None:
        address = f"sim://?{query}" if query else "sim://"
        self.shoe = SimulatedShoe(SimOptions.from_address(address))
        self.now = start
        self.decoder = StreamDecoder()
        #: Every packet received, in order.
        self.received: list[Packet] = []
        self._taken = 0
        self.reads: list[bytes] = []
        self.shoe.tick(self.now)
        self._collect()

    def send(
        self,
        message: Message,
        seq: int = 1,
        flags: Flags = Flags.NONE,
        version: int = PROTOCOL_VERSION,
    ) -> list[Packet]:
        self.shoe.receive_data(encode_frame(message, seq, flags, version), self.now)
        return self._collect()

    def advance(self, seconds: float) -> list[Packet]:
        self.now += seconds
        self.shoe.tick(self.now)
        return self._collect()

    def take(self) -> list[Packet]:
        """Packets received since the last take."""
        new = self.received[self._taken :]
        self._taken = len(self.received)
        return new

    def _collect(self) -> list[Packet]:
        start = len(self.received)
        while data := self.shoe.data_to_send():
            self.reads.append(data)
            self.decoder.receive_data(data)
        self.received.extend(self.decoder)
        return self.received[start:]


def messages(packets: list[Packet], kind: type[Message] | None = None) -> list[Message]:
    return [p.message for p in packets if kind is None or isinstance(p.message, kind)]


def cards(packets: list[Packet]) -> list[CardDrawn]:
    return [p.message for p in packets if isinstance(p.message, CardDrawn)]
