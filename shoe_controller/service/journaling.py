"""How the procedure's decisions and the shoe's events become journal records.

The journal is the restricted audit record: it is the one place where card identities are
kept (rule E1), in ``card`` and ``stub_card`` records and in the round record. A
``shoe_event`` record never carries an identity: the card is journaled once, by the
procedure's restricted decision for it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator
from typing import Any

from firmware_protocol import Card, CardDrawn, Message
from shoe_controller.journal.records import ROUND_KINDS, Kind
from shoe_controller.journal.writer import Journal
from shoe_controller.link.identity import ShoeIdentity
from shoe_controller.procedure import decisions as d
from shoe_controller.procedure.start import StartMethod

Record = tuple[Kind, dict[str, Any], str | None]


def identity_record(identity: ShoeIdentity) -> dict[str, Any]:
    return {
        "model": identity.model,
        "serial_number": identity.serial_number,
        "hardware_revision": identity.hardware_revision,
        "firmware_version": identity.firmware_version,
        "firmware_digest": identity.firmware_digest,
        "protocol_versions": list(identity.protocol_versions),
        "boot_id": identity.boot_id,
    }


def shoe_event_record(seq: int, message: Message, shoe: tuple[str, int] | None) -> dict[str, Any]:
    """The ``shoe_event`` payload: the shoe's sequence number, which shoe and boot it
    counts in (so a restarted controller knows what it already holds), and the message."""
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(message):  # type: ignore[arg-type]
        value = getattr(message, f.name)
        if isinstance(value, Card):
            continue  # the identity is journaled once, by the procedure's AuditCard
        fields[f.name] = plain(value)
    if isinstance(message, CardDrawn):
        fields["read"] = not message.card.is_unreadable
    record: dict[str, Any] = {"seq": seq, "message": {"type": type(message).__name__, **fields}}
    if shoe is not None:
        record["serial_number"], record["boot_id"] = shoe
    return record


def resume_point(journal: Journal) -> tuple[str, int, int] | None:
    """(serial number, boot id, event seq) of the last shoe event journaled, if any."""
    last = journal.last_record(Kind.SHOE_EVENT)
    if last is None:
        return None
    payload = last.payload_object()
    if "serial_number" not in payload or "boot_id" not in payload:
        return None
    return str(payload["serial_number"]), int(payload["boot_id"]), int(payload["seq"])


def decision_records(decisions: list[d.Decision], round_id: str | None) -> Iterator[Record]:
    """The records for ``decisions``, in order. Decisions that only prompt a person
    (AskCroupier) or command the shoe (GateCommand) are journaled as what they are, so the
    record shows when the gate opened and what the croupier was asked."""
    positions: dict[int, int] = {}
    for decision in decisions:
        if isinstance(decision, d.CardAssigned):
            positions[decision.draw_index] = decision.position
    for decision in decisions:
        rid = getattr(decision, "round_id", None) or round_id
        record = _record(decision, positions)
        if record is not None:
            kind, payload = record
            yield kind, payload, rid if kind in ROUND_KINDS or rid else None


def _record(decision: d.Decision, positions: dict[int, int]) -> tuple[Kind, dict[str, Any]] | None:
    if isinstance(decision, d.StateChanged):
        return Kind.STATE, {"old": decision.old, "new": decision.new, "trigger": decision.trigger}
    if isinstance(decision, d.RoundOpened):
        return Kind.ROUND_OPENED, {"round_id": decision.round_id}
    if isinstance(decision, d.BetsClosed):
        return Kind.BETS_CLOSED, {"wagered": list(decision.wagered)}
    if isinstance(decision, d.StartPositionSet):
        start = decision.start
        method = "dice" if start.method is StartMethod.DICE else "rng"
        return Kind.START_POSITION, {
            "method": method,
            "source": str(start.method),
            "raw": list(start.raw),
            "position": start.position,
        }
    if isinstance(decision, d.WagerSettled):
        return Kind.WAGER_SETTLED, {"by": "croupier"}
    if isinstance(decision, d.AuditCard):
        if decision.destination == "stub":
            return Kind.STUB_CARD, {"index": decision.draw_index, "card": decision.card.text}
        if decision.destination == "unassigned":
            return Kind.FAULT, {
                "code": "unassigned_card",
                "reason": f"card {decision.draw_index} left the shoe outside the procedure",
                "rule": "F1",
                "index": decision.draw_index,
                "card": decision.card.text,
            }
        return Kind.CARD, {
            "index": decision.draw_index,
            "position": decision.destination,
            "card": decision.card.text,
            "gate_mode": "deal",
        }
    if isinstance(decision, d.StubCounted):
        return Kind.STUB_COUNTED, {
            "count": decision.count,
            "expected": decision.expected,
            "source": "shoe",
        }
    if isinstance(decision, d.DeterminationRecorded):
        return Kind.DETERMINATION, {
            "misdealt": decision.misdealt,
            "by": "croupier",
            "proposal": str(decision.proposal) if decision.proposal else None,
        }
    if isinstance(decision, d.FaultRaised):
        return Kind.FAULT, {
            "code": str(decision.code),
            "reason": decision.reason,
            "rule": decision.rule,
            "voids_round": decision.voids_round,
        }
    if isinstance(decision, d.FaultCleared):
        return Kind.FAULT_CLEARED, {"by": decision.by, "codes": [str(c) for c in decision.codes]}
    if isinstance(decision, d.RoundEnded):
        counts = decision.cards_per_position
        return Kind.ROUND_ENDED, {
            "outcome": str(decision.outcome),
            "reason": decision.reason,
            "rule": decision.rule,
            "start_position": decision.start.position if decision.start else None,
            "cards_per_position": (
                {str(i + 1): n for i, n in enumerate(counts)} if counts is not None else None
            ),
            "wagered": list(decision.wagered),
            "collected_unseen": list(decision.collected_unseen),
        }
    if isinstance(decision, d.RoundClosed):
        return Kind.ROUND_CLOSED, {
            "hands": {str(h.position): [c.text for c in h.cards] for h in decision.hands},
            "wagered": list(decision.wagered),
            "start_position": decision.start.position,
        }
    if isinstance(decision, d.SecurityEvent):
        return Kind.FAULT, {
            "code": "composition",
            "reason": decision.reason,
            "rule": "D3",
            "index": decision.draw_index,
            "card": decision.card.text,
        }
    if isinstance(decision, d.GateCommand):
        return Kind.INPUT, {
            "by": "controller",
            "name": "set_gate",
            "mode": decision.mode.name.lower(),
            "limit": decision.limit,
        }
    if isinstance(decision, d.AskCroupier):
        return Kind.INPUT, {
            "by": "controller",
            "name": "ask_croupier",
            "question": decision.question,
            "proposal": str(decision.proposal) if decision.proposal else None,
            "rule": decision.rule,
            "evidence": plain(decision.evidence),
        }
    # CardAssigned is journaled with its identity by AuditCard, which the procedure emits
    # for every card; keeping one record per card keeps the journal's card count exact.
    return None


def plain(value: Any) -> Any:
    """A JSON-ready form: cards as text, enums by name or value, dataclasses as dicts."""
    if isinstance(value, Card):
        return value.text
    if isinstance(value, enum.Enum):
        return value.name.lower() if isinstance(value, enum.IntEnum) else value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list | frozenset):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value
