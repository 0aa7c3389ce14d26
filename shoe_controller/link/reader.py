"""The link driver's reader thread: the only code that touches the link core.

:class:`LinkReader` opens the transport, feeds the core what it reads, applies its
timeouts, writes what it has to send, passes the core's events through the arming
(:mod:`.arming`) and delivers them to ``on_event``, in order, from this thread only. When
the link is lost it reconnects with back-off, for ever, until stopped. Every exception in
the thread is logged and delivered as an event (:class:`DriverError`, then
:class:`LinkDown` and a reconnection); the thread never dies silently.

Other threads reach it through its :class:`~.inbox.Inbox` only, and read what it last
published in :attr:`LinkReader.status`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from shoe_controller.errors import LinkError, ShoeControllerError
from shoe_controller.hal.base import Transport
from shoe_controller.link.approval import Verdict
from shoe_controller.link.arming import Arming, Step
from shoe_controller.link.core import LinkCore, LinkState
from shoe_controller.link.events import (
    CommandCompleted,
    CommandFailed,
    Connected,
    DriverError,
    EventsLost,
    LinkEvent,
    Reconnecting,
    ShoeEvent,
)
from shoe_controller.link.identity import ShoeIdentity
from shoe_controller.link.inbox import Inbox
from shoe_controller.link.locator import ShoeLocator
from shoe_controller.link.pending import PendingCommand

log = logging.getLogger(__name__)

#: Longest wait in one read when the core has no earlier deadline. Other threads interrupt
#: the read; waking more often costs CPU for nothing while the table is idle.
POLL_INTERVAL = 0.25
#: The same on a transport whose read cannot be interrupted (pyusb, socket://): how long a
#: request from another thread, an acknowledgement above all, may wait for the reader.
UNINTERRUPTIBLE_POLL = 0.01


def reconnect_backoff(attempt: int) -> float:
    """Seconds before reconnection attempt ``attempt`` (1, 2, ...): 0.1 s doubling to 5 s."""
    return min(0.1 * 2.0 ** (attempt - 1), 5.0)


@dataclass(frozen=True, slots=True)
class Status:
    """What other threads may know of the link, as the reader published it last."""

    state: LinkState = LinkState.IDLE
    identity: ShoeIdentity | None = None
    verdict: Verdict | None = None
    connected: Connected | None = None

    @property
    def armed(self) -> bool:
        approved = self.verdict is not None and self.verdict.approved
        return approved and self.connected is not None and self.state is LinkState.CONNECTED


class LinkReader:
    """The reader thread's work; :meth:`run` is the thread's target."""

    def __init__(
        self,
        locator: ShoeLocator,
        core: LinkCore,
        arming: Arming,
        on_event: Callable[[LinkEvent], None],
        *,
        clock: Callable[[], float],
        reconnect_delay: Callable[[int], float],
        poll_interval: float,
    ) -> None:
        self.locator = locator
        self.core = core
        self.arming = arming
        self.inbox = Inbox()
        self.stopping = threading.Event()
        #: Guards :attr:`status` for waiters; notified whenever it changes.
        self.changed = threading.Condition()
        self.status = Status()
        #: The newest sequence number delivered (a ShoeEvent's, or the last of EventsLost),
        #: set before the event reaches ``on_event``.
        self.delivered_seq = 0
        self._on_event = on_event
        self._clock = clock
        self._reconnect_delay = reconnect_delay
        self._poll = poll_interval
        self._transport: Transport | None = None
        self._pending: dict[int, PendingCommand] = {}
        self._verifying: dict[int, Future[Verdict]] = {}

    # -- requests from other threads, run here ---------------------------------------

    def send(self, commands: Sequence[PendingCommand], ahead: bytes = b"") -> None:
        """Queue ``commands`` and write what the core has to send, behind ``ahead``."""
        now = self._clock()
        for pending in commands:
            handle = self.core.send_command(pending.message, now)
            pending.handle = handle
            self._pending[handle.id] = pending
        self._flush(ahead)

    def acknowledge(self, up_to_seq: int, then: Sequence[PendingCommand] = ()) -> None:
        """Acknowledge, then send ``then``: one write carries them all, the acknowledgement
        first (the core adds it behind whatever else it has to send)."""
        self.core.acknowledge(up_to_seq, self._clock())
        self.send(then, ahead=self.core.data_to_send())

    def verify(self, future: Future[Verdict]) -> None:
        identity = self.core.identity
        if self.core.state is not LinkState.CONNECTED or identity is None:
            future.set_exception(LinkError("no shoe is connected: verification needs the link up"))
            return
        step = self.arming.verify(identity)
        for handle_id in self._act(step):
            self._verifying[handle_id] = future
        if step.verified is not None:
            future.set_result(step.verified)

    # -- the thread ------------------------------------------------------------------

    def run(self) -> None:
        attempt = 0
        while not self.stopping.is_set():
            try:
                attempt = self._connect_once(attempt)
            except Exception as exc:  # the last net: only stop() ends this thread
                log.exception("the link driver failed on %s", self.locator.address)
                self._deliver(DriverError(one_line(exc)))
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
            detail = one_line(exc)
            if not isinstance(exc, ShoeControllerError):
                log.exception("opening %s failed unexpectedly", self.locator.address)
                self._deliver(DriverError(detail))
            log.info("cannot open %s (%s); retrying in %.2f s", self.locator.address, detail, delay)
            self._deliver(Reconnecting(attempt, delay, detail))
            self._pause(delay)
            return attempt
        handshakes = self.core.stats.handshakes
        try:
            self._serve(transport)
        except Exception as exc:  # a bug must not kill the thread: report, reconnect
            log.exception("the link reader failed on %s", self.locator.address)
            self._deliver(DriverError(one_line(exc)))
            self.core.connection_lost(f"driver error: {one_line(exc)}", self._clock())
        finally:
            self._transport = None
            self.inbox.attach(None)
            _close_quietly(transport)
        self._dispatch()
        if self.stopping.is_set():
            return attempt
        attempt = 0 if self.core.stats.handshakes > handshakes else attempt + 1
        self._pause(self._reconnect_delay(max(attempt, 1)))
        return attempt

    def _open(self) -> Transport:
        transport = self.locator.transport()
        try:
            transport.open()
        except BaseException:
            _close_quietly(transport)
            raise
        return transport

    def _serve(self, transport: Transport) -> None:
        """Run the link over ``transport`` until it is lost (or stopped)."""
        self.arming.transport_opened(transport.in_process_simulator)
        self.core.start(self._clock())
        self._transport = transport
        self.inbox.attach(transport)
        poll = self._poll if transport.interruptible else min(self._poll, UNINTERRUPTIBLE_POLL)
        while True:
            self.inbox.run()
            self._dispatch()
            if self.core.state is LinkState.DOWN:
                return
            if self.stopping.is_set():
                self.core.connection_lost("stopped", self._clock(), reason="stopped")
            elif self._flush():
                self._read(transport, poll)

    def _flush(self, ahead: bytes = b"") -> bool:
        """Write ``ahead`` and what the core has to send; False when the link was lost
        doing so."""
        data = ahead + self.core.data_to_send()
        transport = self._transport
        if not data or transport is None:
            return True  # between connections the core starts afresh on the next one
        try:
            transport.write(data)
        except ShoeControllerError as exc:
            self.core.connection_lost(one_line(exc), self._clock())
            return False
        return True

    def _read(self, transport: Transport, poll: float) -> None:
        deadline = self.core.next_deadline()
        timeout = poll if deadline is None else min(poll, deadline - self._clock())
        try:
            data = self.inbox.read(transport, max(timeout, 0.0))
        except ShoeControllerError as exc:
            self.core.connection_lost(one_line(exc), self._clock())
            return
        now = self._clock()
        if data:
            self.core.receive_data(data, now)
        self.core.tick(now)

    def _dispatch(self) -> None:
        """Deliver the core's events through the arming, in order; publish the status."""
        while (event := self.core.next_event()) is not None:
            if isinstance(event, Connected) and self._transport is not None:
                self.locator.found(self._transport, event.identity)
            try:
                step = self.arming.receive(event)
            except Exception as exc:  # deliver the event anyway, and say why
                log.exception("handling %r failed", event)
                self.arming.disarm()  # not armed until judged again
                step = Step(deliver=(event, DriverError(one_line(exc))))
            self._act(step)
            if isinstance(event, CommandCompleted | CommandFailed):
                self._settle(event, step.verified)
            self._publish()  # what the consumer reads as it handles these events
            for out in step.deliver:
                self._deliver(out)
        self._publish()

    def _act(self, step: Step) -> list[int]:
        """Send the commands ``step`` asks for; their handles' ids."""
        if not step.send:
            return []
        now = self._clock()
        return [self.core.send_command(message, now).id for message in step.send]

    def _settle(self, outcome: CommandCompleted | CommandFailed, verdict: Verdict | None) -> None:
        pending = self._pending.pop(outcome.handle.id, None)
        if pending is not None:
            pending.settle(outcome)
        future = self._verifying.pop(outcome.handle.id, None)
        if future is not None and verdict is not None:
            future.set_result(verdict)

    def _deliver(self, event: LinkEvent) -> None:
        if isinstance(event, ShoeEvent):
            self.delivered_seq = event.seq
        elif isinstance(event, EventsLost):
            self.delivered_seq = max(self.delivered_seq, event.got_seq - 1)
        try:
            self._on_event(event)
        except Exception:  # the consumer's bug: log it, keep the link running
            log.exception("on_event raised on %r", event)

    def _publish(self) -> None:
        core, arming, last = self.core, self.arming, self.status
        if (
            core.state is last.state
            and core.identity is last.identity
            and arming.verdict is last.verdict
            and arming.connected is last.connected
        ):
            return  # the usual case, after each card: compared without building a Status
        with self.changed:
            self.status = Status(core.state, core.identity, arming.verdict, arming.connected)
            self.changed.notify_all()

    def _pause(self, delay: float) -> None:
        """Wait ``delay`` seconds (or until stopped), running requests meanwhile."""
        end = time.monotonic() + delay
        while not self.stopping.is_set():
            self.inbox.run()
            self._dispatch()
            remaining = end - time.monotonic()
            if remaining <= 0:
                return
            self.inbox.pause(remaining)

    def _shut_down(self) -> None:
        self.core.connection_lost("stopped", self._clock(), reason="stopped")
        self.inbox.close()  # from now on, requests are refused
        self.inbox.run()
        self._dispatch()
        with self.changed:
            self.changed.notify_all()


def one_line(exc: BaseException) -> str:
    """An exception as one line for an event: its text, and its type unless it is ours."""
    text = str(exc).strip().replace("\n", " ") or type(exc).__name__
    if isinstance(exc, ShoeControllerError):
        return text
    return f"{type(exc).__name__}: {text}"


def _close_quietly(transport: Transport) -> None:
    try:
        transport.close()
    except Exception:  # closing a broken device must not hide why it broke
        log.debug("closing %s failed", transport.address, exc_info=True)
