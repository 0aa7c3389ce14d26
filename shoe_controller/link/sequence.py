"""The shoe's event numbering, turned into an exactly-once, in-order stream.

The shoe numbers its events from 1 and keeps counting across restarts (docs/protocol.md),
so a sequence number names one event for the life of the shoe. This module drops what
was delivered already, holds events that overtook one lost on the line until it is sent
again, reports events the shoe can no longer send, and tracks the acknowledgements.

Events reach the consumer numbered in the link's own sequence, which equals the shoe's
unless the shoe's numbering starts over (another shoe, or a shoe that does not keep its
counter): the link's numbers then go on increasing, so that an acknowledgement can never
name an event of the new numbering that the consumer has not seen. A shoe met before, in
this run or (by a :class:`ResumePoint`) in an earlier one, takes its own numbering up where
it stood (:meth:`EventSequencer.rejoin`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from firmware_protocol import Flags, Packet
from firmware_protocol.framing import MAX_SEQ
from shoe_controller.link.events import EventsLost, LinkEvent, LossReason, ShoeEvent
from shoe_controller.link.stats import LinkStats

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where a consumer left off with a shoe in an earlier run: the shoe (its model and
    serial number) and the shoe's own number (``ShoeEvent.shoe_seq``) of the last event
    the consumer made durable before it stopped."""

    model: str
    serial_number: str
    shoe_seq: int

    def __post_init__(self) -> None:
        if not isinstance(self.shoe_seq, int) or not 0 <= self.shoe_seq <= MAX_SEQ:
            raise ValueError(f"shoe_seq {self.shoe_seq!r} is not an event number (0..{MAX_SEQ})")


@dataclass(frozen=True, slots=True)
class Standing:
    """Where the link stood with one shoe when another answered: the newest event it
    delivered and the newest it acknowledged, in that shoe's numbering, and the link's
    number of an event minus the shoe's."""

    delivered: int
    acknowledged: int
    offset: int = 0

    @classmethod
    def resumed(cls, point: ResumePoint) -> Standing:
        """What an earlier run made durable counts as delivered and acknowledged."""
        return cls(point.shoe_seq, point.shoe_seq)


class EventSequencer:
    """Numbering state of one shoe; ``emit`` receives ShoeEvent and EventsLost."""

    def __init__(
        self, emit: Callable[[LinkEvent], None], reorder_window: int, stats: LinkStats
    ) -> None:
        self._emit = emit
        self.reorder_window = reorder_window
        self._stats = stats
        # In the shoe's numbering: the newest event delivered, the newest acknowledged.
        self._delivered: int | None = None
        self._acked = 0
        # link number = shoe number + _offset; link numbers up to _floor are of an
        # earlier numbering; _highest is the newest link number used.
        self._offset = 0
        self._floor = 0
        self._highest = 0
        #: The newest link number the consumer acknowledged, whatever numbering it was
        #: in: a shoe that comes back learns what of its own was made durable meanwhile.
        self._acked_link = 0
        self._reorder: dict[int, Packet] = {}
        # The shoe is owed an AckEvents of _acked; an event came past a gap (those before
        # it were lost on the line). The link takes each once: take_ack(), take_gap().
        self._ack_pending = False
        self._gap_seen = False

    # -- what the link knows -----------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._delivered is not None

    @property
    def delivered(self) -> int | None:
        """The newest event delivered, in the shoe's numbering (None before any Hello)."""
        return self._delivered

    @property
    def delivered_link_seq(self) -> int | None:
        """The newest event delivered, in the link's numbering (what ShoeEvent.seq says)."""
        return None if self._delivered is None else self._delivered + self._offset

    @property
    def acknowledged_link_seq(self) -> int:
        return self._acked + self._offset

    @property
    def acknowledged(self) -> int:
        """The newest event acknowledged, in the shoe's numbering (what AckEvents says)."""
        return self._acked

    def take_ack(self) -> int | None:
        """What AckEvents must tell the shoe now (the newest event acknowledged, in its
        numbering), or None when it was told already; once told, it is owed nothing."""
        if not self._ack_pending:
            return None
        self._ack_pending = False
        return self._acked

    def take_gap(self) -> bool:
        """Whether an event came past a gap since the link last asked."""
        seen, self._gap_seen = self._gap_seen, False
        return seen

    # -- numbering changes -------------------------------------------------------------

    def begin(self, oldest_held: int) -> None:
        """First contact: the shoe's numbering is taken as the link's."""
        self._delivered = self._acked = max(oldest_held, 1) - 1
        self._highest = self._floor = self._delivered
        self._offset = 0
        self._reorder.clear()

    def renumber(self, oldest_held: int) -> None:
        """The shoe's numbering starts over at ``oldest_held``; the link's goes on."""
        base = max(oldest_held, 1) - 1
        self._offset = self._highest - base
        self._floor = self._highest
        self._delivered = self._acked = base
        self._reorder.clear()
        self._ack_pending = False

    def standing(self) -> Standing:
        """Where this shoe stands, to take up again with :meth:`rejoin`."""
        assert self._delivered is not None
        return Standing(self._delivered, self._acked, self._offset)

    def rejoin(self, standing: Standing) -> None:
        """A shoe met before answers (after another shoe, or first in a run resuming an
        earlier one): its events up to ``standing.delivered`` were delivered, and what the
        consumer acknowledged since it left counts as acknowledged. The link's numbers go
        on increasing; call :meth:`resume` to report what the shoe no longer holds."""
        delivered = standing.delivered
        acked = standing.acknowledged
        if self._acked_link >= delivered + standing.offset:
            acked = delivered
        else:
            acked = max(acked, self._acked_link - standing.offset)
        if self.started:
            self._offset = self._highest - delivered
            self._floor = self._highest
        else:
            self._offset = 0
            self._floor = self._highest = delivered
        self._delivered, self._acked = delivered, acked
        self._reorder.clear()
        self._ack_pending = False

    def reset_detected(self, oldest_held: int) -> None:
        """The shoe's numbering went backwards: events since may have been taken for
        duplicates. Reported, then numbering goes on from ``oldest_held``."""
        following = self._highest + 1
        log.warning("the shoe's event numbering went backwards; numbering afresh")
        self._emit(EventsLost(following, following, "sequence_reset"))
        self.renumber(oldest_held)

    def resume(self, oldest_held: int, reason: LossReason) -> None:
        """The shoe holds events from ``oldest_held`` on (a Hello or a Heartbeat, in the
        same numbering): report what it no longer holds and we never received."""
        assert self._delivered is not None
        expected = self._delivered + 1
        if oldest_held > expected:
            self._lose(expected, oldest_held, reason)
        elif oldest_held <= self._acked:
            self._ack_pending = True  # it holds events we acknowledged: say so again

    def forget_reordered(self) -> None:
        self._reorder.clear()

    def connection_lost(self) -> None:
        """The link is lost. The events held past a gap are sent again, and what the shoe
        must hear is known again from its next Hello (:meth:`resume`)."""
        self._reorder.clear()
        self._ack_pending = False

    # -- events ------------------------------------------------------------------------

    def receive(self, packet: Packet) -> None:
        """One event frame from the shoe."""
        assert self._delivered is not None
        seq = packet.seq
        if seq <= self._delivered:
            self._stats.duplicate_events += 1
            if seq <= self._acked:
                self._ack_pending = True  # our AckEvents was lost
            return
        if seq != self._delivered + 1:
            # A frame before it was lost on the line; the shoe will send that one again.
            self._gap_seen = True
            if seq - self._delivered > self.reorder_window:
                self._stats.events_outside_window += 1
            elif seq not in self._reorder:
                self._stats.out_of_order_events += 1
                self._reorder[seq] = packet
            return
        self._deliver(packet)
        self._flush_reorder()

    def acknowledge(self, up_to_link_seq: int) -> None:
        """The consumer made events up to ``up_to_link_seq`` durable (cumulative)."""
        if self._delivered is None or up_to_link_seq > self._highest:
            raise ValueError(
                f"cannot acknowledge event {up_to_link_seq}: events were delivered up to "
                f"{self.delivered_link_seq}"
            )
        self._acked_link = max(self._acked_link, up_to_link_seq)
        if up_to_link_seq <= self._floor:
            # Numbered before the shoe's numbering started over: nothing to tell it.
            return
        seq = up_to_link_seq - self._offset
        if seq > self._acked:
            self._acked = seq
            self._ack_pending = True

    def _deliver(self, packet: Packet) -> None:
        self._delivered = packet.seq
        link_seq = packet.seq + self._offset
        self._highest = max(self._highest, link_seq)
        self._stats.events_delivered += 1
        retransmitted = Flags.RETRANSMIT in packet.flags
        self._emit(ShoeEvent(link_seq, packet.message, retransmitted, shoe_seq=packet.seq))

    def _flush_reorder(self) -> None:
        assert self._delivered is not None
        while (packet := self._reorder.pop(self._delivered + 1, None)) is not None:
            self._deliver(packet)
        for seq in [s for s in self._reorder if s <= self._delivered]:
            del self._reorder[seq]

    def _lose(self, expected: int, got: int, reason: LossReason) -> None:
        offset = self._offset
        log.warning("events %d..%d lost (%s)", expected + offset, got - 1 + offset, reason)
        self._stats.events_lost += got - expected
        self._emit(EventsLost(expected + offset, got + offset, reason))
        self._delivered = got - 1
        self._highest = max(self._highest, self._delivered + offset)
        self._flush_reorder()
