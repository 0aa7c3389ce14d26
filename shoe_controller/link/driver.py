"""The link core run over a real transport, on one reader thread.

The reader thread opens the transport, feeds the core what it reads, applies its
timeouts, writes what it has to send, and delivers its events to ``on_event``, in order,
from that thread only. When the link is lost it reconnects with back-off, for ever, until
:meth:`LinkDriver.stop`. Every exception in the thread is logged and delivered as an event
(:class:`DriverError`, then :class:`LinkDown` and a reconnection); the thread never dies
silently.

Other threads may call :meth:`LinkDriver.send_command`, :meth:`LinkDriver.acknowledge` and
:meth:`LinkDriver.verify`; what these produce is written at once from the calling thread,
so that an acknowledgement reaches the shoe without waiting for the reader.

The approval check (rule A1) runs at every handshake; :class:`Connected` is delivered with
its verdict, once a seeded verification (when the approved list asks for one) is done. A
shoe that is not approved stays connected, for diagnostics, but is not :attr:`armed`: the
driver refuses to open its gate for dealing or for the stub.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace

from firmware_protocol import GateMode, Message, SetGate
from shoe_controller.errors import LinkError, NotApproved, ShoeControllerError
from shoe_controller.hal import discovery
from shoe_controller.hal.addresses import open_transport
from shoe_controller.hal.base import Transport
from shoe_controller.link.approval import ApprovalList, Challenge, SeedSource, Verdict
from shoe_controller.link.core import LinkCore, LinkState
from shoe_controller.link.events import (
    ApprovalChanged,
    CommandCompleted,
    CommandFailed,
    CommandHandle,
    Connected,
    DriverError,
    LinkDown,
    LinkEvent,
    ProtocolMismatch,
    Reconnecting,
)
from shoe_controller.link.identity import ShoeIdentity
from shoe_controller.link.locator import CandidateLister, Opener, ShoeLocator
from shoe_controller.link.stats import LinkStats

log = logging.getLogger(__name__)

#: Gate modes that let cards out: refused unless the shoe is armed.
GATE_OPENING = frozenset({GateMode.DEAL, GateMode.STUB})
#: Longest wait in one read when the core has no earlier deadline. stop() interrupts the
#: read where the transport can; elsewhere this bounds how long stopping takes. Waking more
#: often costs CPU for nothing while the table is idle.
POLL_INTERVAL = 0.25
#: How long a seeded verification on demand waits for the shoe's answer (seconds).
VERIFY_TIMEOUT = 10.0


def reconnect_backoff(attempt: int) -> float:
    """Seconds before reconnection attempt ``attempt`` (1, 2, ...): 0.1 s doubling to 5 s."""
    return min(0.1 * 2.0 ** (attempt - 1), 5.0)


class PendingCommand:
    """A command given to the driver. Its outcome is a CommandCompleted or CommandFailed,
    also delivered to ``on_event``."""

    def __init__(self, handle: CommandHandle) -> None:
        self.handle = handle
        self._done = threading.Event()
        self._outcome: CommandCompleted | CommandFailed | None = None

    @property
    def message(self) -> Message:
        return self.handle.message

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> CommandCompleted | CommandFailed | None:
        """The outcome, or None when ``timeout`` passed first."""
        self._done.wait(timeout)
        return self._outcome

    def result(self, timeout: float | None = None) -> Message:
        """The shoe's reply; raises LinkError when the command failed or did not end."""
        outcome = self.wait(timeout)
        if isinstance(outcome, CommandCompleted):
            return outcome.reply
        name = type(self.message).__name__
        if outcome is None:
            raise LinkError(f"{name} got no outcome within {timeout} s: check the shoe's link")
        raise LinkError(f"{outcome}; check the shoe and its link")

    def _resolve(self, outcome: CommandCompleted | CommandFailed) -> None:
        self._outcome = outcome
        self._done.set()

    def __repr__(self) -> str:
        return f"<PendingCommand {self.handle!r} {'done' if self.done else 'pending'}>"


@dataclass(slots=True)
class _Verification:
    handle: CommandHandle
    challenge: Challenge
    connected: Connected
    held: list[LinkEvent]


class LinkDriver:
    """Runs the link with the shoe at ``address``.

    ``on_event`` receives every :data:`LinkEvent`, on the reader thread; it must not block
    for long nor raise (hand the event to your own queue). ``clock`` gives the core its
    time; ``opener``, ``candidates``, ``reconnect_delay`` and ``seed_source`` are there for
    tests and other programs. A malformed address raises ConfigError at once.
    """

    def __init__(
        self,
        address: str,
        approval: ApprovalList,
        on_event: Callable[[LinkEvent], None],
        *,
        clock: Callable[[], float] = time.monotonic,
        opener: Opener = open_transport,
        candidates: CandidateLister = discovery.list_candidates,
        reconnect_delay: Callable[[int], float] = reconnect_backoff,
        seed_source: SeedSource = secrets.token_bytes,
        core: LinkCore | None = None,
        poll_interval: float = POLL_INTERVAL,
    ) -> None:
        self._locator = ShoeLocator(address, opener, candidates)
        self._approval = approval
        self._on_event = on_event
        self._clock = clock
        self._reconnect_delay = reconnect_delay
        self._seed_source = seed_source
        self._core = core or LinkCore()
        self._poll = poll_interval

        # _lock guards the core and everything below; _write_lock keeps what is taken from
        # the core and written to the transport in the core's order.
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._transport: Transport | None = None
        self._in_process = False
        self._pending: dict[int, PendingCommand] = {}
        self._outbox: deque[LinkEvent] = deque()
        self._verification: _Verification | None = None
        self._verdict: Verdict | None = None
        self._connected: Connected | None = None
        self._connected_event = threading.Condition(self._lock)

        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # -- life cycle ------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self._locator.address

    def start(self) -> None:
        """Start the reader thread; it connects, and reconnects, by itself."""
        if self._thread is not None:
            raise RuntimeError("the link driver was already started")
        self._thread = threading.Thread(
            target=self._run, name=f"shoe-link {self.address}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Close the link and join the reader thread (it delivers LinkDown("stopped"))."""
        self._stop.set()
        self._wake.set()
        with self._write_lock:
            transport = self._transport
        if transport is not None:
            transport.interrupt()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                log.error("the link reader thread did not stop within %.1f s", timeout)

    def __enter__(self) -> LinkDriver:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- state -----------------------------------------------------------------------

    @property
    def armed(self) -> bool:
        """True only while an approved (and, when asked, verified) shoe is connected."""
        with self._lock:
            return self._armed()

    def _armed(self) -> bool:
        return (
            self._connected is not None
            and self._verdict is not None
            and self._verdict.approved
            and self._core.state is LinkState.CONNECTED
        )

    @property
    def verdict(self) -> Verdict | None:
        with self._lock:
            return self._verdict

    @property
    def identity(self) -> ShoeIdentity | None:
        with self._lock:
            return self._core.identity

    @property
    def state(self) -> LinkState:
        with self._lock:
            return self._core.state

    @property
    def stats(self) -> LinkStats:
        """A copy of the core's counters."""
        with self._lock:
            return replace(self._core.stats)

    def wait_connected(self, timeout: float | None = None) -> Connected | None:
        """The latest Connected delivered, once there is one and the link is up."""
        with self._connected_event:
            self._connected_event.wait_for(
                lambda: self._connected is not None or self._stop.is_set(), timeout
            )
            return self._connected

    # -- the consumer's calls --------------------------------------------------------

    def send_command(self, message: Message) -> PendingCommand:
        """Send a command; wait on the returned handle, or watch ``on_event``.

        Opening the gate (SetGate DEAL or STUB) raises NotApproved unless the shoe is
        armed, naming what did not match.
        """
        self._require_started()
        with self._lock:
            if isinstance(message, SetGate) and message.mode in GATE_OPENING and not self._armed():
                raise NotApproved(self._not_armed_reason(message))
            pending = self._submit(message)
        self._flush()
        return pending

    def acknowledge(self, up_to_seq: int) -> None:
        """Every event up to ``up_to_seq`` is durable (journaled); tell the shoe now."""
        with self._lock:
            self._core.acknowledge(up_to_seq, self._clock())
        self._flush()

    def verify(self, timeout: float = VERIFY_TIMEOUT) -> Verdict:
        """Check the connected shoe against the approved list again, with a new seeded
        verification when its entry names an image; returns the new verdict."""
        self._require_started()
        if threading.current_thread() is self._thread:
            raise RuntimeError("verify() waits for the shoe: do not call it from on_event")
        with self._lock:
            identity = self._core.identity
            if self._core.state is not LinkState.CONNECTED or identity is None:
                raise LinkError("no shoe is connected: verification needs the link up")
            verdict = self._approval.check(identity, self._in_process)
            if not verdict.pending:
                self._set_verdict(verdict)
                return verdict
            assert verdict.entry is not None
            challenge = Challenge.new(verdict.entry, self._seed_source)
            pending = self._submit(challenge.message)
        self._flush()
        outcome = pending.wait(timeout)
        if isinstance(outcome, CommandCompleted):
            verdict = challenge.judge(outcome.reply)
        else:
            why = outcome.reason.replace("_", " ") if outcome else f"no reply in {timeout:g} s"
            verdict = challenge.judge(None, why)
        with self._lock:
            if self._core.identity == identity:  # still the same shoe, same boot
                self._set_verdict(verdict)
        return verdict

    def _submit(self, message: Message) -> PendingCommand:
        handle = self._core.send_command(message, self._clock())
        pending = PendingCommand(handle)
        self._pending[handle.id] = pending
        self._wake.set()  # a failure at once is delivered by the reader thread
        return pending

    def _not_armed_reason(self, message: SetGate) -> str:
        what = f"SetGate {message.mode.name} refused: the shoe is not armed"
        if self._core.state is not LinkState.CONNECTED:
            return f"{what}: no shoe is connected"
        if self._verdict is None:
            return f"{what}: its approval is still being checked"
        return f"{what}: {self._verdict.reason}"

    def _set_verdict(self, verdict: Verdict) -> None:
        if verdict != self._verdict:
            self._verdict = verdict
            self._outbox.append(ApprovalChanged(verdict))
            self._wake.set()

    def _require_started(self) -> None:
        if self._thread is None:
            raise RuntimeError("start() the link driver first")

    # -- the reader thread -----------------------------------------------------------

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            try:
                attempt = self._connect_once(attempt)
            except Exception as exc:  # the last net: only stop() ends this thread
                log.exception("the link driver failed on %s", self.address)
                self._emit(DriverError(_one_line(exc)))
                attempt += 1
                self._pause(reconnect_backoff(attempt))
        try:
            self._shut_down()
        except Exception:
            log.exception("the link driver failed while stopping")

    def _connect_once(self, attempt: int) -> int:
        """One connection, from opening to losing it; returns the new attempt count."""
        try:
            transport = self._open()
        except Exception as exc:  # every failure to open is reported, then retried
            attempt += 1
            delay = self._reconnect_delay(attempt)
            detail = _one_line(exc)
            if not isinstance(exc, ShoeControllerError):
                log.exception("opening %s failed unexpectedly", self.address)
                self._emit(DriverError(detail))
            log.info("cannot open %s (%s); retrying in %.2f s", self.address, detail, delay)
            self._emit(Reconnecting(attempt, delay, detail))
            self._pause(delay)
            return attempt
        handshake_done = self._serve_guarded(transport)
        if self._stop.is_set():
            return attempt
        attempt = 0 if handshake_done else attempt + 1
        self._pause(self._reconnect_delay(max(attempt, 1)))
        return attempt

    def _open(self) -> Transport:
        transport = self._locator.transport()
        try:
            transport.open()
        except BaseException:
            _close_quietly(transport)
            raise
        return transport

    def _serve_guarded(self, transport: Transport) -> bool:
        with self._lock:
            handshakes = self._core.stats.handshakes
        try:
            self._serve(transport)
        except Exception as exc:  # a bug must not kill the thread: report, reconnect
            log.exception("the link reader failed on %s", self.address)
            self._emit(DriverError(_one_line(exc)))
            with self._lock:
                self._core.connection_lost(f"driver error: {_one_line(exc)}", self._clock())
        finally:
            with self._write_lock:
                self._transport = None
            _close_quietly(transport)
        self._dispatch(transport)
        with self._lock:
            return self._core.stats.handshakes > handshakes

    def _serve(self, transport: Transport) -> None:
        with self._lock:
            self._in_process = transport.in_process_simulator
            self._core.start(self._clock())
        with self._write_lock:
            self._transport = transport
        self._flush()
        while True:
            self._dispatch(transport)
            with self._lock:
                if self._core.state is LinkState.DOWN:
                    return
                if self._stop.is_set():
                    self._core.connection_lost("stopped", self._clock(), reason="stopped")
                    continue
                deadline = self._core.next_deadline()
                now = self._clock()
            timeout = self._poll if deadline is None else min(self._poll, deadline - now)
            try:
                data = transport.read(max(timeout, 0.0))
            except ShoeControllerError as exc:
                with self._lock:
                    self._core.connection_lost(_one_line(exc), self._clock())
                continue
            with self._lock:
                now = self._clock()
                if data:
                    self._core.receive_data(data, now)
                self._core.tick(now)
            self._flush()

    def _flush(self) -> None:
        """Write what the core has to send, from whichever thread changed it."""
        with self._write_lock:
            transport = self._transport
            if transport is None:
                return  # not connected: the core starts afresh on the next connection
            with self._lock:
                data = self._core.data_to_send()
            if not data:
                return
            try:
                transport.write(data)
            except ShoeControllerError as exc:
                with self._lock:
                    self._core.connection_lost(_one_line(exc), self._clock())
                self._wake.set()

    def _dispatch(self, transport: Transport | None = None) -> None:
        """Deliver the core's events (reader thread only), in order."""
        while True:
            with self._lock:
                while not self._outbox:
                    event = self._core.next_event()
                    if event is None:
                        return
                    try:
                        produced = self._process(event, transport)
                    except Exception as exc:  # deliver the event anyway, and say why
                        log.exception("handling %r failed", event)
                        self._verdict = None  # not armed until judged again
                        produced = [event, DriverError(_one_line(exc))]
                    self._outbox.extend(produced)
                out = self._outbox.popleft()
            self._deliver(out)

    def _process(self, event: LinkEvent, transport: Transport | None) -> list[LinkEvent]:
        """Apply one core event to the driver's state (lock held); what to deliver."""
        check = self._verification
        if isinstance(event, CommandCompleted | CommandFailed):
            if check is not None and event.handle is check.handle:
                return self._verified(check, event)
            pending = self._pending.pop(event.handle.id, None)
            if pending is not None:
                pending._resolve(event)
        elif isinstance(event, Connected):
            return self._on_connected(event, transport)
        elif isinstance(event, LinkDown | ProtocolMismatch):
            self._connected = None
            if isinstance(event, ProtocolMismatch):
                self._verdict = None
        if check is not None:
            check.held.append(event)
            return []
        return [event]

    def _on_connected(self, event: Connected, transport: Transport | None) -> list[LinkEvent]:
        if transport is not None:
            self._locator.found(transport, event.identity)
        verdict = self._approval.check(event.identity, self._in_process)
        if verdict.pending:
            assert verdict.entry is not None
            challenge = Challenge.new(verdict.entry, self._seed_source)
            handle = self._core.send_command(challenge.message, self._clock())
            self._verification = _Verification(handle, challenge, event, [])
            self._verdict = verdict
            self._connected = None
            return []
        return self._announce(replace(event, verdict=verdict))

    def _verified(
        self, check: _Verification, outcome: CommandCompleted | CommandFailed
    ) -> list[LinkEvent]:
        self._verification = None
        if isinstance(outcome, CommandCompleted):
            verdict = check.challenge.judge(outcome.reply)
        else:
            verdict = check.challenge.judge(None, str(outcome))
        announced = self._announce(replace(check.connected, verdict=verdict))
        if self._core.state is not LinkState.CONNECTED:
            self._connected = None
        return announced + check.held

    def _announce(self, event: Connected) -> list[LinkEvent]:
        self._verdict = event.verdict
        self._connected = event
        self._connected_event.notify_all()
        verdict = event.verdict
        if verdict is not None and not verdict.approved:
            log.warning("%s is connected but NOT ARMED: %s", event.identity, verdict.reason)
        return [event]

    def _deliver(self, event: LinkEvent) -> None:
        try:
            self._on_event(event)
        except Exception:  # the consumer's bug: log it, keep the link running
            log.exception("on_event raised on %r", event)

    def _emit(self, event: LinkEvent) -> None:
        with self._lock:
            self._outbox.append(event)
        self._dispatch()

    def _pause(self, delay: float) -> None:
        """Wait ``delay`` seconds (or until stopped), delivering events meanwhile."""
        end = time.monotonic() + delay
        while not self._stop.is_set():
            self._dispatch()
            remaining = end - time.monotonic()
            if remaining <= 0:
                return
            self._wake.wait(remaining)
            self._wake.clear()

    def _shut_down(self) -> None:
        with self._lock:
            self._core.connection_lost("stopped", self._clock(), reason="stopped")
        self._dispatch()
        with self._lock:
            leftovers = list(self._pending.values())
            self._pending.clear()
            self._connected_event.notify_all()
        for pending in leftovers:  # commands given after the link went down for good
            pending._resolve(CommandFailed(pending.handle, "link_down"))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().replace("\n", " ") or type(exc).__name__
    if isinstance(exc, ShoeControllerError):
        return text
    return f"{type(exc).__name__}: {text}"


def _close_quietly(transport: Transport) -> None:
    try:
        transport.close()
    except Exception:  # closing a broken device must not hide why it broke
        log.debug("closing %s failed", transport.address, exc_info=True)
