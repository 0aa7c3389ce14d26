"""The public projection of the journal: which records anyone may see, and as what.

:func:`public_event` turns one journal record into the event of the ``--json`` stream that
it stands for, or None for a record that is not public: card identities (``card``,
``stub_card``, ``unassigned_card``, ``security``), the croupier's inputs, sign-ins, the
table's bookkeeping. The live stream, the box's API and the floor's forwarder all use it,
so they publish exactly the same objects, and the journal is the outbox.

Every record kind is listed in :data:`PROJECTIONS`, with its projection or None; a test
fails when a kind is added without saying whether and how it is public. Only
``round_closed`` carries identities, and it is only written when the croupier closes a
dealt round, with the banker's and the wagered hands (E1, E2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Final

from shoe_controller.journal.records import Kind, Record
from shoe_controller.service import events as ev

Fields = dict[str, Any]


def public_event(record: Record) -> ev.ServiceEvent | None:
    """The public event for ``record``, stamped with the record's time and round."""
    project = PROJECTIONS[Kind(record.kind)]
    if project is None:
        return None
    fields = project(record.payload_object())
    if fields is None:
        return None
    cls, values = fields
    if cls is ev.PromptEvent:
        # A prompt is named by its record's number, which an input answering it gives back.
        values = {"id": record.seq, **values}
    return cls(ts=parse_wall(record.wall), round=record.round_id, **values)


def parse_wall(wall: str) -> datetime:
    """A record's wall time (``2025-05-01T20:15:03.120000Z``) as an aware datetime."""
    return datetime.fromisoformat(wall.replace("Z", "+00:00")).astimezone(UTC)


#: What the ``started`` event says of the table's rules: what a console lays out. Beside
#: them, ``external_rng``: the external generator configured, if any.
TABLE_KEYS: Final = ("positions", "cards_per_position", "stub_size", "seat_labels")


def _started(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    profile = p.get("profile")
    name = f"{profile['name']} {profile['version']}" if isinstance(profile, dict) else None
    rules = p.get("rules")
    table = {k: rules[k] for k in TABLE_KEYS if k in rules} if isinstance(rules, dict) else None
    if table is not None:
        table["external_rng"] = _external_rng(p)
    return ev.StartedEvent, {
        "version": str(p["version"]),
        "profile": name,
        "bench": bool(p.get("bench", False)),
        "table": table,
    }


def _external_rng(p: Fields) -> Fields | None:
    """The external generator a dealer may enter a number of (B1): its device, and whether
    the profile requires its signature; None where none is configured."""
    device = p.get("external_rng")
    if not isinstance(device, dict):
        return None
    evidence = p.get("evidence")
    required = isinstance(evidence, dict) and evidence.get("external_rng_signature") == "required"
    return {
        "device": str(device.get("device", "")),
        "signature": "required" if required else "optional",
    }


def _stopped(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    return ev.StoppedEvent, {"reason": str(p["reason"])}


def _connected(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    ident = p["identity"]
    return ev.ConnectedEvent, {
        "device": str(p.get("device", "")),
        "model": str(ident["model"]),
        "serial": str(ident["serial_number"]),
        "firmware": str(ident["firmware_version"]),
        "approved": bool(p["approved"]),
        "reason": str(p["reason"]),
    }


def _link(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    return ev.LinkStatusEvent, {"status": str(p["state"]), "message": str(p.get("detail", ""))}


def _shoe_event(p: Fields) -> tuple[type[ev.ServiceEvent], Fields] | None:
    message = p["message"]
    if message.get("type") != "ButtonPressed":
        return None
    return ev.ButtonEvent, {"button": str(message["button"])}


_PROPOSALS = {"void_misdeal": "misdeal", "void_deck_removed": "no-misdeal"}


def _prompt(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    proposal = p.get("proposal")
    if isinstance(proposal, str):
        proposal = _PROPOSALS.get(proposal)
    elif isinstance(proposal, bool) or not isinstance(proposal, int):
        proposal = None
    return ev.PromptEvent, {
        "need": str(p["need"]),
        "message": str(p["message"]),
        "rule": p.get("rule") or None,
        "proposal": proposal,
        "evidence": p.get("evidence"),
        "role": str(p.get("role") or "dealer"),
        "options": tuple(str(o) for o in p.get("options") or ()),
        # A prompt journaled before prompts had codes has none: its need alone words it.
        "code": str(p["code"]) if p.get("code") else None,
        "values": dict(values) if isinstance(values := p.get("values"), dict) else {},
    }


def _state(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    return ev.StateEvent, {"state": str(p["new"]), "previous": p.get("old")}


def _wagers(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    return ev.WagersEvent, {"positions": tuple(int(x) for x in p["positions"])}


def _bets_closed(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    return ev.BetsClosedEvent, {"wagered": tuple(int(x) for x in p["wagered"])}


def _start_position(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    raw = [int(x) for x in p["raw"]]
    if p["method"] == "dice":
        return ev.StartPositionEvent, {
            "position": int(p["position"]),
            "method": "dice",
            "dice": (raw[0], raw[1], raw[2]),
        }
    return ev.StartPositionEvent, {"position": int(p["position"]), "method": "rng", "value": raw[0]}


def _wager_settled(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    return ev.WagerSettledEvent, {}


def _card(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    # The record holds the card; the event says only where it went (E1).
    return ev.CardEvent, {"index": int(p["index"]), "position": int(p["position"])}


def _stub_counted(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    figures = p.get("figures")
    return ev.StubEvent, {
        "count": int(p["count"]),
        "source": str(p["source"]),
        "figures": dict(figures) if isinstance(figures, dict) else None,
        "agrees": p.get("agrees"),
        "contradicts": bool(p.get("contradicts", False)),
    }


def _stub_accepted(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    return ev.StubAcceptedEvent, {
        "count": int(p["count"]),
        "by": str(p["by"]),
        "contradicts": bool(p.get("contradicts", False)),
    }


def _determination(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    return ev.DeterminationEvent, {
        "misdealt": bool(p["misdealt"]),
        "contradicts": bool(p.get("contradicts", False)),
    }


def _fault(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    return ev.FaultEvent, {
        "code": str(p["code"]),
        "message": str(p["reason"]),
        "rule": p.get("rule") or None,
    }


def _fault_cleared(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    return ev.FaultClearedEvent, {"by": str(p["by"])}


def _notice(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    return ev.NoticeEvent, {"code": str(p["code"]), "message": str(p["reason"])}


def _round_ended(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    counts = p.get("cards_per_position") or {}
    return ev.RoundEndEvent, {
        "outcome": str(p["outcome"]),
        "reason": str(p["reason"]),
        "start_position": p.get("start_position"),
        "cards_per_position": {str(k): int(v) for k, v in counts.items()},
        "wagered": tuple(int(x) for x in p["wagered"]),
        "collected_unseen": tuple(int(x) for x in p["collected_unseen"]),
    }


def _round_closed(p: Fields) -> tuple[type[ev.ServiceEvent], Fields]:
    hands = p["hands"]
    return ev.RoundClosedEvent, {
        "hands": {str(position): tuple(str(c) for c in cards) for position, cards in hands.items()}
    }


#: Every record kind and its public projection; None: never public.
PROJECTIONS: Final[
    Mapping[Kind, Callable[[Fields], tuple[type[ev.ServiceEvent], Fields] | None] | None]
] = MappingProxyType(
    {
        Kind.SERVICE_STARTED: _started,
        Kind.SERVICE_STOPPED: _stopped,
        Kind.SHOE_CONNECTED: _connected,
        Kind.LINK: _link,
        Kind.SHOE_EVENT: _shoe_event,
        Kind.INPUT: None,
        Kind.ACCESS: None,
        Kind.PROMPT: _prompt,
        Kind.TABLE: None,
        Kind.STATE: _state,
        Kind.GATE: None,
        Kind.ROUND_OPENED: None,
        Kind.WAGERS: _wagers,
        Kind.BETS_CLOSED: _bets_closed,
        Kind.START_POSITION: _start_position,
        Kind.WAGER_SETTLED: _wager_settled,
        Kind.CARD: _card,
        Kind.STUB_CARD: None,
        Kind.UNASSIGNED_CARD: None,
        Kind.SECURITY: None,
        Kind.STUB_COUNTED: _stub_counted,
        Kind.STUB_ACCEPTED: _stub_accepted,
        # The cards missing or read twice: the restricted journal's alone (D3, E1).
        Kind.DECK_DEFECT: None,
        Kind.DETERMINATION: _determination,
        Kind.FAULT: _fault,
        Kind.FAULT_CLEARED: _fault_cleared,
        Kind.NOTICE: _notice,
        Kind.ROUND_ENDED: _round_ended,
        Kind.ROUND_CLOSED: _round_closed,
        Kind.RECOVERY: None,
        Kind.CLOCK_STEP: None,
        Kind.SOFTWARE_MANIFEST: None,
        Kind.EXTERNAL_RNG: None,
    }
)
