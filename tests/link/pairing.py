"""A link core and a simulated shoe joined in one thread, on a virtual clock.

Both sides are sans-I/O, so the whole conversation runs without threads or sleeps: time
jumps to the next deadline of either side whenever neither has anything to do. The
consumer is a minimal table: it keeps the gate open while a deck is in the shoe, closes it
when the shoe is empty (so that the virtual croupier loads the next deck), and
acknowledges what it received in batches, as a journal commit would. With a
``gate_window`` it deals as the table controller does (rule F5): it acknowledges each card
at once and moves the gate's limit that many cards past it, so that every card waits for
the previous one's acknowledgement; no virtual time passes then but what the link waits
for, and the card gaps (:meth:`Pairing.card_gaps`) are the link's recovery alone.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from firmware_protocol import CardDrawn, DeckLoaded, GateMode, Message, SetGate, ShoeEmpty
from shoe_controller.link.core import LinkCore, LinkState
from shoe_controller.link.events import (
    CommandFailed,
    Connected,
    EventsLost,
    LinkDown,
    LinkEvent,
    ShoeEvent,
)
from shoe_controller.simulator import DrawKind, SimOptions, SimulatedShoe

#: Longest run of virtual time without a card drawn before the pairing gives up.
STUCK_AFTER = 120.0


@dataclass
class Pairing:
    options: SimOptions
    #: Acknowledge after this many events delivered (and at every quiet moment).
    ack_batch: int = 8
    core: LinkCore = field(default_factory=LinkCore)
    now: float = 0.0
    delivered: list[ShoeEvent] = field(default_factory=list)
    lost: list[EventsLost] = field(default_factory=list)
    downs: list[LinkDown] = field(default_factory=list)
    connections: list[Connected] = field(default_factory=list)
    #: The shoe to talk to; a new one made from ``options`` when None.
    given_shoe: SimulatedShoe | None = None
    #: Keep the gate open from the start (a consumer resuming in the middle of a deck).
    dealing: bool = False
    #: Acknowledge nothing beyond this sequence number (a consumer that stops before it
    #: tells the shoe what it made durable).
    ack_limit: int | None = None
    #: Deal with the gate's window (F5): each card acknowledged at once, the limit moved.
    gate_window: int | None = None
    #: When each card was delivered (virtual time), with the deck it came from.
    card_times: list[tuple[int, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.shoe = self.given_shoe or SimulatedShoe(self.options)
        self._gate = GateMode.DEAL if self.dealing else GateMode.LOCKED
        self._limit = 0
        self._gate_sent: tuple[GateMode, int] | None = None
        self._decks = 0
        self._unacked = 0
        self._closing = False
        self.core.start(self.now)

    # -- the run ---------------------------------------------------------------------

    def run_until_cards(self, cards: int) -> None:
        """Run until the shoe has drawn ``cards`` cards, then until all is delivered."""
        last_progress, drawn = self.now, len(self.shoe.draws)
        while len(self.shoe.draws) < cards:
            self.step()
            if len(self.shoe.draws) != drawn:
                last_progress, drawn = self.now, len(self.shoe.draws)
            assert self.now - last_progress < STUCK_AFTER, "no card drawn for too long"
        self.settle()

    def settle(self) -> None:
        """Lock the gate and run until the shoe holds no unacknowledged event."""
        self._closing = True
        self._gate = GateMode.LOCKED
        start = self.now
        while (
            self.shoe.unacked
            or self.shoe.gate is not GateMode.LOCKED
            or self.core.state is not LinkState.CONNECTED
            or self.core.delivered_shoe_seq != self.shoe.last_event_seq
        ):
            self.step()
            assert self.now - start < STUCK_AFTER, "the shoe kept unacknowledged events"
        self.step()

    def step(self) -> None:
        """Exchange what is due now; when nothing was, let time jump to the next deadline."""
        if self._exchange():
            return
        deadlines = [d for d in (self.core.next_deadline(), self.shoe.next_deadline()) if d]
        self.now = max(min(deadlines, default=self.now + 1.0), self.now + 1e-4)
        self.shoe.tick(self.now)
        self.core.tick(self.now)

    def _exchange(self) -> bool:
        busy = False
        if self.core.state is LinkState.DOWN:
            self.core.start(self.now)  # reconnect at once
        if out := self.core.data_to_send():
            self.shoe.receive_data(out, self.now)
            busy = True
        self.shoe.tick(self.now)
        while segment := self.shoe.data_to_send():
            self.core.receive_data(segment, self.now)
            busy = True
        if self.shoe.take_link_drop():
            self.core.connection_lost("the cable was pulled", self.now)
            busy = True
        while (event := self.core.next_event()) is not None:
            self._consume(event)
            busy = True
        if self._unacked and (
            self._unacked >= self.ack_batch or not busy or self.gate_window is not None
        ):
            self._acknowledge()
            busy = True
        wanted = (self._gate, self._limit if self._gate is GateMode.DEAL else 0)
        if self.core.state is LinkState.CONNECTED and self._gate_sent != wanted:
            self._gate_sent = wanted
            self.core.send_command(SetGate(*wanted), self.now)
            busy = True
        return busy

    def _consume(self, event: LinkEvent) -> None:
        if isinstance(event, ShoeEvent):
            self.delivered.append(event)
            self._unacked += 1
            message = event.message
            if isinstance(message, DeckLoaded):
                self._decks += 1
                if not self._closing:
                    self._gate = GateMode.DEAL
                    self._limit = self.gate_window or 0
            elif isinstance(message, ShoeEmpty):
                self._gate = GateMode.LOCKED
            elif isinstance(message, CardDrawn):
                self.card_times.append((self._decks, self.now))
                if self.gate_window is not None:
                    self._limit = message.draw_index + self.gate_window
        elif isinstance(event, EventsLost):
            self.lost.append(event)
            if self.gate_window is not None:
                # The draw index of the cards lost is unknown: let the next card out, and
                # limit the gate again from its index.
                self._limit = 0
        elif isinstance(event, LinkDown):
            self.downs.append(event)
            self._gate_sent = None
        elif isinstance(event, Connected):
            self.connections.append(event)
            self._gate_sent = None  # a restarted shoe has its gate locked
        elif isinstance(event, CommandFailed) and event.reason != "superseded":
            self._gate_sent = None  # send it again (one superseded gave way to a later one)

    def _acknowledge(self) -> None:
        seq = self.delivered[-1].seq
        if self.ack_limit is not None:
            seq = min(seq, self.ack_limit)
        self.core.acknowledge(seq, self.now)
        self._unacked = 0

    def run_until_drawn(self, cards: int) -> None:
        """Run until the shoe has drawn ``cards`` cards, and stop there (no settling)."""
        start = self.now
        while len(self.shoe.draws) < cards:
            self.step()
            assert self.now - start < STUCK_AFTER, "no card drawn for too long"

    # -- the checks ------------------------------------------------------------------

    def card_gaps(self) -> list[float]:
        """The virtual time between consecutive cards of each deck."""
        return [
            later - earlier
            for (deck, earlier), (next_deck, later) in itertools.pairwise(self.card_times)
            if deck == next_deck
        ]

    def delivered_pairs(self) -> list[tuple[int, Message]]:
        return [(e.seq, e.message) for e in self.delivered]

    def lost_seqs(self) -> set[int]:
        return {s for e in self.lost for s in range(e.expected_seq, e.got_seq)}

    def cards_delivered(self) -> list[CardDrawn]:
        return [e.message for e in self.delivered if isinstance(e.message, CardDrawn)]

    def cards_reported_by_the_shoe(self) -> list[CardDrawn]:
        """The shoe's own record: every card it reported, in order."""
        by_seq = dict(self.shoe.events)
        return [
            by_seq[d.seq]  # type: ignore[misc]
            for d in self.shoe.draws
            if d.kind in (DrawKind.READ, DrawKind.MISREAD) and d.seq is not None
        ]
