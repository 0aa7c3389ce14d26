"""One short conversation with a shoe, for a diagnostic command.

A command opens the address once, shakes hands, asks what it needs and closes: it never
reconnects, so an address that cannot be opened ends the command with the transport's own
error (not found, permission denied, busy) and its exit code. The link core does the
protocol work; the session runs it on the calling thread, and never acknowledges an event,
so that the shoe keeps every event for the service (rule E3).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import Final, Literal, Self

from firmware_protocol import Message
from shoe_controller.errors import LinkError, LinkLost, ShoeControllerError
from shoe_controller.hal.addresses import check_shoe_address, open_transport
from shoe_controller.hal.base import Transport
from shoe_controller.link.core import LinkCore, LinkState
from shoe_controller.link.events import (
    CommandCompleted,
    CommandFailed,
    CommandHandle,
    Connected,
    LinkDown,
    LinkEvent,
    ProtocolMismatch,
)
from shoe_controller.link.identity import ShoeIdentity

log = logging.getLogger(__name__)

#: Longest wait for the handshake or a command; the link core gives up sooner by itself
#: when the shoe does not answer (after its retransmissions).
ANSWER_TIMEOUT: Final = 15.0

Direction = Literal["host", "shoe"]
#: Receives every byte crossing the link, as it crosses: (direction, bytes).
WireTap = Callable[[Direction, bytes], None]
Clock = Callable[[], float]


class ShoeSession:
    """A link to the shoe on an open ``transport``; build it with :meth:`open`."""

    def __init__(
        self,
        transport: Transport,
        *,
        core: LinkCore | None = None,
        clock: Clock = time.monotonic,
        tap: WireTap | None = None,
    ) -> None:
        self.transport = transport
        self.address = transport.address
        self._core = core or LinkCore()
        self._clock = clock
        self._tap = tap
        self._events: deque[LinkEvent] = deque()
        self._lost: ShoeControllerError | None = None
        self.connected: Connected | None = None

    @classmethod
    def open(
        cls, address: str, *, tap: WireTap | None = None, clock: Clock = time.monotonic
    ) -> ShoeSession:
        """Open ``address`` (its errors propagate as they are) and shake hands. An address
        that can never reach a shoe is refused before anything is opened."""
        check_shoe_address(address)
        transport = open_transport(address)
        try:
            transport.open()
        except BaseException:
            transport.close()
            raise
        session = cls(transport, tap=tap, clock=clock)
        try:
            session.handshake()
        except BaseException:
            session.close()
            raise
        return session

    # -- life cycle ------------------------------------------------------------------

    def close(self) -> None:
        # When the link is gone there is nothing more to say to the shoe.
        with contextlib.suppress(ShoeControllerError):
            self._flush()
        self.transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def identity(self) -> ShoeIdentity:
        if self.connected is None:
            raise LinkError(f"no handshake with {self.address} yet")
        return self.connected.identity

    @property
    def in_process_simulator(self) -> bool:
        return self.transport.in_process_simulator

    # -- the conversation ------------------------------------------------------------

    def handshake(self, timeout: float = ANSWER_TIMEOUT) -> Connected:
        self._core.start(self._clock())
        self._flush()
        event = self.take(lambda e: isinstance(e, Connected), timeout)
        if event is None:
            raise LinkError(
                f"no answer from {self.address} within {timeout:g} s: check that the shoe is "
                "powered and that the address is the shoe's"
            )
        assert isinstance(event, Connected)
        self.connected = event
        return event

    def send(self, message: Message) -> CommandHandle:
        """Send a command; wait for its outcome with :meth:`outcome`."""
        handle = self._core.send_command(message, self._clock())
        self._flush()
        return handle

    def outcome(
        self, handle: CommandHandle, timeout: float = ANSWER_TIMEOUT
    ) -> CommandCompleted | CommandFailed:
        """Wait for the outcome of a command sent (a refusal is an outcome, not an error)."""
        event = self.take(
            lambda e: isinstance(e, CommandCompleted | CommandFailed) and e.handle is handle,
            timeout,
        )
        if event is None:
            name = type(handle.message).__name__
            raise LinkError(f"{self.address} did not answer {name} within {timeout:g} s")
        assert isinstance(event, CommandCompleted | CommandFailed)
        return event

    def command(self, message: Message, timeout: float = ANSWER_TIMEOUT) -> Message:
        """Send a command and return the shoe's reply; a refusal raises LinkError."""
        outcome = self.outcome(self.send(message), timeout)
        if isinstance(outcome, CommandFailed):
            raise LinkError(f"{outcome} (shoe at {self.address})")
        return outcome.reply

    def take(self, wanted: Callable[[LinkEvent], bool], timeout: float) -> LinkEvent | None:
        """The first waiting event ``wanted`` accepts, reading the link for at most
        ``timeout`` seconds; None when none came. Other events stay queued, in order. A
        lost link or an incompatible shoe raises."""
        end = self._clock() + timeout
        while True:
            for index, event in enumerate(self._events):
                if wanted(event):
                    del self._events[index]
                    return event
                if isinstance(event, LinkDown | ProtocolMismatch):
                    raise self._fatal(event)
            if self._clock() >= end:
                return None
            self.pump(end)

    def drain(self) -> list[LinkEvent]:
        """Every event waiting, taken; a lost link raises."""
        events = list(self._events)
        self._events.clear()
        for event in events:
            if isinstance(event, LinkDown | ProtocolMismatch):
                raise self._fatal(event)
        return events

    def pump(self, until: float) -> None:
        """Read once (waiting at most until ``until``), and let the core act on it."""
        now = self._clock()
        wait = until - now
        deadline = self._core.next_deadline()
        if deadline is not None:
            wait = min(wait, deadline - now)
        if self._core.state is LinkState.DOWN:
            wait = 0.0
            data = b""
        else:
            try:
                data = self.transport.read(max(wait, 0.0))
            except ShoeControllerError as exc:
                self._lost = exc
                self._core.connection_lost(str(exc), self._clock())
                data = b""
        now = self._clock()
        if data:
            if self._tap is not None:
                self._tap("shoe", data)
            self._core.receive_data(data, now)
        self._core.tick(now)
        self._flush()
        while (event := self._core.next_event()) is not None:
            self._events.append(event)

    def _flush(self) -> None:
        data = self._core.data_to_send()
        if not data:
            return
        try:
            self.transport.write(data)
        except ShoeControllerError as exc:
            self._lost = exc
            self._core.connection_lost(str(exc), self._clock())
            return
        if self._tap is not None:
            self._tap("host", data)

    def _fatal(self, event: LinkDown | ProtocolMismatch) -> ShoeControllerError:
        if isinstance(event, ProtocolMismatch):
            return LinkError(str(event))
        if self._lost is not None:
            return self._lost
        if self.connected is None:
            return LinkError(
                f"nothing at {self.address} answered like a shoe ({event.detail}): check that "
                "the address is the shoe's and that it is powered"
            )
        return LinkLost(f"{event} at {self.address}: check the cable and the shoe's power")
