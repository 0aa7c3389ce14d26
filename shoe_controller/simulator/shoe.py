"""The simulated shoe: a sans-I/O model of the firmware, its card gate and its mechanism.

Feed it what the host sent with :meth:`SimulatedShoe.receive_data`, let time pass with
:meth:`SimulatedShoe.tick`, and take what it sends with :meth:`SimulatedShoe.data_to_send`.
It has no clock of its own: every call that may act passes ``now`` (seconds, any
monotonic origin). The first such call powers it on.

It speaks firmware_protocol as docs/protocol.md describes a shoe: Hello answers
GetIdentity; Ack or Nak answers other commands, except those with their own reply
(Counters, VerifyResult, SelfTestReport); every reply carries the RESPONSE flag and the
command's sequence number. Events carry the EVENT flag and their own sequence from 1, and
are sent again (RETRANSMIT flag) until a cumulative AckEvents covers them, with the
timeouts of firmware_protocol.timing. A command repeated with the sequence number and type
of the last one is answered again, not executed again (so a repeated SetGate cannot let
more cards out); GetIdentity is always answered afresh, and since a host opens every
connection with it, the shoe then sends every unacknowledged event again.

Unless its ``fast_recovery`` option is off, the shoe announces the FAST_RECOVERY capability:
it answers ResendEvents at once, times its retransmissions from the measured round trip,
and sends a 0x00 before every frame it sends again, so that a host holding the remains of
a frame whose delimiter the line damaged drops them at once.

The physical side (pull a card, open the door, press a button) is public for tests and is
what the :class:`~shoe_controller.simulator.croupier.VirtualCroupier` uses.
"""

from __future__ import annotations

import enum
import logging
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from firmware_protocol import (
    SUPPORTED_VERSIONS,
    UNREADABLE,
    Ack,
    AckEvents,
    Button,
    ButtonPressed,
    Capability,
    Card,
    CardDrawn,
    Counters,
    DeckLoaded,
    DeckRemoved,
    DecoderStats,
    DoorClosed,
    DoorOpened,
    DoubleCard,
    Flags,
    GateMode,
    GetCounters,
    GetIdentity,
    Heartbeat,
    Hello,
    Jam,
    JamCleared,
    Message,
    Nak,
    NakReason,
    Packet,
    Ping,
    ResendEvents,
    Reset,
    RunSelfTest,
    SelfTestReport,
    SetDisplay,
    SetGate,
    SetTestMode,
    ShoeEmpty,
    StreamDecoder,
    Unknown,
    Verify,
    VerifyResult,
    encode_frame,
)
from shoe_controller.simulator import firmware
from shoe_controller.simulator.croupier import VirtualCroupier
from shoe_controller.simulator.faults import CardFault, ScheduledFault
from shoe_controller.simulator.line import LineStats, ShoeLine
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.outbox import EventOutbox

log = logging.getLogger(__name__)

_UNSOLICITED_SEQ = 0
#: Sent before a frame sent again: ends whatever partial frame the host holds.
_DELIMITER = b"\x00"
_SELF_TEST_STEPS = (
    ("memory", "event memory and counters"),
    ("reader", "card reader optics"),
    ("gate", "gate motor and position sensor"),
    ("sensors", "door, jam and card-present sensors"),
)
_CAPABILITIES = (
    Capability.STUB_MODE
    | Capability.DOUBLE_DETECT
    | Capability.SEEDED_VERIFY
    | Capability.DISPLAY
    | Capability.SELF_TEST
    | Capability.TEST_MODE
)


class DrawKind(enum.StrEnum):
    #: Read and reported in a CardDrawn.
    READ = "read"
    #: Reported in a CardDrawn as unreadable ("??").
    MISREAD = "misread"
    #: Left with another card; the shoe reported DoubleCard and no identity.
    DOUBLE = "double"
    #: Left with another card unnoticed; the shoe reported nothing for it.
    UNSEEN = "unseen"


@dataclass(frozen=True, slots=True)
class DrawRecord:
    """One card that physically left the shoe: the simulator's ground truth."""

    #: Counted from 1 since the simulator started (what ``fault@N`` counts).
    number: int
    #: 1 for the first deck loaded, and so on.
    deck: int
    #: The draw index the shoe reported (0 for an unseen card).
    draw_index: int
    #: The card's true identity.
    card: Card
    #: The identity the shoe reported, None when it reported none.
    reported: Card | None
    gate_mode: GateMode
    kind: DrawKind
    #: The sequence number of the event that reported it, None when none did.
    seq: int | None


@dataclass(slots=True)
class LifetimeCounters:
    cards_read: int = 0
    misreads: int = 0
    jams: int = 0
    door_openings: int = 0
    power_cycles: int = 0


class SimulatedShoe:
    def __init__(self, options: SimOptions | None = None, rng: random.Random | None = None):
        self.options = options = options or SimOptions()
        base = rng if rng is not None else random.Random(options.seed)
        # Separate streams, so that a line fault never changes the shuffle.
        deck_rng = random.Random(base.getrandbits(64))
        self._reader_rng = random.Random(base.getrandbits(64))
        self._boot_rng = random.Random(base.getrandbits(64))
        self._line = ShoeLine(options.faults.line, random.Random(base.getrandbits(64)))
        self._croupier = VirtualCroupier(options, deck_rng)
        self._outbox = EventOutbox(
            options.retransmit,
            options.retransmit_max,
            options.window,
            adaptive=options.fast_recovery,
        )
        self._decoder = StreamDecoder()
        self.counters = LifetimeCounters()
        self._now = 0.0
        self._booted = False
        self.boot_id = 0
        self._boot_time = 0.0
        self._heartbeat_due = 0.0
        self._silent_until: float | None = None
        self._link_drop_pending = False
        self._fired: set[ScheduledFault] = set()
        self._last_command: tuple[int, int, list[Message]] | None = None
        #: Gate-opening SetGate commands still to be answered with Nak(BUSY).
        self.busy_left = options.busy
        # Firmware state.
        self.gate = GateMode.LOCKED
        #: Cards the gate still lets out before it locks by itself; None: no limit.
        self.gate_limit_left: int | None = None
        self.test_mode = False
        self.display = ""
        # Physical state.
        self._cards: deque[Card] = deque()
        self.deck_present = False
        self.deck_number = 0
        self.draw_index = 0
        self.cards_pulled = 0
        self.door_open = False
        self.door_opened_at = 0.0
        self.jammed = False
        self.jammed_at = 0.0
        # The record, for tests and diagnostics.
        self.draws: list[DrawRecord] = []
        #: Every event ever issued, as (seq, message), including those lost in a reboot.
        self.events: list[tuple[int, Message]] = []
        self.link_drops = 0
        self.reboots = 0
        #: Events sent again because their retransmission timeout passed, events sent
        #: again at the host's request, and the ResendEvents requests received.
        self.timer_retransmissions = 0
        self.resent_on_request = 0
        self.resend_requests = 0
        #: Bytes from the host ignored while the shoe was silent.
        self.ignored_bytes = 0

    # --- the host side -----------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> None:
        self._set_time(now)
        if self.stalled:
            self._resume_if_due()
        if self.stalled:
            self.ignored_bytes += len(data)
            return
        self._decoder.receive_data(data)
        for packet in self._decoder:
            self._handle(packet)
        self._run()

    def tick(self, now: float) -> None:
        self._set_time(now)
        self._run()

    def data_to_send(self) -> bytes:
        """What the shoe has put on the wire since the last call (one segment of it when a
        ``split`` fault cut a frame)."""
        return self._line.take()

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do (None: only when the host sends)."""
        if not self._booted:
            return self._now
        if self._silent_until is not None:
            return self._silent_until
        times = [self._heartbeat_due]
        outbox_due = self._outbox.next_due()
        if outbox_due is not None:
            times.append(outbox_due)
        croupier_due = self._croupier.next_deadline(self)
        if croupier_due is not None:
            times.append(croupier_due)
        return min(times)

    def take_link_drop(self) -> bool:
        """True once after a ``disconnect`` fault: the front end must drop the link."""
        pending, self._link_drop_pending = self._link_drop_pending, False
        return pending

    # --- inspection --------------------------------------------------------------------

    @property
    def now(self) -> float:
        return self._now

    @property
    def stalled(self) -> bool:
        """True while a ``silent`` fault holds the firmware."""
        return self._silent_until is not None

    @property
    def unacked(self) -> list[int]:
        return [event.seq for event in self._outbox]

    @property
    def acknowledged(self) -> int:
        return self._outbox.acknowledged

    @property
    def last_event_seq(self) -> int:
        return self._outbox.last_seq

    @property
    def cards_left(self) -> int:
        return len(self._cards)

    @property
    def next_card_number(self) -> int:
        return self.cards_pulled + 1

    @property
    def gate_allows(self) -> bool:
        """Whether the gate lets the next card out (it also closes while the window of
        unacknowledged events is full)."""
        return (
            self.gate is not GateMode.LOCKED
            and (self.gate_limit_left is None or self.gate_limit_left > 0)
            and not self._outbox.full
        )

    @property
    def host_stats(self) -> DecoderStats:
        """What the shoe's decoder made of the host's bytes."""
        return self._decoder.stats

    @property
    def line_stats(self) -> LineStats:
        return self._line.stats

    @property
    def decks_loaded(self) -> int:
        return self._croupier.decks_loaded

    @property
    def retransmit_timeout(self) -> float:
        """The wait before an unacknowledged event is sent again, as it stands now."""
        return self._outbox.timer.timeout

    def identity(self) -> Hello:
        capabilities = _CAPABILITIES
        if self.options.persist:
            capabilities |= Capability.PERSISTENT_EVENTS
        if self.options.fast_recovery:
            capabilities |= Capability.FAST_RECOVERY
        return Hello(
            SUPPORTED_VERSIONS,
            self.options.model,
            self.options.serial_number,
            firmware.HARDWARE_REVISION,
            firmware.FIRMWARE_VERSION,
            firmware.DIGEST,
            int(capabilities),
            self.boot_id,
            self._outbox.oldest_seq,
        )

    def fault_pending(self, kind: CardFault, card: int) -> bool:
        scheduled = self.options.faults.scheduled
        if not scheduled:
            return False  # asked several times a card: spare building the fault to look for
        fault = ScheduledFault(kind, card)
        return fault in scheduled and fault not in self._fired

    # --- the physical side -------------------------------------------------------------

    def load_deck(self, cards: Sequence[Card]) -> None:
        """The croupier places ``cards`` in the shoe (first card out first), door closed."""
        self._ensure_booted()
        if self._cards:
            self.remove_deck()
        self._cards = deque(cards)
        self.deck_present = bool(self._cards)
        self.deck_number += 1
        self.draw_index = 0
        self._emit_event(DeckLoaded())

    def remove_deck(self) -> None:
        self._ensure_booted()
        self._cards.clear()
        self.deck_present = False
        self._emit_event(DeckRemoved())

    def pull_card(self, force: bool = False) -> bool:
        """The croupier pulls the next card; ``force`` pulls it past a locked gate.

        Returns whether any card left the shoe. Card faults of the plan apply here.
        """
        self._ensure_booted()
        if not self._cards or self.door_open or self.jammed or self.stalled:
            return False
        if not force and not self.gate_allows:
            return False
        number = self.next_card_number
        if self._take_fault(CardFault.JAM, number):
            self.jam()
            return False
        if force:
            self._take_fault(CardFault.EARLY_DRAW, number)
        mode = self.gate
        if len(self._cards) >= 2 and self._take_fault(CardFault.DOUBLE_DETECTED, number):
            self._pull_detected_double(mode)
        else:
            unseen = len(self._cards) >= 2 and self._take_fault(CardFault.DOUBLE, number)
            self._pull_one(mode, misread=self._take_fault(CardFault.MISREAD, number))
            if unseen:
                self._pull_unseen(mode)
        if not self._cards:
            self.deck_present = False
            self._emit_event(ShoeEmpty(self.draw_index))
        for card_number in range(number, self.cards_pulled + 1):
            self._after_card(card_number)
        return True

    def open_door(self) -> None:
        self._ensure_booted()
        if not self.door_open:
            self.door_open = True
            self.door_opened_at = self._now
            self.counters.door_openings += 1
            self._emit_event(DoorOpened())

    def close_door(self) -> None:
        self._ensure_booted()
        if self.door_open:
            self.door_open = False
            self._emit_event(DoorClosed())

    def jam(self) -> None:
        self._ensure_booted()
        if not self.jammed:
            self.jammed = True
            self.jammed_at = self._now
            self.counters.jams += 1
            self._emit_event(Jam())

    def clear_jam(self) -> None:
        self._ensure_booted()
        if self.jammed:
            self.jammed = False
            # The simulated mechanism holds a jammed card back: none leaves unread.
            self._emit_event(JamCleared(False))

    def press(self, button: Button) -> None:
        self._ensure_booted()
        self._emit_event(ButtonPressed(button))

    def reboot(self, lose_wire: bool = True) -> None:
        """Restart the firmware: a new boot id, the gate locked, a Hello. Unacknowledged
        events survive when ``persist`` is set, else they are lost (their sequence numbers
        are not reused, so the host sees the gap)."""
        self._ensure_booted()
        if lose_wire:
            self._line.clear()
        lost = 0 if self.options.persist else self._outbox.lose_all()
        self.reboots += 1
        log.info("simulated shoe reboots (%d unacknowledged events lost)", lost)
        self._boot()

    def drop_link(self) -> None:
        """The link to the host drops; what was on the wire is lost."""
        self._ensure_booted()
        self.link_drops += 1
        self._link_drop_pending = True
        self._line.clear()
        self._decoder = StreamDecoder()
        log.info("simulated shoe drops its link")

    def go_silent(self, seconds: float) -> None:
        """Hold the firmware for ``seconds``: nothing sent, nothing heard, no card out."""
        self._ensure_booted()
        self._silent_until = self._now + seconds
        log.info("simulated shoe goes silent for %g s", seconds)

    # --- internals ---------------------------------------------------------------------

    def _set_time(self, now: float) -> None:
        # Never let time run backwards, whatever clock the caller uses.
        self._now = max(self._now, now) if self._booted else now
        self._ensure_booted()

    def _ensure_booted(self) -> None:
        if not self._booted:
            self._booted = True
            self._boot()

    def _boot(self) -> None:
        previous = self.boot_id
        while self.boot_id in (0, previous):
            self.boot_id = self._boot_rng.getrandbits(32)
        self.counters.power_cycles += 1
        self._boot_time = self._now
        self._heartbeat_due = self._now + self.options.heartbeat
        self._silent_until = None
        self._last_command = None
        self._decoder = StreamDecoder()
        self.gate = GateMode.LOCKED
        self.gate_limit_left = None
        self.test_mode = False
        self._transmit(encode_frame(self.identity(), _UNSOLICITED_SEQ))
        self._resend_all()

    def _run(self) -> None:
        if self.stalled:
            self._resume_if_due()
            if self.stalled:
                return
        self._croupier.step(self, self._now)
        if self.stalled:
            return
        due = self._outbox.due(self._now)
        self.timer_retransmissions += len(due)
        for event in due:
            self._retransmit(event.message, event.seq)
        if self._now >= self._heartbeat_due:
            self._send_heartbeat()

    def _resume_if_due(self) -> None:
        if self._silent_until is not None and self._now >= self._silent_until:
            self._silent_until = None
            self._heartbeat_due = self._now
            log.info("simulated shoe speaks again")

    def _send_heartbeat(self) -> None:
        uptime_ms = int((self._now - self._boot_time) * 1000) & 0xFFFFFFFF
        unacked = min(len(self._outbox), 0xFFFF)
        message = Heartbeat(uptime_ms, unacked, self._outbox.last_seq)
        self._transmit(encode_frame(message, _UNSOLICITED_SEQ))
        # Keep the period even when ticks come late, without bursts after a long gap.
        self._heartbeat_due = max(
            self._heartbeat_due + self.options.heartbeat, self._now + self.options.heartbeat / 2
        )

    def _transmit(self, frame: bytes) -> None:
        if not self.stalled:
            self._line.send(frame)

    def _emit_event(self, message: Message) -> int:
        seq = self._outbox.add(message, self._now)
        self.events.append((seq, message))
        self._transmit(encode_frame(message, seq))
        return seq

    def _resend_all(self) -> None:
        for event in self._outbox.resend_all(self._now):
            self._retransmit(event.message, event.seq)

    def _retransmit(self, message: Message, seq: int) -> None:
        frame = encode_frame(message, seq, Flags.RETRANSMIT)
        self._transmit(_DELIMITER + frame if self.options.fast_recovery else frame)

    def _take_fault(self, kind: CardFault, card: int) -> bool:
        if not self.fault_pending(kind, card):
            return False
        self._fired.add(ScheduledFault(kind, card))
        log.info("simulated fault %s@%d", kind, card)
        return True

    def _pull_one(self, mode: GateMode, misread: bool) -> None:
        card = self._cards.popleft()
        self.cards_pulled += 1
        self.counters.cards_read += 1
        self.draw_index += 1
        if misread:
            self.counters.misreads += 1
            reported, quality, kind = UNREADABLE, 0, DrawKind.MISREAD
        else:
            reported, quality, kind = card, self._reader_rng.randint(90, 100), DrawKind.READ
        seq = self._emit_event(CardDrawn(self.draw_index, reported, mode, quality))
        self._record(card, reported, mode, kind, seq=seq)
        self._count_against_limit(1)

    def _pull_unseen(self, mode: GateMode) -> None:
        card = self._cards.popleft()
        self.cards_pulled += 1
        self._record(card, None, mode, DrawKind.UNSEEN, seq=None, draw_index=0)

    def _pull_detected_double(self, mode: GateMode) -> None:
        first_index = self.draw_index + 1
        seq = self._emit_event(DoubleCard(first_index))
        for _ in range(2):
            card = self._cards.popleft()
            self.cards_pulled += 1
            self.counters.cards_read += 1
            self.draw_index += 1
            self._record(card, None, mode, DrawKind.DOUBLE, seq=seq)
        self._count_against_limit(2)

    def _record(
        self,
        card: Card,
        reported: Card | None,
        mode: GateMode,
        kind: DrawKind,
        *,
        seq: int | None,
        draw_index: int | None = None,
    ) -> None:
        index = self.draw_index if draw_index is None else draw_index
        record = DrawRecord(
            self.cards_pulled, self.deck_number, index, card, reported, mode, kind, seq
        )
        self.draws.append(record)

    def _count_against_limit(self, cards: int) -> None:
        if self.gate is GateMode.LOCKED or self.gate_limit_left is None:
            return
        self.gate_limit_left = max(0, self.gate_limit_left - cards)
        if self.gate_limit_left == 0:
            self.gate = GateMode.LOCKED
            self.gate_limit_left = None

    def _after_card(self, number: int) -> None:
        if self._take_fault(CardFault.DOOR, number):
            self.open_door()
        if self._take_fault(CardFault.DISCONNECT, number):
            self.drop_link()
        if self._take_fault(CardFault.REBOOT, number):
            self.reboot()
        if self._take_fault(CardFault.SILENT, number):
            self.go_silent(self.options.silent_for)

    # --- commands ----------------------------------------------------------------------

    def _handle(self, packet: Packet) -> None:
        message = packet.message
        if isinstance(message, AckEvents):
            self._outbox.acknowledge(message.up_to_seq, self._now)
            return
        if isinstance(message, ResendEvents) and self.options.fast_recovery:
            # Not answered, and it acknowledges nothing: the events asked for go out now.
            self.resend_requests += 1
            asked = self._outbox.resend_from(message.from_seq, self._now)
            self.resent_on_request += len(asked)
            for event in asked:
                self._retransmit(event.message, event.seq)
            return
        if isinstance(message, Unknown | ResendEvents) or message.FROM_SHOE:
            # A shoe without FAST_RECOVERY does not know ResendEvents: an unknown type.
            name = type(message).__name__
            self._reply(packet.seq, [Nak(NakReason.UNKNOWN_COMMAND, f"{name} is no command")])
            return
        if isinstance(message, GetIdentity):
            # Answered whatever version the host speaks: Hello lists the shoe's versions,
            # and the host picks one (the decoder passes the handshake in any version).
            self._last_command = None
            self._reply(packet.seq, [self.identity()])
            # A host opens every connection with GetIdentity: give it what it missed.
            self._resend_all()
            return
        last = self._last_command
        if last is not None and last[:2] == (packet.seq, message.TYPE):
            self._reply(packet.seq, last[2], Flags.RETRANSMIT)
            return
        replies = self._execute(message)
        self._last_command = (packet.seq, message.TYPE, replies)
        self._reply(packet.seq, replies)
        if isinstance(message, Reset):
            # The Ack leaves before the restart.
            self.reboot(lose_wire=False)

    def _reply(self, seq: int, replies: list[Message], flags: Flags = Flags.NONE) -> None:
        for reply in replies:
            self._transmit(encode_frame(reply, seq, Flags.RESPONSE | flags))

    def _execute(self, message: Message) -> list[Message]:
        if isinstance(message, Ping | Reset):
            return [Ack()]
        if isinstance(message, SetGate):
            return [self._set_gate(message)]
        if isinstance(message, SetDisplay):
            self.display = message.text
            return [Ack()]
        if isinstance(message, RunSelfTest):
            total = len(_SELF_TEST_STEPS)
            return [
                SelfTestReport(step, total, name, True, detail)
                for step, (name, detail) in enumerate(_SELF_TEST_STEPS, start=1)
            ]
        if isinstance(message, GetCounters):
            c = self.counters
            return [Counters(c.cards_read, c.misreads, c.jams, c.door_openings, c.power_cycles)]
        if isinstance(message, Verify):
            return [self._verify(message.seed)]
        if isinstance(message, SetTestMode):
            return [self._set_test_mode(message.enabled)]
        return [Nak(NakReason.UNKNOWN_COMMAND, f"{type(message).__name__} is not supported")]

    def _set_gate(self, command: SetGate) -> Message:
        if command.mode is GateMode.LOCKED:
            self.gate = GateMode.LOCKED
            self.gate_limit_left = None
            return Ack()
        if self.busy_left:
            self.busy_left -= 1
            return Nak(NakReason.BUSY, "the gate is still moving")
        if self.door_open:
            return Nak(NakReason.NOT_NOW, "the door is open")
        if self.jammed:
            return Nak(NakReason.NOT_NOW, "the shoe is jammed")
        if command.limit and command.limit <= self.draw_index:
            # The limit is a draw index: cards up to it have left already, so the gate
            # stays locked. Sending the same command again never lets more out.
            self.gate = GateMode.LOCKED
            self.gate_limit_left = None
            return Ack()
        self.gate = command.mode
        self.gate_limit_left = command.limit - self.draw_index if command.limit else None
        return Ack()

    def _verify(self, seed: bytes) -> Message:
        if not firmware.VERIFY_SEED_MIN <= len(seed) <= firmware.VERIFY_SEED_MAX:
            return Nak(
                NakReason.BAD_ARGUMENT,
                f"seed of {len(seed)} bytes; use {firmware.VERIFY_SEED_MIN}.."
                f"{firmware.VERIFY_SEED_MAX}",
            )
        return VerifyResult(seed, firmware.keyed_digest(seed))

    def _set_test_mode(self, enabled: bool) -> Message:
        dealing = self.gate is not GateMode.LOCKED or (self.deck_present and self.draw_index > 0)
        if enabled and dealing:
            return Nak(NakReason.NOT_NOW, "a deck is being dealt")
        self.test_mode = enabled
        return Ack()
