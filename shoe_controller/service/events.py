"""What the table controller publishes to its subscribers (a table's UI, the CLI).

These events are the integration contract documented in docs/integrators.md. Each becomes
one JSON object with ``event``, ``ts`` (ISO 8601, UTC) and ``round`` (id or null). Only
:class:`RoundClosed` ever carries card identities: the banker's hand and the hands of the
wagered positions of a dealt round, after the croupier closed it (rules E1, E2).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, ClassVar


@dataclass(frozen=True, kw_only=True)
class ServiceEvent:
    NAME: ClassVar[str]
    ts: datetime = field(default_factory=lambda: datetime.now(UTC))
    round: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "event": self.NAME,
            "ts": self.ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "round": self.round,
        }
        for f in fields(self):
            if f.name not in ("ts", "round"):
                out[f.name] = _plain(getattr(self, f.name))
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, frozenset | set):
        return sorted(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, kw_only=True)
class Connected(ServiceEvent):
    NAME = "connected"
    device: str
    model: str
    serial: str
    firmware: str
    approved: bool
    reason: str


@dataclass(frozen=True, kw_only=True)
class LinkChanged(ServiceEvent):
    NAME = "link"
    status: str  # "lost", "reconnecting", "restored", "events_lost"
    message: str


@dataclass(frozen=True, kw_only=True)
class StateChanged(ServiceEvent):
    NAME = "state"
    state: str
    previous: str | None = None


@dataclass(frozen=True, kw_only=True)
class StartPosition(ServiceEvent):
    NAME = "start_position"
    position: int
    method: str  # "dice" or "rng"
    dice: tuple[int, int, int] | None = None
    value: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        # The contract: "dice" carries `dice`, "rng" carries `value`, never both.
        if self.method == "dice":
            out.pop("value")
        else:
            out.pop("dice")
        return out


@dataclass(frozen=True, kw_only=True)
class CardDealt(ServiceEvent):
    NAME = "card"
    index: int
    position: int


@dataclass(frozen=True, kw_only=True)
class StubCounted(ServiceEvent):
    NAME = "stub"
    count: int


@dataclass(frozen=True, kw_only=True)
class FaultRaised(ServiceEvent):
    NAME = "fault"
    code: str
    message: str
    rule: str | None = None


@dataclass(frozen=True, kw_only=True)
class FaultCleared(ServiceEvent):
    NAME = "fault_cleared"
    by: str


@dataclass(frozen=True, kw_only=True)
class Prompt(ServiceEvent):
    """The controller needs a croupier's or attendant's input to go on."""

    NAME = "prompt"
    need: str  # "no_more_bets", "start_position", "wager_settled", "misdeal_determination",
    # "attendant_clear", "close_round", "remove_deck", "new_deck"
    message: str
    proposal: str | None = None
    evidence: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class RoundEnded(ServiceEvent):
    NAME = "round_end"
    outcome: str
    reason: str
    start_position: int | None
    cards_per_position: dict[str, int]
    wagered: tuple[int, ...]
    collected_unseen: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class RoundClosed(ServiceEvent):
    NAME = "round_closed"
    hands: dict[str, tuple[str, ...]]


@dataclass(frozen=True, kw_only=True)
class Stopped(ServiceEvent):
    NAME = "stopped"
    reason: str


@dataclass(frozen=True, kw_only=True)
class ButtonPressed(ServiceEvent):
    NAME = "button"
    button: str  # "no_more_bets", "confirm", "call_attendant"
