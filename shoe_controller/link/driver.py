"""The link run over a real transport: the thread-safe handle on its reader thread.

:class:`LinkDriver` starts a :class:`~.reader.LinkReader` on a thread of its own, which
alone touches the link core: it connects, reconnects with back-off until stopped, and
delivers every :data:`LinkEvent` to ``on_event``, in order, from that thread only.

Any thread may call :meth:`~LinkDriver.send_command`, :meth:`~LinkDriver.acknowledge`,
:meth:`~LinkDriver.verify` and :meth:`~LinkDriver.stop`: each leaves its request in the
reader's inbox and interrupts its read (``Transport.interrupt()``), and the reader applies
it at once, so that an acknowledgement reaches the shoe without waiting for the next byte.

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
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from functools import partial
from typing import TypeVar

from firmware_protocol import GateMode, Message, SetGate
from shoe_controller.errors import LinkError, NotApproved
from shoe_controller.hal import discovery
from shoe_controller.hal.addresses import open_transport
from shoe_controller.link.approval import ApprovalList, SeedSource, Verdict
from shoe_controller.link.arming import Arming
from shoe_controller.link.core import LinkCore, LinkState
from shoe_controller.link.events import Connected, LinkEvent
from shoe_controller.link.identity import ShoeIdentity
from shoe_controller.link.locator import CandidateLister, Opener, ShoeLocator
from shoe_controller.link.pending import PendingCommand
from shoe_controller.link.reader import POLL_INTERVAL, LinkReader, Status, reconnect_backoff
from shoe_controller.link.sequence import ResumePoint
from shoe_controller.link.stats import LinkStats

log = logging.getLogger(__name__)

#: Gate modes that let cards out: refused unless the shoe is armed.
GATE_OPENING = frozenset({GateMode.DEAL, GateMode.STUB})
#: How long acknowledge() waits for the reader thread to send the acknowledgement (seconds);
#: it takes some tens of microseconds unless the reader is busy opening the transport.
ACK_HANDOFF = 0.01
#: How long a call waits for the reader thread to take its request (seconds); it takes
#: microseconds unless the reader is stuck opening the transport.
REQUEST_TIMEOUT = 5.0
#: How long a seeded verification on demand waits for the shoe's answer (seconds).
VERIFY_TIMEOUT = 10.0

T = TypeVar("T")


class LinkDriver:
    """Runs the link with the shoe at ``address``.

    ``on_event`` receives every :data:`LinkEvent`, on the reader thread; it must not block
    for long nor raise (hand the event to your own queue). ``resume`` says where the
    consumer left off in an earlier run with a shoe, or with each of several
    (:class:`ResumePoint`). ``clock`` gives
    the core its time; ``opener``, ``candidates``, ``reconnect_delay`` and ``seed_source``
    are there for tests and other programs. A malformed address raises ConfigError at once.
    """

    def __init__(
        self,
        address: str,
        approval: ApprovalList,
        on_event: Callable[[LinkEvent], None],
        *,
        resume: ResumePoint | Iterable[ResumePoint] | None = None,
        clock: Callable[[], float] = time.monotonic,
        opener: Opener = open_transport,
        candidates: CandidateLister = discovery.list_candidates,
        reconnect_delay: Callable[[int], float] = reconnect_backoff,
        seed_source: SeedSource = secrets.token_bytes,
        core: LinkCore | None = None,
        poll_interval: float = POLL_INTERVAL,
    ) -> None:
        if core is not None and resume:
            raise ValueError("give the resume points to the LinkCore you pass, not to both")
        self._reader = LinkReader(
            ShoeLocator(address, opener, candidates),
            core or LinkCore(resume=resume),
            Arming(approval, seed_source),
            on_event,
            clock=clock,
            reconnect_delay=reconnect_delay,
            poll_interval=poll_interval,
        )
        self._thread: threading.Thread | None = None

    # -- life cycle ------------------------------------------------------------------

    @property
    def address(self) -> str:
        return self._reader.locator.address

    def start(self) -> None:
        """Start the reader thread; it connects, and reconnects, by itself."""
        if self._thread is not None:
            raise RuntimeError("the link driver was already started")
        self._thread = threading.Thread(
            target=self._reader.run, name=f"shoe-link {self.address}", daemon=True
        )
        self._reader.inbox.open()  # requests wait for the thread from now on
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Close the link and join the reader thread (it delivers LinkDown("stopped"))."""
        self._reader.stopping.set()
        self._reader.inbox.interrupt()
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

    # -- state, as the reader thread published it last --------------------------------

    @property
    def armed(self) -> bool:
        """True only while an approved (and, when asked, verified) shoe is connected."""
        return self._reader.status.armed

    @property
    def verdict(self) -> Verdict | None:
        return self._reader.status.verdict

    @property
    def identity(self) -> ShoeIdentity | None:
        """The shoe's identity from its latest Hello (kept after the link is lost)."""
        return self._reader.status.identity

    @property
    def state(self) -> LinkState:
        return self._reader.status.state

    @property
    def stats(self) -> LinkStats:
        """A copy of the core's counters, taken by the reader thread."""

        def take(done: Future[LinkStats]) -> None:
            done.set_result(replace(self._reader.core.stats))

        copy = self._on_reader(take)
        try:
            return copy.result(REQUEST_TIMEOUT)
        except TimeoutError:
            raise LinkError(
                f"the link's reader thread did not answer within {REQUEST_TIMEOUT:g} s"
            ) from None

    def wait_connected(self, timeout: float | None = None) -> Connected | None:
        """The latest Connected delivered, once there is one and the link is up."""
        reader = self._reader
        with reader.changed:
            reader.changed.wait_for(
                lambda: reader.status.connected is not None or reader.stopping.is_set(),
                timeout,
            )
            return reader.status.connected

    # -- the consumer's calls --------------------------------------------------------

    def send_command(self, message: Message) -> PendingCommand:
        """Send a command; wait on the returned handle, or watch ``on_event``.

        Opening the gate (SetGate DEAL or STUB) raises NotApproved unless the shoe is
        armed, naming what did not match; a message that is not a command the consumer
        may send raises ValueError, and a stopped driver LinkError.
        """
        self._require_started()
        pending = self._prepare(message)
        if not self._reader.inbox.post(partial(self._reader.send, [pending])):
            raise LinkError(f"{type(message).__name__} not sent: the link driver was stopped")
        return pending

    def acknowledge(self, up_to_seq: int, then: Sequence[Message] = ()) -> list[PendingCommand]:
        """Every event up to ``up_to_seq`` is durable (journaled); tell the shoe now, and
        send the commands ``then`` right behind, in the same write: after a card, its
        acknowledgement and the gate's next limit reach the shoe together.

        Acknowledging an event that was not delivered raises ValueError. A command of
        ``then`` that :meth:`send_command` would refuse is left out, and its refusal
        raised once the acknowledgement and the other commands are on their way; the
        handles of those sent are returned otherwise."""
        delivered = self._reader.delivered_seq
        if up_to_seq > delivered:
            raise ValueError(
                f"cannot acknowledge event {up_to_seq}: events were delivered up to {delivered}"
            )
        commands: list[PendingCommand] = []
        refusal: Exception | None = None
        for message in then:
            try:
                commands.append(self._prepare(message))
            except (NotApproved, ValueError) as exc:
                refusal = refusal or exc
        # The caller lets the reader run now, so the shoe hears it before the caller goes on.
        handoff = 0.0 if threading.current_thread() is self._thread else ACK_HANDOFF
        request = partial(self._reader.acknowledge, up_to_seq, commands)
        if not self._reader.inbox.post(request, handoff):
            log.debug("event %d acknowledged after the link stopped: too late", up_to_seq)
            if commands:
                raise LinkError("commands not sent: the link driver was stopped")
        if refusal is not None:
            raise refusal
        return commands

    def _prepare(self, message: Message) -> PendingCommand:
        """The handle of ``message``, once it is a command the consumer may send now."""
        if isinstance(message, SetGate) and message.mode in GATE_OPENING:
            status = self._reader.status
            if not status.armed:
                raise NotApproved(_not_armed_reason(message, status))
        LinkCore.check_command(message)
        return PendingCommand(message)

    def verify(self, timeout: float = VERIFY_TIMEOUT) -> Verdict:
        """Check the connected shoe against the approved list again, with a new seeded
        verification when its entry names an image; returns the new verdict. Raises
        LinkError when no shoe is connected or the verification does not end in time."""
        self._require_started()
        if threading.current_thread() is self._thread:
            raise RuntimeError("verify() waits for the shoe: do not call it from on_event")
        verdict = self._on_reader(self._reader.verify)
        try:
            return verdict.result(timeout)
        except TimeoutError:
            raise LinkError(
                f"the shoe's verification did not end within {timeout:g} s: check its link"
            ) from None

    def _require_started(self) -> None:
        if self._thread is None:
            raise RuntimeError("start() the link driver first")

    def _on_reader(self, fn: Callable[[Future[T]], None]) -> Future[T]:
        """Run ``fn(future)`` on the reader thread (here, when none runs: nothing else
        touches the core then); the future ``fn`` completes, or its failure."""
        future: Future[T] = Future()

        def run() -> None:
            try:
                fn(future)
            except Exception as exc:  # the caller's to see
                if not future.done():
                    future.set_exception(exc)

        if not self._reader.inbox.post(run):
            run()
        return future


def _not_armed_reason(message: SetGate, status: Status) -> str:
    what = f"SetGate {message.mode.name} refused: the shoe is not armed"
    if status.state is not LinkState.CONNECTED:
        return f"{what}: no shoe is connected"
    if status.verdict is None:
        return f"{what}: its approval is still being checked"
    return f"{what}: {status.verdict.reason}"
