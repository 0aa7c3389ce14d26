"""Events the shoe has sent and the host has not yet acknowledged.

Each event gets the next sequence number (from 1) and stays here until a cumulative
AckEvents covers it. An event is sent again when its retransmit time passes; every round
of retransmission doubles the wait up to a maximum (firmware_protocol.timing).

Without FAST_RECOVERY the wait starts at a fixed value, and an acknowledgement that makes
progress brings it back there. With it, the wait is timed from the round trip measured
from each event's first send to the acknowledgement that covers it
(:class:`~firmware_protocol.rtt.RetransmitTimer`, RFC 6298), and the host may ask for the
events from a number on at once (:meth:`EventOutbox.resend_from`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from firmware_protocol import Message
from firmware_protocol.rtt import RetransmitTimer
from firmware_protocol.timing import RETRANSMIT_TIMEOUT_MIN


@dataclass(slots=True)
class PendingEvent:
    seq: int
    message: Message
    #: When it is sent again unless acknowledged first.
    due: float
    #: When it was first sent; None once it was sent again, since an acknowledgement
    #: may then answer either send (no round trip is measured from it).
    sent_at: float | None = None


class EventOutbox:
    def __init__(
        self, retransmit: float, retransmit_max: float, window: int, *, adaptive: bool = False
    ) -> None:
        self.timer = RetransmitTimer(
            retransmit, min(RETRANSMIT_TIMEOUT_MIN, retransmit_max), retransmit_max
        )
        self.adaptive = adaptive
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
        self._pending.append(PendingEvent(seq, message, now + self.timer.timeout, now))
        return seq

    def acknowledge(self, up_to_seq: int, now: float) -> int:
        """Forget every event up to ``up_to_seq``; returns how many were forgotten."""
        forgotten = 0
        measured: float | None = None
        while self._pending and self._pending[0].seq <= up_to_seq:
            event = self._pending.popleft()
            forgotten += 1
            if measured is None and event.sent_at is not None:
                # The oldest event sent once: its round trip includes the time the host
                # took to make the batch durable, which the timeout must cover.
                measured = now - event.sent_at
        self.acknowledged = max(self.acknowledged, min(up_to_seq, self.next_seq - 1))
        if forgotten:
            if not self.adaptive:
                self.timer.restart()
            elif measured is not None:
                self.timer.measure(measured)
            # Else every event covered had been sent again: the timeout stays backed off
            # until a round trip can be measured (Karn's algorithm).
            self._reschedule(now)
        return forgotten

    def due(self, now: float) -> list[PendingEvent]:
        """The events to send again now; their next retransmission is scheduled."""
        ready = [event for event in self._pending if event.due <= now]
        if ready:
            wait = self.timer.back_off()
            for event in ready:
                event.due = now + wait
                event.sent_at = None
        return ready

    def resend_from(self, from_seq: int, now: float) -> list[PendingEvent]:
        """The events numbered ``from_seq`` or above, which the host asked for; sent again
        now, their timeout starts again (not backed off: nothing timed out)."""
        asked = [event for event in self._pending if event.seq >= from_seq]
        for event in asked:
            event.due = now + self.timer.timeout
            event.sent_at = None
        return asked

    def resend_all(self, now: float) -> list[PendingEvent]:
        """Every pending event, for a host that (re)connected; the timer starts again."""
        self.timer.restart()
        for event in self._pending:
            event.sent_at = None
        self._reschedule(now)
        return list(self._pending)

    def lose_all(self) -> int:
        lost = len(self._pending)
        self._pending.clear()
        return lost

    def _reschedule(self, now: float) -> None:
        wait = self.timer.timeout
        for event in self._pending:
            event.due = now + wait

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
