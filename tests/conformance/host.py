"""A minimal test host: speaks firmware_protocol to a shoe over any Transport.

Not the product's link layer: just enough to check a shoe against docs/protocol.md. It
numbers commands, resends one that got no reply, takes events in sequence order exactly
once (a duplicate or an event past a gap is dropped; the shoe sends it again), and
acknowledges what it took. With ``ask_resend`` it also asks a FAST_RECOVERY shoe for the
events it misses (ResendEvents) when a frame arrives damaged or an event past a gap.
Waits are bounded by real time and end as soon as their condition holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from firmware_protocol import (
    SUPPORTED_VERSIONS,
    Ack,
    AckEvents,
    Flags,
    GetIdentity,
    Heartbeat,
    Hello,
    Message,
    Nak,
    Packet,
    ResendEvents,
    SelfTestReport,
    StreamDecoder,
    encode_frame,
)
from firmware_protocol.timing import COMMAND_ATTEMPTS, COMMAND_TIMEOUT
from shoe_controller.errors import LinkLost
from shoe_controller.hal.base import Transport

READ_SLICE = 0.05


class HostTimeout(AssertionError):
    pass


@dataclass
class Lost:
    """Events the shoe no longer holds (a reboot lost them): from ``first`` to ``last``."""

    first: int
    last: int


@dataclass
class TestHost:
    transport: Transport
    auto_ack: bool = True
    decoder: StreamDecoder = field(default_factory=StreamDecoder)
    #: Events taken, in sequence order, each once: (seq, message).
    events: list[tuple[int, Message]] = field(default_factory=list)
    #: Every event frame received, duplicates and retransmissions included.
    event_frames: list[Packet] = field(default_factory=list)
    responses: list[Packet] = field(default_factory=list)
    hellos: list[Hello] = field(default_factory=list)
    heartbeats: list[Heartbeat] = field(default_factory=list)
    gaps: list[Lost] = field(default_factory=list)
    link_lost: bool = False
    next_seq: int = 1
    acked: int = 0
    #: The sequence number of the next event to take.
    expected_event: int = 1
    #: Ask for missing events (ResendEvents) at once; how many times it did.
    ask_resend: bool = False
    resend_requests: int = 0

    __test__ = False  # not a test class, whatever pytest thinks of the name

    def messages(self, kind: type[Message] | None = None) -> list[Message]:
        return [m for _, m in self.events if kind is None or isinstance(m, kind)]

    # --- the conversation --------------------------------------------------------------

    def send(self, message: Message, seq: int | None = None, flags: Flags = Flags.NONE) -> int:
        if seq is None:
            seq, self.next_seq = self.next_seq, self.next_seq + 1
        self.transport.write(encode_frame(message, seq, flags))
        return seq

    def command(self, message: Message, timeout: float = COMMAND_TIMEOUT) -> list[Message]:
        """Send ``message`` and return its reply (all of a self-test's reports)."""
        replies = self._replies_to(self.next_seq)
        seq = self.send(message)
        for attempt in range(COMMAND_ATTEMPTS):
            if attempt:
                self.send(message, seq, Flags.RETRANSMIT)
            if self._poll_until(lambda: _complete(replies()), timeout):
                return replies()
        raise HostTimeout(f"no reply to {message} after {COMMAND_ATTEMPTS} attempts")

    def handshake(self) -> Hello:
        (hello,) = self.command(GetIdentity(SUPPORTED_VERSIONS))
        assert isinstance(hello, Hello)
        return hello

    def wait_for(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        if not self._poll_until(condition, timeout):
            raise HostTimeout(f"waited {timeout:g} s for {what}")

    def wait_events(self, count: int, timeout: float = 5.0) -> None:
        self.wait_for(lambda: len(self.events) >= count, timeout, f"{count} events")

    def pump(self, timeout: float = READ_SLICE) -> None:
        try:
            data = self.transport.read(timeout)
        except LinkLost:
            self.link_lost = True
            raise
        dropped = self.decoder.stats.frames_dropped
        self.decoder.receive_data(data)
        gap = False
        for packet in self.decoder:
            gap |= self._take(packet)
        if self.auto_ack and self.expected_event - 1 > self.acked:
            self.acknowledge(self.expected_event - 1)
        damaged = self.decoder.stats.frames_dropped > dropped
        if self.ask_resend and (gap or damaged):
            self.send(ResendEvents(self.expected_event), seq=0)
            self.resend_requests += 1

    def acknowledge(self, up_to: int) -> None:
        self.send(AckEvents(up_to), seq=0)
        self.acked = up_to

    # --- internals ---------------------------------------------------------------------

    def _replies_to(self, seq: int) -> Callable[[], list[Message]]:
        start = len(self.responses)

        def replies() -> list[Message]:
            found: list[Message] = []
            for packet in self.responses[start:]:
                if packet.seq == seq and packet.message not in found:
                    found.append(packet.message)
            return found

        return replies

    def _poll_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        give_up = time.monotonic() + timeout
        while not condition():
            remaining = give_up - time.monotonic()
            if remaining <= 0:
                return False
            self.pump(min(READ_SLICE, remaining))
        return True

    def _take(self, packet: Packet) -> bool:
        """Take one packet; True for an event past a gap."""
        message = packet.message
        if packet.flags & Flags.EVENT:
            self.event_frames.append(packet)
            if packet.seq == self.expected_event:
                self.events.append((packet.seq, message))
                self.expected_event += 1
            return packet.seq > self.expected_event
        if packet.flags & Flags.RESPONSE:
            self.responses.append(packet)
        if isinstance(message, Hello):
            self.hellos.append(message)
            self._check_lost(message.next_event_seq)
        elif isinstance(message, Heartbeat):
            self.heartbeats.append(message)
        return False

    def _check_lost(self, next_event_seq: int) -> None:
        # A shoe that no longer holds the events we expect (a reboot lost them): record
        # the gap and carry on from what it holds, as a link layer reports EventsLost.
        expected = self.expected_event
        if next_event_seq > expected:
            self.gaps.append(Lost(expected, next_event_seq - 1))
            self.expected_event = next_event_seq


def _complete(replies: list[Message]) -> bool:
    for reply in replies:
        if isinstance(reply, Ack | Nak):
            return True
        if isinstance(reply, SelfTestReport):
            if reply.step == reply.total:
                return True
            continue
        return True
    return False
