"""Events the shoe has sent and the host has not yet acknowledged.

Each event gets the next sequence number (from 1) and stays here until a cumulative
AckEvents covers it. An event is sent again when its retransmit time passes; every round
of retransmission doubles the wait up to a maximum, and an acknowledgement that makes
progress brings the wait back to its base value (firmware_protocol.timing).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from firmware_protocol import Message


@dataclass(slots=True)
class PendingEvent:
    seq: int
    message: Message
    #: When it is sent again unless acknowledged first.
    due: float


class EventOutbox:
    def __init__(self, retransmit: float, retransmit_max: float, window: int) -> None:
        self._base = retransmit
        self._max = retransmit_max
        self._wait = retransmit
        self.window = window
        self._pending: deque[PendingEvent] = deque()
        #: The sequence number the next event gets. Kept across reboots, even when the
        #: events themselves are lost, so that the host can see the loss.
        self.next_seq = 1
        #: The highest sequence number the host acknowledged.
        self.acknowledged = 0

    def add(self, message: Message, now: float) -> int:
        seq = self.next_seq
        self.next_seq += 1
        self._pending.append(PendingEvent(seq, message, now + self._wait))
        return seq

    def acknowledge(self, up_to_seq: int, now: float) -> int:
        """Forget every event up to ``up_to_seq``; returns how many were forgotten."""
        forgotten = 0
        while self._pending and self._pending[0].seq <= up_to_seq:
            self._pending.popleft()
            forgotten += 1
        self.acknowledged = max(self.acknowledged, min(up_to_seq, self.next_seq - 1))
        if forgotten:
            self._restart(now)
        return forgotten

    def due(self, now: float) -> list[PendingEvent]:
        """The events to send again now; their next retransmission is scheduled."""
        ready = [event for event in self._pending if event.due <= now]
        if ready:
            self._wait = min(self._wait * 2, self._max)
            for event in ready:
                event.due = now + self._wait
        return ready

    def resend_all(self, now: float) -> list[PendingEvent]:
        """Every pending event, for a host that (re)connected; the timer starts again."""
        self._restart(now)
        return list(self._pending)

    def lose_all(self) -> int:
        lost = len(self._pending)
        self._pending.clear()
        return lost

    def _restart(self, now: float) -> None:
        self._wait = self._base
        for event in self._pending:
            event.due = now + self._wait

    @property
    def oldest_seq(self) -> int:
        """The oldest pending sequence number, or the next one when none is pending."""
        return self._pending[0].seq if self._pending else self.next_seq

    @property
    def last_seq(self) -> int:
        return self.next_seq - 1

    @property
    def full(self) -> bool:
        return len(self._pending) >= self.window

    def next_due(self) -> float | None:
        return min((event.due for event in self._pending), default=None)

    def __len__(self) -> int:
        return len(self._pending)

    def __iter__(self) -> Iterator[PendingEvent]:
        return iter(self._pending)
