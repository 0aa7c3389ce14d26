"""What the link tells its consumer: frozen event objects, one class per kind.

:class:`~shoe_controller.link.core.LinkCore` produces them from ``next_event()``; the
driver delivers the same objects to its ``on_event`` callback, adding the approval verdict
to :class:`Connected` and adding :class:`Reconnecting`, :class:`ApprovalChanged` and
:class:`DriverError`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Literal

from firmware_protocol import Message, Nak
from shoe_controller.link.approval import Verdict
from shoe_controller.link.identity import ShoeIdentity

_handle_ids = itertools.count(1)


@dataclass(eq=False)
class CommandHandle:
    """One command given to the link; compared by identity.

    ``seq`` is the sequence number its frames carry, given when it first goes out (0
    until then); every retransmission carries the same one. A command the shoe answered
    with Nak(BUSY) goes out again as a new command, under the next number
    (docs/protocol.md 9): ``seq`` is then that one.
    """

    message: Message
    seq: int = 0
    id: int = field(default_factory=lambda: next(_handle_ids))

    def __repr__(self) -> str:
        return f"CommandHandle(#{self.id} seq={self.seq} {type(self.message).__name__})"


@dataclass(frozen=True)
class Connected:
    """A handshake completed: the shoe's identity and the protocol version agreed.

    ``rebooted`` is true when the shoe started again since the previous handshake (a new
    boot id); ``verdict`` is filled in by the driver (None from the core alone).
    """

    identity: ShoeIdentity
    version: int
    rebooted: bool = False
    verdict: Verdict | None = None

    def __str__(self) -> str:
        text = f"connected to {self.identity} (protocol {self.version})"
        if self.verdict is not None and not self.verdict.approved:
            text += f"; NOT ARMED: {self.verdict.reason}"
        return text


@dataclass(frozen=True)
class ShoeEvent:
    """One sequenced event from the shoe, delivered exactly once and in order.

    ``seq`` is the link's number of the event: acknowledge it with ``acknowledge(seq)``
    once it is durable. ``shoe_seq`` is the shoe's own number of it, which a consumer keeps
    to resume after a restart (:class:`~shoe_controller.link.sequence.ResumePoint`); the
    two differ once the shoe's numbering started over. ``retransmitted`` says the shoe had
    sent it before (for diagnostics: a line fault or a reconnect).
    """

    seq: int
    message: Message
    retransmitted: bool = False
    shoe_seq: int = field(kw_only=True)


@dataclass(frozen=True)
class ShoeReport:
    """A message from the shoe that is neither a sequenced event nor the reply completing
    a command: for example the steps of a self-test after its Ack."""

    message: Message


@dataclass(frozen=True)
class CommandCompleted:
    """The shoe accepted the command: ``reply`` is its Ack or the reply message."""

    handle: CommandHandle
    reply: Message


CommandFailure = Literal[
    "nak", "no_answer", "link_down", "shoe_restarted", "incompatible", "superseded"
]


@dataclass(frozen=True)
class CommandFailed:
    """The command did not complete.

    ``reason``: "nak" (the shoe refused it, see ``nak``), "no_answer" (no reply after every
    attempt), "link_down" (the link was lost, or was not up, before a reply),
    "shoe_restarted" (the shoe restarted while it was pending), "incompatible" (the shoe
    speaks no protocol version this controller speaks), "superseded" (a SetGate still
    waiting to go out when a later SetGate was given: only the later one is sent).
    """

    handle: CommandHandle
    reason: CommandFailure
    nak: Nak | None = None

    def __str__(self) -> str:
        name = type(self.handle.message).__name__
        if self.nak is not None:
            return f"{name} refused by the shoe: {self.nak.reason.name} {self.nak.text}".strip()
        return f"{name} failed: {self.reason.replace('_', ' ')}"


LossReason = Literal["shoe_restarted", "not_held", "sequence_reset"]


@dataclass(frozen=True)
class EventsLost:
    """Events the shoe issued will never arrive: ``expected_seq`` up to ``got_seq - 1``.

    ``reason``: "shoe_restarted" (the shoe restarted and did not keep them), "not_held"
    (the shoe says it no longer holds events that were never acknowledged), or
    "sequence_reset" (the shoe's event numbering went backwards, so events received since
    may have been taken for duplicates). Delivery continues from ``got_seq``. Under rule F2
    a round in progress is void.
    """

    expected_seq: int
    got_seq: int
    reason: LossReason

    @property
    def count(self) -> int | None:
        """How many events were lost, when the numbering tells (None for a reset)."""
        if self.reason == "sequence_reset":
            return None
        return self.got_seq - self.expected_seq

    def __str__(self) -> str:
        what = {
            "shoe_restarted": "the shoe restarted without keeping them",
            "not_held": "the shoe no longer holds them",
            "sequence_reset": "the shoe's event numbering went backwards",
        }[self.reason]
        if self.reason == "sequence_reset":
            return f"events may have been lost: {what} (expected {self.expected_seq})"
        return f"events {self.expected_seq}..{self.got_seq - 1} were lost: {what}"


DownReason = Literal["silence", "no_answer", "transport", "stopped"]


@dataclass(frozen=True)
class LinkDown:
    """The link is lost. ``reason``: "silence" (no valid frame within the silence limit),
    "no_answer" (the shoe never answered the handshake), "transport" (the device or its
    driver failed, see ``detail``), "stopped" (our side closed it)."""

    reason: DownReason
    detail: str = ""

    def __str__(self) -> str:
        what = {
            "silence": "the shoe went silent",
            "no_answer": "the shoe did not answer the handshake",
            "transport": "the connection failed",
            "stopped": "the link was stopped",
        }[self.reason]
        return f"link lost: {what}" + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class ProtocolMismatch:
    """The shoe speaks no protocol version this controller speaks; nothing is exchanged
    until it reports a compatible firmware (for example after an update and restart)."""

    shoe_versions: tuple[int, ...]
    host_versions: tuple[int, ...]
    detail: str = ""

    def __str__(self) -> str:
        shoe = ", ".join(map(str, self.shoe_versions)) or "none reported"
        host = ", ".join(map(str, self.host_versions))
        text = (
            f"incompatible shoe: it speaks protocol version(s) {shoe}, this controller "
            f"speaks {host}; update the shoe's firmware or the controller"
        )
        return text + (f" ({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class Reconnecting:
    """The driver could not open the shoe (attempt ``attempt`` since the link was last up,
    failing with ``detail``) and tries again in ``delay`` seconds."""

    attempt: int
    delay: float
    detail: str

    def __str__(self) -> str:
        return f"cannot open the shoe ({self.detail}); retrying in {self.delay:g} s"


@dataclass(frozen=True)
class ApprovalChanged:
    """The driver's approval verdict changed after the handshake (seeded verification on
    demand, or its result arriving)."""

    verdict: Verdict

    def __str__(self) -> str:
        return str(self.verdict)


@dataclass(frozen=True)
class DriverError:
    """An unexpected exception in the driver's reader thread; the link is then treated as
    lost and reconnected. ``detail`` is the exception's one-line description."""

    detail: str

    def __str__(self) -> str:
        return f"link driver error: {self.detail}"


LinkEvent = (
    Connected
    | ShoeEvent
    | ShoeReport
    | CommandCompleted
    | CommandFailed
    | EventsLost
    | LinkDown
    | ProtocolMismatch
    | Reconnecting
    | ApprovalChanged
    | DriverError
)
