"""What the table controller publishes: the public events of the ``--json`` stream.

These events are the integration contract documented in docs/integrators.md (and, for the
box's API and the floor, in the event schema). Each becomes one JSON object with ``event``
(its :attr:`~ServiceEvent.NAME`), ``ts`` (ISO 8601, UTC, milliseconds) and ``round`` (id
or null), then its own keys. Every event but the transient link status ``reconnecting`` is
the public projection of one journal record (:mod:`shoe_controller.service.public`), so
that the stream, the box's API and the floor see exactly what the journal holds.

Only :class:`RoundClosedEvent` ever carries card identities: the banker's hand and the
hands of the wagered positions of a dealt round, after the croupier closed it (E1, E2).
Class names follow the wire name, ``<WireName>Event``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, ClassVar

from shoe_controller.plain import plain


def format_ts(moment: datetime) -> str:
    """``2026-11-29T12:31:07.054Z``: the events' time stamp."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, kw_only=True)
class ServiceEvent:
    NAME: ClassVar[str]
    ts: datetime = field(default_factory=lambda: datetime.now(UTC))
    round: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.NAME, "ts": format_ts(self.ts), "round": self.round}
        for f in fields(self):
            if f.name not in ("ts", "round"):
                out[f.name] = plain(getattr(self, f.name))
        return out


@dataclass(frozen=True, kw_only=True)
class StartedEvent(ServiceEvent):
    """The service started: what runs (the profile's name and version, a bench run) and the
    table its rules profile gives (``table``: positions, cards per position, the stub's
    size, the seat labels by position)."""

    NAME = "started"
    version: str
    profile: str | None = None
    bench: bool = False
    table: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class StoppedEvent(ServiceEvent):
    NAME = "stopped"
    reason: str


@dataclass(frozen=True, kw_only=True)
class ConnectedEvent(ServiceEvent):
    NAME = "connected"
    device: str
    model: str
    serial: str
    firmware: str
    approved: bool
    reason: str


@dataclass(frozen=True, kw_only=True)
class LinkStatusEvent(ServiceEvent):
    NAME = "link"
    #: "lost", "restored", "reconnecting", "events_lost", "approval" or "error".
    status: str
    message: str


@dataclass(frozen=True, kw_only=True)
class StateEvent(ServiceEvent):
    NAME = "state"
    state: str
    previous: str | None = None


@dataclass(frozen=True, kw_only=True)
class PromptEvent(ServiceEvent):
    """A person's input is needed to go on (``need``: see docs/integrators.md), given by a
    ``role`` (dealer or supervisor, E4); ``code`` and ``values`` say which variant of the
    need it is and what its words are made of. ``id`` names this prompt: an input that
    answers it gives it back, and is refused once the table has moved on."""

    NAME = "prompt"
    #: The sequence number of the prompt's journal record: unique, and never the same
    #: after a restart (the journal goes on counting).
    id: int
    need: str
    message: str
    rule: str | None = None
    #: For ``misdeal_determination``: "misdeal", "no-misdeal", or None when the record
    #: cannot decide; for ``stub_count`` the shoe's count, for ``accept_stub_count`` the
    #: croupier's (a proposal, never filled in as the answer).
    proposal: str | int | None = None
    evidence: dict[str, Any] | None = None
    #: Who gives the input: "dealer" (or a supervisor) or "supervisor".
    role: str = "dealer"
    #: Inputs beside the usual one that answer it ("void_round": a clear that voids).
    options: tuple[str, ...] = ()
    #: The prompt's variant (``procedure.prompts.CODES``), which a console words in its
    #: own language with ``values``; None for a prompt journaled before codes.
    code: str | None = None
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class WagersEvent(ServiceEvent):
    """The positions entered as holding a wager while bets are open (A3)."""

    NAME = "wagers"
    positions: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class BetsClosedEvent(ServiceEvent):
    NAME = "bets_closed"
    wagered: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class StartPositionEvent(ServiceEvent):
    NAME = "start_position"
    position: int
    method: str  # "dice" or "rng"
    dice: tuple[int, int, int] | None = None
    value: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        # The contract: "dice" carries `dice`, "rng" carries `value`, never both.
        out.pop("value" if self.method == "dice" else "dice")
        return out


@dataclass(frozen=True, kw_only=True)
class WagerSettledEvent(ServiceEvent):
    NAME = "wager_settled"


@dataclass(frozen=True, kw_only=True)
class CardEvent(ServiceEvent):
    """A card left the shoe and belongs to ``position``: never its identity (E1)."""

    NAME = "card"
    index: int
    position: int


@dataclass(frozen=True, kw_only=True)
class StubEvent(ServiceEvent):
    """A count of the stub: the shoe's (evidence and proposal), or the croupier's with the
    figures it was checked against ({"shoe", "read", "deal"}) and whether they agree (D1)."""

    NAME = "stub"
    count: int
    #: "shoe" (its reader) or "croupier" (by hand).
    source: str = "shoe"
    figures: dict[str, int | None] | None = None
    agrees: bool | None = None
    #: The croupier's count is against a conclusive reading of the deck (D4).
    contradicts: bool = False


@dataclass(frozen=True, kw_only=True)
class StubAcceptedEvent(ServiceEvent):
    """A supervisor accepted the croupier's count that the figures disagree with (D1)."""

    NAME = "stub_accepted"
    count: int
    by: str
    #: The count accepted is against a conclusive reading, which decides the stub (D4).
    contradicts: bool = False


@dataclass(frozen=True, kw_only=True)
class DeterminationEvent(ServiceEvent):
    """The croupier's determination (D2); ``contradicts`` when a supervisor's went against
    a conclusive record."""

    NAME = "determination"
    misdealt: bool
    contradicts: bool = False


@dataclass(frozen=True, kw_only=True)
class FaultEvent(ServiceEvent):
    NAME = "fault"
    code: str
    message: str
    rule: str | None = None


@dataclass(frozen=True, kw_only=True)
class FaultClearedEvent(ServiceEvent):
    NAME = "fault_cleared"
    by: str


@dataclass(frozen=True, kw_only=True)
class NoticeEvent(ServiceEvent):
    """Journaled for maintenance; blocks nothing."""

    NAME = "notice"
    code: str
    message: str


@dataclass(frozen=True, kw_only=True)
class ButtonEvent(ServiceEvent):
    NAME = "button"
    button: str  # "no_more_bets", "confirm", "call_attendant"


@dataclass(frozen=True, kw_only=True)
class RoundEndEvent(ServiceEvent):
    NAME = "round_end"
    outcome: str
    reason: str
    start_position: int | None
    cards_per_position: dict[str, int]
    wagered: tuple[int, ...]
    collected_unseen: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class RoundClosedEvent(ServiceEvent):
    NAME = "round_closed"
    hands: dict[str, tuple[str, ...]]


def event_types() -> tuple[type[ServiceEvent], ...]:
    """Every event class, in the order of this module."""
    return tuple(ServiceEvent.__subclasses__())
