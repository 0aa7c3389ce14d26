"""The conversation with the shoe, without I/O: bytes and time in, bytes and events out.

The caller owns the transport and the clock. It calls :meth:`LinkCore.start` when a
transport is open, feeds what it reads to :meth:`LinkCore.receive_data`, calls
:meth:`LinkCore.tick` at least by :meth:`LinkCore.next_deadline`, writes
:meth:`LinkCore.data_to_send`, and takes events from :meth:`LinkCore.next_event` until it
returns None. Every call takes ``now``, a monotonic time in seconds.

Guarantees to the consumer:

- Each event the shoe issues is delivered once, in sequence order, as :class:`ShoeEvent`;
  duplicates (retransmissions, replays after a reconnect) are dropped. Events the shoe can
  no longer send are reported as :class:`EventsLost`, never skipped silently.
- The shoe is told an event is durable only by :meth:`LinkCore.acknowledge`, cumulatively.
- Commands go out one at a time, in order; each ends in exactly one
  :class:`CommandCompleted` or :class:`CommandFailed`. A ``SetGate`` still waiting to go
  out when a later one is given is not sent: the gate is set as the later one says.
- Whatever the shoe sends (garbage, protocol violations) never raises: it is dropped and
  counted in :attr:`LinkCore.stats`. Misuse by the caller raises ValueError or
  RuntimeError.

With a shoe that announces the FAST_RECOVERY capability, a lost or damaged frame costs a
round trip rather than a timer (docs/protocol.md 8 and 9): a frame that fails its checks, an
event numbered past a gap, or a Heartbeat numbering an event that never came makes the
core ask for the missing events (ResendEvents, at most one per RESEND_REQUEST_INTERVAL),
and a damaged frame sends the command awaiting its reply again at once; the command
timeout follows the measured round trip (RFC 6298) and a command fails after
COMMAND_GIVE_UP without a reply; GetIdentity and Reset keep the fixed timeouts. With any
other shoe the core times everything as the protocol's first release did.

The event sequence state (what was delivered, what was acknowledged, the shoe's boot id)
survives :meth:`LinkCore.connection_lost` and a new :meth:`LinkCore.start`, so that one
core serves every reconnection to the same shoe.

A shoe met for the first time is numbered afresh. When another shoe answers, the link
remembers where it stood with the one that left; if that one comes back, whatever its boot
id, its events up to there count as delivered (and as acknowledged, as far as the consumer
acknowledged them meanwhile): those it sends again are dropped, never delivered twice.
Across a restart of the consumer, a :class:`ResumePoint` says the same of a shoe (one
for each shoe the consumer holds events of): its identity and the shoe's own number of the
last event made durable. As after a restart of
the shoe, a shoe taken up again is connected only once its first Heartbeat shows whether
its numbering went on (the link is CONFIRMING meanwhile); events it no longer holds are
reported lost, and a numbering that started over is reported and delivered in full.
"""

from __future__ import annotations

import enum
import logging
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field, fields

from firmware_protocol import (
    MAX_PAYLOAD,
    SUPPORTED_VERSIONS,
    Ack,
    AckEvents,
    Capability,
    DecoderStats,
    Flags,
    GetIdentity,
    Heartbeat,
    Hello,
    Message,
    Nak,
    NakReason,
    Packet,
    ResendEvents,
    Reset,
    RetransmitTimer,
    SetGate,
    StreamDecoder,
    Unknown,
    encode_frame,
    negotiate_version,
)
from firmware_protocol.framing import MAX_SEQ
from firmware_protocol.timing import (
    BUSY_RETRY_DELAY,
    COMMAND_ATTEMPTS,
    COMMAND_TIMEOUT,
    COMMAND_TIMEOUT_MAX,
    COMMAND_TIMEOUT_MIN,
    MAX_UNACKED_EVENTS,
    RESEND_REQUEST_INTERVAL,
    SILENCE_LIMIT,
)
from shoe_controller.link.events import (
    CommandCompleted,
    CommandFailed,
    CommandFailure,
    CommandHandle,
    Connected,
    DownReason,
    LinkDown,
    LinkEvent,
    ProtocolMismatch,
    ShoeReport,
)
from shoe_controller.link.identity import ShoeIdentity
from shoe_controller.link.sequence import EventSequencer, ResumePoint, Standing
from shoe_controller.link.stats import LinkStats

__all__ = [
    "COMMAND_TIMEOUT_MAX",
    "HANDSHAKE_TIMEOUT",
    "UNSEQUENCED",
    "LinkCore",
    "LinkState",
]

log = logging.getLogger(__name__)

#: How long the link asks a shoe that sends frames, but no Hello, who it is (seconds).
HANDSHAKE_TIMEOUT = 15.0
#: Sequence number carried by host frames that are not commands (AckEvents).
UNSEQUENCED = 0
#: An uptime above this that goes back has wrapped around (one minute before 2**32 ms).
_UPTIME_WRAPS_AFTER = 2**32 - 60_000
#: How many recently completed commands are remembered to recognise late duplicate replies.
_RECENT_REPLIES = 32


class LinkState(enum.Enum):
    IDLE = "idle"
    """Not started yet: call start() once a transport is open."""
    HANDSHAKING = "handshaking"
    """GetIdentity sent, waiting for the shoe's Hello."""
    CONFIRMING = "confirming"
    """A Hello came from a shoe that restarted, or from a shoe met before taken up again:
    its events are held and commands refused until its first Heartbeat shows whether its
    numbering went on."""
    CONNECTED = "connected"
    """Identity known, version agreed: events flow and commands may be sent."""
    INCOMPATIBLE = "incompatible"
    """The shoe speaks no version we speak; only a new Hello can change that."""
    DOWN = "down"
    """The link was lost; call start() on a new transport to reconnect."""


_ACTIVE = (
    LinkState.HANDSHAKING,
    LinkState.CONFIRMING,
    LinkState.CONNECTED,
    LinkState.INCOMPATIBLE,
)
#: The states in which the shoe's frames other than Hello are read.
_HEARD = (LinkState.CONFIRMING, LinkState.CONNECTED)


@dataclass(slots=True)
class _Connection:
    """What holds for one connection only. A start, a loss, a restart, a refusal and a
    Hello that begins a connection each make a new one, so that nothing of a connection
    outlives it."""

    #: The shoe announced FAST_RECOVERY (known once it is connected).
    fast: bool = False
    #: Missing events to ask for once RESEND_REQUEST_INTERVAL has passed.
    resend_wanted: bool = False
    #: While CONFIRMING: the Hello whose first Heartbeat is awaited, whether the shoe
    #: restarted, and the events that came meanwhile.
    hello: Hello | None = None
    restarted: bool = False
    held: list[Packet] = field(default_factory=list)


@dataclass(slots=True)
class _Pending:
    handle: CommandHandle
    internal: bool = False
    #: The sequence number it goes out under, and its frames, from its first send (a new
    #: number for each send after Nak(BUSY)).
    seq: int = 0
    frame: bytes = b""
    retransmit_frame: bytes = b""
    #: Attempts under the present sequence number, and sends as a new command in all.
    attempts: int = 0
    sends: int = 0
    #: Waiting, after Nak(BUSY), to be sent again as a new command at ``deadline``.
    busy: bool = False
    first_sent: float = 0.0
    #: When it first went out under its present number, and when it last went out.
    numbered_at: float = 0.0
    sent_at: float = 0.0
    #: When it was last sent again at once because a damaged frame may have been its reply.
    hastened_at: float = float("-inf")
    deadline: float = 0.0


class LinkCore:
    """The sans-I/O link with one shoe (see the module documentation).

    ``resume`` is where the consumer left off in an earlier run with a shoe, or with each
    of several: when that shoe (same model and serial number) answers, its events up to
    the point's ``shoe_seq`` count as delivered and acknowledged.
    """

    def __init__(
        self,
        host_versions: tuple[int, ...] = SUPPORTED_VERSIONS,
        *,
        silence_limit: float = SILENCE_LIMIT,
        command_timeout: float = COMMAND_TIMEOUT,
        command_timeout_max: float = COMMAND_TIMEOUT_MAX,
        command_timeout_min: float = COMMAND_TIMEOUT_MIN,
        command_attempts: int = COMMAND_ATTEMPTS,
        command_give_up: float | None = None,
        busy_retry_delay: float = BUSY_RETRY_DELAY,
        handshake_timeout: float = HANDSHAKE_TIMEOUT,
        resend_interval: float = RESEND_REQUEST_INTERVAL,
        reorder_window: int = MAX_UNACKED_EVENTS,
        resume: ResumePoint | Iterable[ResumePoint] | None = None,
    ) -> None:
        if not host_versions or not set(host_versions) <= set(SUPPORTED_VERSIONS):
            raise ValueError(
                f"host_versions {host_versions!r} must be some of {SUPPORTED_VERSIONS}, the "
                "versions the wire format speaks"
            )
        if command_attempts < 1 or command_timeout <= 0 or silence_limit <= 0:
            raise ValueError("timeouts must be positive and command_attempts at least 1")
        self.host_versions = tuple(host_versions)
        self.silence_limit = silence_limit
        self.command_timeout = command_timeout
        self.command_timeout_max = max(command_timeout_max, command_timeout)
        self.command_attempts = command_attempts
        self.busy_retry_delay = busy_retry_delay
        self.handshake_timeout = handshake_timeout
        #: With FAST_RECOVERY a command fails after this long without a reply: as long as
        #: its attempts take at the fixed timeouts (COMMAND_GIVE_UP with the defaults).
        self.command_give_up = (
            command_give_up
            if command_give_up is not None
            else sum(
                min(command_timeout * 2**attempt, self.command_timeout_max)
                for attempt in range(command_attempts)
            )
        )
        self.resend_interval = resend_interval
        self.reorder_window = reorder_window
        self.stats = LinkStats()
        #: The command timeout measured from the round trip, used with FAST_RECOVERY.
        self.command_timer = RetransmitTimer(
            command_timeout,
            min(command_timeout_min, self.command_timeout_max),
            self.command_timeout_max,
        )

        self._state = LinkState.IDLE
        self._decoder = StreamDecoder()
        self._line_totals = DecoderStats()
        self._out = bytearray()
        self._events: deque[LinkEvent] = deque()
        self._last_rx = 0.0

        self._identity: ShoeIdentity | None = None
        self._version: int | None = None
        self._boot_id: int | None = None
        self._mismatch: tuple[int, ...] | None = None
        self._last_uptime_ms: int | None = None
        self._conn = _Connection()
        # Frames the decoder dropped so far; when missing events were last asked for.
        self._damaged = 0
        self._resend_asked = float("-inf")

        self._seq = EventSequencer(self._events.append, reorder_window, self.stats)
        #: The shoe whose numbering the sequencer follows, by (model, serial number).
        self._numbered: tuple[str, str] | None = None
        #: Where the link stood with every other shoe met (or resumed), by the same key.
        self._met: dict[tuple[str, str], Standing] = {}
        points = [resume] if isinstance(resume, ResumePoint) else list(resume or ())
        for point in points:
            self._met[(point.model, point.serial_number)] = Standing.resumed(point)

        self._next_seq = 1
        self._inflight: _Pending | None = None
        self._queue: deque[_Pending] = deque()
        # Replies already taken, by command sequence number, to drop repeated ones.
        self._recent: OrderedDict[int, set[Message]] = OrderedDict()

    # -- state -----------------------------------------------------------------------

    @property
    def state(self) -> LinkState:
        return self._state

    @property
    def identity(self) -> ShoeIdentity | None:
        """The shoe's identity from its latest Hello (kept after the link is lost)."""
        return self._identity

    @property
    def version(self) -> int | None:
        """The protocol version agreed at the latest handshake."""
        return self._version

    @property
    def delivered_seq(self) -> int | None:
        """Sequence number of the newest event delivered (None before the first Hello);
        events reported lost count as delivered."""
        return self._seq.delivered_link_seq

    @property
    def delivered_shoe_seq(self) -> int | None:
        """The same in the shoe's own numbering (``ShoeEvent.shoe_seq``); events reported
        lost count as delivered."""
        return self._seq.delivered

    @property
    def acknowledged_seq(self) -> int:
        return self._seq.acknowledged_link_seq

    @property
    def fast_recovery(self) -> bool:
        """Whether the connected shoe announced FAST_RECOVERY (docs/protocol.md 8)."""
        return self._conn.fast

    @property
    def line_stats(self) -> DecoderStats:
        """Frames decoded and garbage dropped on the line, over every connection."""
        total = DecoderStats()
        for f in fields(DecoderStats):
            value = getattr(self._line_totals, f.name) + getattr(self._decoder.stats, f.name)
            setattr(total, f.name, value)
        return total

    # -- driving the core ------------------------------------------------------------

    def start(self, now: float) -> None:
        """A transport was just opened: begin the handshake (send GetIdentity)."""
        if self._state in _ACTIVE:
            raise RuntimeError(f"start() while the link is {self._state.value}")
        self._fold_line_stats()
        self._decoder = StreamDecoder()
        self._damaged = 0
        self._out.clear()
        self._state = LinkState.HANDSHAKING
        self._mismatch = None
        self._new_connection()
        self.command_timer.reset()
        self._last_rx = now
        self._queue.appendleft(self._identity_request())
        self._pump(now)

    def receive_data(self, data: bytes, now: float) -> None:
        """Bytes read from the transport, in any chunking."""
        if self._state not in _ACTIVE:
            return  # the link is down; what a closing transport still yields is moot
        decoder = self._decoder
        decoder.receive_data(data)
        while (packet := decoder.next_packet()) is not None:
            self._last_rx = now
            self._on_packet(packet, now)
            if self._state not in _ACTIVE:
                return
        damaged = decoder.stats.frames_dropped
        if damaged != self._damaged:
            self._damaged = damaged
            if self._conn.fast:
                self._on_damage(now)
        if self._seq.take_gap() and self._conn.fast:
            self._want_resend(now)

    def tick(self, now: float) -> None:
        """Apply timeouts: retransmit or give up on a command, detect silence."""
        if self._state not in _ACTIVE:
            return
        if now - self._last_rx > self.silence_limit:
            self._go_down("silence", f"no valid frame for {now - self._last_rx:.1f} s")
            return
        if self._conn.resend_wanted:
            self._ask_resend(now)
        pending = self._inflight
        if pending is None or now < pending.deadline:
            return
        if pending.busy:
            self._send_again(pending, now)
            return
        if pending.internal:
            # Asking who the shoe is goes on while it is alive (the silence limit covers a
            # dead one) up to handshake_timeout: a noisy line must not cost a reconnect.
            more = now - pending.first_sent < self.handshake_timeout
        elif self._timed_fast(pending):
            more = now < pending.numbered_at + self.command_give_up
        else:
            more = pending.attempts < self.command_attempts
        if more:
            self._transmit(pending, now)
            return
        self._inflight = None
        if pending.internal:
            if self._state is LinkState.HANDSHAKING:
                self._go_down(
                    "no_answer",
                    f"no Hello in {now - pending.first_sent:.1f} s, {pending.attempts} attempts",
                )
                return
            log.warning("the shoe did not answer GetIdentity; keeping the known identity")
        else:
            self._fail(pending, "no_answer")
        self._pump(now)

    def connection_lost(self, detail: str, now: float, reason: DownReason = "transport") -> None:
        """The transport failed or was closed; pending commands fail with "link_down"."""
        if self._state in _ACTIVE:
            self._go_down(reason, detail)

    def next_deadline(self) -> float | None:
        """The time by which :meth:`tick` must be called (None while the link is down)."""
        if self._state not in _ACTIVE:
            return None
        deadline = self._last_rx + self.silence_limit
        if self._inflight is not None:
            deadline = min(deadline, self._inflight.deadline)
        if self._conn.resend_wanted:
            deadline = min(deadline, self._resend_asked + self.resend_interval)
        return deadline

    def data_to_send(self) -> bytes:
        """The bytes to write to the transport now (possibly empty)."""
        # Only to a connected shoe: while CONFIRMING its numbering may yet turn out to have
        # started over, and an acknowledgement in the old one would make it forget new events.
        if self._state is LinkState.CONNECTED and (acked := self._seq.take_ack()) is not None:
            self.stats.acks_sent += 1
            ack = AckEvents(acked)
            self._out += encode_frame(ack, UNSEQUENCED, version=self._frame_version)
        data = bytes(self._out)
        self._out.clear()
        return data

    def next_event(self) -> LinkEvent | None:
        return self._events.popleft() if self._events else None

    # -- the consumer's calls --------------------------------------------------------

    def send_command(self, message: Message, now: float) -> CommandHandle:
        """Queue a command; it ends in CommandCompleted or CommandFailed.

        While the link is not connected the command fails at once ("link_down", or
        "incompatible"). A message the link sends itself, or one that does not fit a frame,
        raises ValueError.
        """
        self.check_command(message)
        pending = self._prepare(message, internal=False)
        if self._state is not LinkState.CONNECTED:
            reason: CommandFailure = (
                "incompatible" if self._state is LinkState.INCOMPATIBLE else "link_down"
            )
            self._fail(pending, reason)
            return pending.handle
        if isinstance(message, SetGate):
            self._supersede_gate()
        self._queue.append(pending)
        self._pump(now)
        return pending.handle

    @staticmethod
    def check_command(message: Message) -> None:
        """Raise ValueError unless ``message`` is a command the consumer may send: one the
        link does not send itself, that fits a frame. Touches no state (any thread)."""
        if not isinstance(message, Message) or isinstance(message, Unknown) or message.FROM_SHOE:
            raise ValueError(f"{message!r} is not a command to the shoe")
        if isinstance(message, AckEvents | GetIdentity):
            raise ValueError(f"the link sends {type(message).__name__} itself")
        size = len(message.encode_payload())
        if size > MAX_PAYLOAD:
            raise ValueError(
                f"{type(message).__name__} payload is {size} bytes; the maximum is {MAX_PAYLOAD}"
            )

    def acknowledge(self, up_to_seq: int, now: float) -> None:
        """Every event up to and including ``up_to_seq`` is durable: tell the shoe.

        Cumulative: acknowledging an older sequence number than before does nothing.
        Acknowledging an event that was never delivered raises ValueError.
        """
        self._seq.acknowledge(up_to_seq)

    # -- incoming frames -------------------------------------------------------------

    def _on_packet(self, packet: Packet, now: float) -> None:
        message = packet.message
        if isinstance(message, Unknown):
            self.stats.unknown_messages += 1
            log.debug("unknown message type 0x%02X from the shoe", message.type_code)
            # An event of a newer firmware still holds its place in the sequence: it is
            # delivered (and so acknowledged) in order, or every later event stalls.
            if (
                Flags.EVENT in packet.flags
                and self._state is LinkState.CONNECTED
                and packet.version == self._version
            ):
                self._seq.receive(packet)
            return
        if not message.FROM_SHOE:
            self.stats.unexpected_messages += 1
            return
        if isinstance(message, Hello):
            self._on_hello(packet, now)
            return
        if self._state not in _HEARD:
            if message.EVENT:
                self.stats.events_before_handshake += 1
            return
        if packet.version != self._version:
            self.stats.wrong_version_frames += 1
            return
        if message.EVENT:
            if self._state is LinkState.CONFIRMING:
                self._hold(packet)
            else:
                self._seq.receive(packet)
        elif isinstance(message, Heartbeat):
            self._on_heartbeat(message, now)
        elif Flags.RESPONSE in packet.flags:
            self._on_response(packet, now)
        elif isinstance(message, Ack | Nak):
            self.stats.unexpected_messages += 1
        else:
            self._events.append(ShoeReport(message))

    def _on_hello(self, packet: Packet, now: float) -> None:
        hello = packet.message
        assert isinstance(hello, Hello)
        if self._inflight is not None and self._inflight.internal:
            self._remember(self._inflight.seq, hello)
            self._inflight = None
        identity = ShoeIdentity.from_hello(hello)
        version = negotiate_version(self.host_versions, hello.protocol_versions)
        if version is None:
            self._refuse(identity)
        elif self._state is LinkState.CONFIRMING and self._awaited().boot_id == hello.boot_id:
            self._conn.hello = hello  # the same start said hello again
        elif self._state is LinkState.CONNECTED and self._same_boot(identity, version):
            # The same boot said hello again (a repeated answer): only check the sequence.
            self._seq.resume(hello.next_event_seq, "not_held")
            self._pump(now)
        else:
            self._handshake(hello, identity, version, now)

    def _same_boot(self, identity: ShoeIdentity, version: int) -> bool:
        previous = self._identity
        return (
            previous is not None
            and identity.same_shoe(previous)
            and self._boot_id in (None, identity.boot_id)
            and version == self._version
        )

    def _handshake(self, hello: Hello, identity: ShoeIdentity, version: int, now: float) -> None:
        """A Hello that starts a connection: a first one, another shoe, or a new boot."""
        shoe = (identity.model, identity.serial_number)
        same_shoe = shoe == self._numbered
        rebooted = same_shoe and self._boot_id not in (None, hello.boot_id)
        if self._state is LinkState.CONNECTED:
            self._fail_all("shoe_restarted" if rebooted else "link_down")
        self._identity = identity
        self._version = version
        self._mismatch = None
        if not (same_shoe and hello.boot_id == self._boot_id):
            # Another boot, or another shoe: its uptime is not the one the link last saw.
            # A reconnection to the same boot keeps it, so that a restart whose Hello the
            # line loses shows in the first Heartbeat after the reconnection too.
            self._last_uptime_ms = None
        self._new_connection()  # not fast before Connected: the answering shoe's timing
        self.command_timer.reset()
        if rebooted or (not same_shoe and shoe in self._met):
            self._await_heartbeat(hello, restarted=rebooted)
            return
        self._state = LinkState.CONNECTED
        self._boot_id = hello.boot_id
        self._announce(rebooted=False)
        if same_shoe:
            self._seq.resume(hello.next_event_seq, "not_held")
        elif not self._seq.started:
            self._numbered = shoe
            self._seq.begin(hello.next_event_seq)
        else:
            log.warning("a different shoe answered: %s; its events are numbered anew", identity)
            self._leave_numbering(shoe)
            self._seq.renumber(hello.next_event_seq)
        self._pump(now)

    def _leave_numbering(self, shoe: tuple[str, str]) -> None:
        """The sequencer follows ``shoe`` from now on: remember where it stood with the
        shoe it followed, should that one come back."""
        if self._numbered is not None and self._seq.started:
            self._met[self._numbered] = self._seq.standing()
        self._numbered = shoe

    def _await_heartbeat(self, hello: Hello, *, restarted: bool) -> None:
        """Not connected until the shoe's first Heartbeat shows whether its numbering went
        on: after a restart, and when a shoe met before (or the shoe of the resume point)
        is taken up again. No command reaches the shoe before the consumer has seen
        Connected and judged it again."""
        if restarted:
            self.stats.shoe_restarts += 1
            log.info("the shoe restarted (boot %08x); checking its numbering", hello.boot_id)
        else:
            log.info("a shoe met before answered; checking where its numbering stands")
        self._state = LinkState.CONFIRMING
        self._conn.hello = hello
        self._conn.restarted = restarted

    def _awaited(self) -> Hello:
        """The Hello whose first Heartbeat the link awaits (while CONFIRMING)."""
        hello = self._conn.hello
        assert hello is not None, "CONFIRMING keeps the Hello it confirms"
        return hello

    def _hold(self, packet: Packet) -> None:
        """An event that came while CONFIRMING, kept until the Heartbeat says which
        numbering it is in."""
        if len(self._conn.held) < 2 * self.reorder_window:
            self._conn.held.append(packet)  # beyond, the shoe sends them again

    def _announce(self, *, rebooted: bool) -> None:
        assert self._identity is not None and self._version is not None
        self._conn.fast = self._identity.supports(Capability.FAST_RECOVERY)
        self.stats.handshakes += 1
        log.info("connected to %s, protocol %d", self._identity, self._version)
        self._events.append(Connected(self._identity, self._version, rebooted=rebooted))

    def _confirm_restart(self, beat: Heartbeat) -> None:
        """The first Heartbeat after a restart, or after the Hello of a shoe met before: did
        the shoe's numbering go on?"""
        hello, restarted, held = self._awaited(), self._conn.restarted, self._conn.held
        self._conn.hello, self._conn.held = None, []
        self._state = LinkState.CONNECTED
        self._boot_id = hello.boot_id
        shoe = (hello.model, hello.serial_number)
        if shoe != self._numbered:
            # Taken up where the link stood with it (or where an earlier run left off).
            standing = self._met.pop(shoe)
            self._leave_numbering(shoe)
            self._seq.rejoin(standing)
        self._announce(rebooted=restarted)
        self._seq.forget_reordered()
        delivered = self._seq.delivered
        assert delivered is not None
        if beat.last_event_seq >= delivered:
            self._seq.resume(hello.next_event_seq, "shoe_restarted" if restarted else "not_held")
        else:
            self._seq.reset_detected(hello.next_event_seq)
        for packet in held:
            self._seq.receive(packet)

    def _refuse(self, identity: ShoeIdentity) -> None:
        self._identity = identity
        self._fail_all("incompatible")
        self._state = LinkState.INCOMPATIBLE
        self._new_connection()
        if self._mismatch == identity.protocol_versions:
            return  # already reported for this connection
        self._mismatch = identity.protocol_versions
        log.error(
            "shoe %s speaks protocol %s, this controller %s",
            identity,
            identity.protocol_versions,
            self.host_versions,
        )
        self._events.append(ProtocolMismatch(identity.protocol_versions, self.host_versions))

    def _on_heartbeat(self, beat: Heartbeat, now: float) -> None:
        last = self._last_uptime_ms
        # Uptime counts milliseconds in 32 bits: it wraps after 49.7 days, which is not a
        # restart.
        restarted = last is not None and beat.uptime_ms < last < _UPTIME_WRAPS_AFTER
        self._last_uptime_ms = beat.uptime_ms
        confirming = self._state is LinkState.CONFIRMING
        if restarted and not confirming:
            # Its Hello was lost on the line: hand shakes again, as after a reconnection.
            log.warning("the shoe's uptime went back: it restarted; asking for its identity")
            self._fail_all("shoe_restarted")
            self._state = LinkState.HANDSHAKING
            self._new_connection()
            self._queue.appendleft(self._identity_request())
            self._pump(now)
            return
        if confirming:
            self._confirm_restart(beat)
        newest, unacked = beat.last_event_seq, beat.unacked
        delivered = self._seq.delivered
        assert delivered is not None
        if newest < delivered:
            self._seq.reset_detected(newest - unacked + 1)
        else:
            self._seq.resume(newest - unacked + 1, "shoe_restarted" if restarted else "not_held")
            if self._conn.fast and newest > (self._seq.delivered or 0):
                # The shoe sends every event at once, before this Heartbeat: those that
                # did not come were lost on the line.
                self._want_resend(now)
        self._pump(now)

    def _on_response(self, packet: Packet, now: float) -> None:
        message = packet.message
        pending = self._inflight
        if pending is not None and packet.seq == pending.seq and not pending.busy:
            if self._timed_fast(pending) and pending.attempts == 1:
                # Sent once: the round trip is this command's (Karn's algorithm).
                self.command_timer.measure(now - pending.sent_at)
            self._remember(packet.seq, message)
            if self._busy_again(pending, message, now):
                return
            self._inflight = None
            if isinstance(message, Nak):
                self._fail(pending, "nak", message)
            else:
                self._events.append(CommandCompleted(pending.handle, message))
            self._pump(now)
            return
        seen = self._recent.get(packet.seq)
        if seen is not None and message in seen:
            self.stats.duplicate_replies += 1
        elif isinstance(message, Ack | Nak):
            self.stats.stale_replies += 1
        else:
            # More of a reply (the later steps of a self-test): a report of its own.
            if seen is not None:
                self._remember(packet.seq, message)
            self._events.append(ShoeReport(message))

    # -- commands --------------------------------------------------------------------

    def _prepare(self, message: Message, internal: bool) -> _Pending:
        return _Pending(CommandHandle(message), internal=internal)

    def _number(self, pending: _Pending) -> None:
        """Give ``pending`` the next sequence number, as it goes out as a new command."""
        seq = self._next_seq
        self._next_seq = seq + 1 if seq < MAX_SEQ else 1
        message, version = pending.handle.message, self._frame_version
        pending.seq = pending.handle.seq = seq
        pending.frame = encode_frame(message, seq, version=version)
        pending.retransmit_frame = encode_frame(message, seq, Flags.RETRANSMIT, version=version)

    def _busy_again(self, pending: _Pending, reply: Message, now: float) -> bool:
        """After Nak(BUSY), wait and send the command again, as a new command (the shoe
        answers a repeated number with the same reply), up to command_attempts sends."""
        if not isinstance(reply, Nak) or reply.reason is not NakReason.BUSY:
            return False
        if pending.internal or pending.sends >= self.command_attempts:
            return False
        pending.busy = True
        pending.deadline = now + self.busy_retry_delay
        return True

    def _send_again(self, pending: _Pending, now: float) -> None:
        pending.busy = False
        pending.attempts = 0
        self.stats.busy_retries += 1
        log.info("the shoe was busy; sending %s again", type(pending.handle.message).__name__)
        self._transmit(pending, now)

    def _identity_request(self) -> _Pending:
        return self._prepare(GetIdentity(self.host_versions), internal=True)

    @property
    def _frame_version(self) -> int:
        return self._version if self._version is not None else max(self.host_versions)

    def _pump(self, now: float) -> None:
        if self._inflight is None and self._queue:
            self._inflight = self._queue.popleft()
            self._transmit(self._inflight, now)

    def _transmit(self, pending: _Pending, now: float) -> None:
        if pending.attempts == 0:
            if pending.sends == 0:
                pending.first_sent = now
            pending.sends += 1
            pending.numbered_at = now
            self._number(pending)
            self._out += pending.frame
            self.stats.commands_sent += 1
        else:
            self._out += pending.retransmit_frame
            self.stats.command_retransmissions += 1
        pending.sent_at = now
        if self._timed_fast(pending):
            timer = self.command_timer
            wait = timer.timeout if pending.attempts == 0 else timer.back_off()
            pending.attempts += 1
            pending.deadline = min(now + wait, pending.numbered_at + self.command_give_up)
            return
        wait = min(self.command_timeout * 2**pending.attempts, self.command_timeout_max)
        pending.attempts += 1
        pending.deadline = now + wait

    # -- fast recovery ---------------------------------------------------------------

    def _timed_fast(self, pending: _Pending) -> bool:
        """Whether ``pending`` is timed from the round trip. GetIdentity is not (the
        capability is not known before its answer), nor Reset: a shoe that restarts
        forgets the last command it executed, so a Reset sent again while it restarts
        would restart it again."""
        fast = self._conn.fast
        return fast and not pending.internal and not isinstance(pending.handle.message, Reset)

    def _on_damage(self, now: float) -> None:
        """A frame from the shoe failed its checks: it may have been an event or the reply
        awaited. Ask for the events, and send that command again at once (the shoe answers
        a repeated command with its reply again, without executing it twice)."""
        self._want_resend(now)
        pending = self._inflight
        if (
            pending is None
            or not self._timed_fast(pending)
            or pending.busy
            or pending.attempts == 0
            or now - pending.hastened_at < self.resend_interval
        ):
            return
        pending.hastened_at = now
        pending.attempts += 1  # sent again: its reply gives no round trip
        pending.sent_at = now
        self._out += pending.retransmit_frame
        self.stats.command_retransmissions += 1
        self.stats.hastened_commands += 1

    def _want_resend(self, now: float) -> None:
        if self._state is LinkState.CONNECTED:
            self._conn.resend_wanted = True
            self._ask_resend(now)

    def _ask_resend(self, now: float) -> None:
        """Send ResendEvents for the events after those delivered, unless one went out
        less than resend_interval ago (then tick() sends it when the interval has passed:
        one request for a burst of damage)."""
        if now < self._resend_asked + self.resend_interval:
            return
        self._conn.resend_wanted = False
        if self._state is not LinkState.CONNECTED:
            return
        delivered = self._seq.delivered
        assert delivered is not None
        self._resend_asked = now
        self.stats.resend_requests += 1
        request = ResendEvents(delivered + 1 if delivered < MAX_SEQ else MAX_SEQ)
        self._out += encode_frame(request, UNSEQUENCED, version=self._frame_version)

    def _fail(self, pending: _Pending, reason: CommandFailure, nak: Nak | None = None) -> None:
        if not pending.internal:
            self._events.append(CommandFailed(pending.handle, reason, nak))

    def _supersede_gate(self) -> None:
        """A new SetGate replaces those still waiting to go out (behind a command whose
        reply is awaited, or to be sent again after the shoe was busy). Their limit is a
        draw index of the deck in the shoe when they were given: sent after a change of
        deck, they would open the gate on the next one."""
        for pending in [p for p in self._queue if isinstance(p.handle.message, SetGate)]:
            self._queue.remove(pending)
            self._fail(pending, "superseded")
        waiting = self._inflight
        if waiting is not None and waiting.busy and isinstance(waiting.handle.message, SetGate):
            # The shoe did nothing with it: it waits to be sent again, as a new command.
            self._inflight = None
            self._fail(waiting, "superseded")

    def _fail_all(self, reason: CommandFailure) -> None:
        if self._inflight is not None:
            self._fail(self._inflight, reason)
            self._inflight = None
        while self._queue:
            self._fail(self._queue.popleft(), reason)

    def _remember(self, seq: int, reply: Message) -> None:
        self._recent.setdefault(seq, set()).add(reply)
        while len(self._recent) > _RECENT_REPLIES:
            self._recent.popitem(last=False)

    def _new_connection(self) -> None:
        """The connection ended, or one begins: nothing it knew holds for the next."""
        self._conn = _Connection()

    def _go_down(self, reason: DownReason, detail: str) -> None:
        self._fail_all("link_down")
        self._state = LinkState.DOWN
        self._new_connection()
        self._seq.connection_lost()
        self.stats.links_lost += 1
        # Our own stop is no news; every other loss is.
        log.log(
            logging.INFO if reason == "stopped" else logging.WARNING,
            "link lost (%s): %s",
            reason,
            detail,
        )
        self._events.append(LinkDown(reason, detail))

    def _fold_line_stats(self) -> None:
        for f in fields(DecoderStats):
            value = getattr(self._line_totals, f.name) + getattr(self._decoder.stats, f.name)
            setattr(self._line_totals, f.name, value)
