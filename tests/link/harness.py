"""A link core driven by hand: its clock, the frames it sent, the events it reported."""

from __future__ import annotations

from firmware_protocol import AckEvents, Card, CardDrawn, GateMode, GetIdentity
from shoe_controller.link.core import LinkCore
from shoe_controller.link.events import Connected, LinkEvent, ShoeEvent
from tests.link import frames


def card(index: int) -> CardDrawn:
    return CardDrawn(index, Card.from_code(0x01 + (index % 13)), GateMode.DEAL, 99)


class Harness:
    """A core, its clock, and what it sent and reported."""

    def __init__(self, core: LinkCore | None = None) -> None:
        self.core = core or LinkCore()
        self.now = 100.0

    def start(self) -> int:
        """Start and return the sequence number of the GetIdentity sent."""
        self.core.start(self.now)
        (request,) = self.sent()
        assert isinstance(request.message, GetIdentity)
        return request.seq

    def connect(self, **hello: object) -> Connected:
        seq = self.start()
        self.feed(frames.hello(seq=seq, **hello))  # type: ignore[arg-type]
        (connected,) = self.events()
        assert isinstance(connected, Connected)
        return connected

    def feed(self, *chunks: bytes) -> None:
        for chunk in chunks:
            self.core.receive_data(chunk, self.now)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.core.tick(self.now)

    def sent(self) -> list[frames.Packet]:
        return frames.packets(self.core.data_to_send())

    def events(self) -> list[LinkEvent]:
        out = []
        while (ev := self.core.next_event()) is not None:
            out.append(ev)
        return out

    def delivered(self) -> list[int]:
        return [ev.seq for ev in self.events() if isinstance(ev, ShoeEvent)]

    def acks_sent(self) -> list[int]:
        return [p.message.up_to_seq for p in self.sent() if isinstance(p.message, AckEvents)]
