"""How the procedure's decisions, the shoe's events and the journal's state meet.

One path from a decision to its outputs: each decision type has exactly one journal record
here (:func:`decision_record`, registered per type and checked for completeness by a test),
and each record kind has exactly one public projection (:mod:`.public`). The journal is the
restricted audit record: the one place where card identities are kept (rule E1), in
``card``, ``stub_card``, ``unassigned_card`` and ``security`` records and in the round
record. A ``shoe_event`` record never carries an identity: the card is journaled once, by
the procedure's restricted decision for it.

The other way round, :func:`carry_from` and :func:`resume_points` read what a start-up needs
from the journal: the table's facts, the round in progress, and the last event made
durable of every shoe.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import singledispatch
from typing import Any

from firmware_protocol import Card, CardDrawn, Message
from shoe_controller.journal.records import ROUND_KINDS, Kind, Record
from shoe_controller.journal.writer import Journal
from shoe_controller.link.identity import ShoeIdentity
from shoe_controller.plain import plain
from shoe_controller.procedure import decisions as d
from shoe_controller.procedure.core import DECK_MEMORY
from shoe_controller.procedure.inputs import Carry, RemovedDeck, RoundFacts
from shoe_controller.procedure.record import Defect
from shoe_controller.procedure.start import StartMethod, StartPosition

Entry = tuple[Kind, dict[str, Any]]


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


def shoe_event_record(
    seq: int, shoe_seq: int, message: Message, shoe: ShoeIdentity | None
) -> dict[str, Any]:
    """The ``shoe_event`` payload: the link's and the shoe's own numbers, which shoe (so a
    restarted controller knows what it already holds), and the message without identity."""
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(message):  # type: ignore[arg-type]
        value = getattr(message, f.name)
        if isinstance(value, Card):
            continue  # the identity is journaled once, by the procedure's AuditCard
        fields[f.name] = plain(value)
    if isinstance(message, CardDrawn):
        fields["read"] = not message.card.is_unreadable
    record: dict[str, Any] = {
        "seq": seq,
        "shoe_seq": shoe_seq,
        "message": {"type": type(message).__name__, **fields},
    }
    if shoe is not None:
        record["model"] = shoe.model
        record["serial_number"] = shoe.serial_number
        record["boot_id"] = shoe.boot_id
    return record


# --- decisions -> records --------------------------------------------------------------


def decision_records(
    decisions: list[d.Decision], round_id: str | None, by: str
) -> Iterator[tuple[Kind, dict[str, Any], str | None]]:
    """The records for ``decisions``, in order, each with the round it belongs to.
    ``by`` names who gave the input (for the records that say so)."""
    for decision in decisions:
        entry = decision_record(decision, by)
        if entry is None:
            continue
        kind, payload = entry
        rid = getattr(decision, "round_id", None) or round_id
        yield kind, payload, rid if kind in ROUND_KINDS or rid else None


@singledispatch
def decision_record(decision: d.Decision, by: str) -> Entry | None:
    raise TypeError(f"no journal record is defined for {type(decision).__name__}")


@decision_record.register
def _(decision: d.StateChanged, by: str) -> Entry:
    return Kind.STATE, {"old": decision.old, "new": decision.new, "trigger": decision.trigger}


@decision_record.register
def _(decision: d.RoundOpened, by: str) -> Entry:
    return Kind.ROUND_OPENED, {"round_id": decision.round_id}


@decision_record.register
def _(decision: d.WagersEntered, by: str) -> Entry:
    return Kind.WAGERS, {"positions": list(decision.positions), "by": by}


@decision_record.register
def _(decision: d.BetsClosed, by: str) -> Entry:
    return Kind.BETS_CLOSED, {"wagered": list(decision.wagered)}


@decision_record.register
def _(decision: d.StartPositionSet, by: str) -> Entry:
    start = decision.start
    return Kind.START_POSITION, {
        "method": "dice" if start.method is StartMethod.DICE else "rng",
        "source": str(start.method),
        "raw": list(start.raw),
        "position": start.position,
        # Who typed the dice or the external number, or drew the controller's (E4).
        "by": by,
    }


@decision_record.register
def _(decision: d.WagerSettled, by: str) -> Entry:
    return Kind.WAGER_SETTLED, {"by": by}


@decision_record.register
def _(decision: d.GateCommand, by: str) -> Entry:
    return Kind.GATE, {"mode": plain(decision.mode), "limit": decision.limit}


@decision_record.register
def _(decision: d.CardAssigned, by: str) -> None:
    # Journaled with its identity by AuditCard, which the procedure emits for every card;
    # one record per card keeps the journal's card count exact.
    return None


@decision_record.register
def _(decision: d.AuditCard, by: str) -> Entry:
    index, card = decision.draw_index, decision.card.text
    if decision.destination == "stub":
        return Kind.STUB_CARD, {"index": index, "card": card}
    if decision.destination == "unassigned":
        return Kind.UNASSIGNED_CARD, {"index": index, "card": card}
    return Kind.CARD, {
        "index": index,
        "position": decision.destination,
        "card": card,
        "gate_mode": "deal",
    }


@decision_record.register
def _(decision: d.SecurityEvent, by: str) -> Entry:
    return Kind.SECURITY, {
        "index": decision.draw_index,
        "reason": decision.reason,
        "card": decision.card.text,
    }


def _figures(figures: d.StubFigures) -> dict[str, int | None]:
    return {
        "shoe": figures.shoe_count,
        "read": figures.stub_cards_read,
        "deal": figures.by_deal,
    }


@decision_record.register
def _(decision: d.StubCounted, by: str) -> Entry:
    payload: dict[str, Any] = {
        "count": decision.count,
        "expected": decision.expected,
        "source": decision.source,
    }
    if decision.figures is not None:
        payload["figures"] = _figures(decision.figures)
        payload["agrees"] = decision.agrees
        payload["contradicts"] = decision.contradicts
        payload["by"] = by
    return Kind.STUB_COUNTED, payload


@decision_record.register
def _(decision: d.StubAccepted, by: str) -> Entry:
    return Kind.STUB_ACCEPTED, {
        "count": decision.count,
        "figures": _figures(decision.figures),
        "by": by,
        "contradicts": decision.contradicts,
    }


@decision_record.register
def _(decision: d.DeckDefect, by: str) -> Entry:
    return Kind.DECK_DEFECT, {
        "cards": {
            "missing": [c.text for c in decision.missing],
            "duplicated": [c.text for c in decision.duplicated],
            "foreign": [c.text for c in decision.foreign],
        },
        "returned": decision.returned,
    }


@decision_record.register
def _(decision: d.Prompt, by: str) -> Entry:
    return Kind.PROMPT, {
        "need": decision.need,
        "message": decision.message,
        "rule": decision.rule,
        "proposal": plain(decision.proposal),
        "evidence": plain(decision.evidence),
        "role": decision.role,
        "options": list(decision.options),
        "code": decision.code,
        "values": plain(decision.values),
    }


@decision_record.register
def _(decision: d.DeterminationRecorded, by: str) -> Entry:
    return Kind.DETERMINATION, {
        "misdealt": decision.misdealt,
        "by": by,
        "proposal": plain(decision.proposal),
        "contradicts": decision.contradicts,
    }


@decision_record.register
def _(decision: d.FaultRaised, by: str) -> Entry:
    return Kind.FAULT, {
        "code": str(decision.code),
        "reason": decision.reason,
        "rule": decision.rule,
        "voids_round": decision.voids_round,
    }


@decision_record.register
def _(decision: d.FaultCleared, by: str) -> Entry:
    return Kind.FAULT_CLEARED, {"by": decision.by, "codes": [str(c) for c in decision.codes]}


@decision_record.register
def _(decision: d.Notice, by: str) -> Entry:
    return Kind.NOTICE, {
        "code": str(decision.code),
        "reason": decision.reason,
        "rule": decision.rule,
    }


@decision_record.register
def _(decision: d.RoundEnded, by: str) -> Entry:
    counts = decision.cards_per_position
    return Kind.ROUND_ENDED, {
        "outcome": str(decision.outcome),
        "reason": decision.reason,
        "rule": decision.rule,
        "start_position": decision.start.position if decision.start else None,
        "start": plain(decision.start),
        "cards_per_position": {str(i + 1): n for i, n in enumerate(counts)},
        "wagered": list(decision.wagered),
        "collected_unseen": list(decision.collected_unseen),
    }


@decision_record.register
def _(decision: d.TableFacts, by: str) -> Entry:
    return Kind.TABLE, plain(decision)


@decision_record.register
def _(decision: d.RoundClosed, by: str) -> Entry:
    return Kind.ROUND_CLOSED, {
        "hands": {str(h.position): [c.text for c in h.cards] for h in decision.hands},
        "wagered": list(decision.wagered),
        "start_position": decision.start.position,
    }


# --- the journal -> a start-up ---------------------------------------------------------


def resume_points(journal: Journal) -> list[tuple[str, str, int]]:
    """(model, serial number, the shoe's own event number) of the last event made durable
    of every shoe the journal holds events of, the latest first: the link resumes from them
    by the shoe's identity, not its own count. A shoe put back at the table after another
    may still hold events journaled here (their acknowledgement lost), or have lost some.

    Events between two ``shoe_connected`` records are the first one's shoe's, so each
    shoe's last event is found in its latest connection that has one."""
    connections = journal.records_of(Kind.SHOE_CONNECTED)
    points: dict[tuple[str, str], int] = {}
    for index in reversed(range(len(connections))):
        connected = connections[index]
        end = connections[index + 1].seq if index + 1 < len(connections) else None
        identity = connected.payload_object().get("identity", {})
        shoe = (str(identity.get("model")), str(identity.get("serial_number")))
        if shoe in points:
            continue
        last = journal.last_record(Kind.SHOE_EVENT, after=connected.seq, before=end)
        if last is None:
            continue
        payload = last.payload_object()
        if (payload.get("model"), payload.get("serial_number")) == shoe and "shoe_seq" in payload:
            points[shoe] = int(payload["shoe_seq"])
    return [(model, serial, seq) for (model, serial), seq in points.items()]


def carry_from(journal: Journal, now: float | None = None) -> Carry:
    """What the journal says the table was doing when the previous run ended (F3, F4), with
    the decks removed from the table with a known defect within DECK_MEMORY of ``now``
    (wall-clock seconds; all of them without it) (D3)."""
    removed = tuple(_removed_decks(journal, now))
    last = journal.last_record(Kind.TABLE)
    facts = _facts(last.payload_object()) if last is not None else None
    round_id = facts.round_id if facts is not None else None
    if round_id is None:
        # A journal whose facts do not name the round still open (a journal of an earlier
        # version): take over its last open round, as a crash.
        open_rounds = journal.open_rounds()
        if open_rounds:
            round_id = open_rounds[-1].round_id
            if facts is None or facts.phase == "stopped":
                facts = d.TableFacts("dealing", (), None, False, False, False, None, round_id)
    if round_id is None:
        return Carry(facts, None, removed)
    return Carry(facts, _round_facts(round_id, journal.round_records(round_id)), removed)


def _removed_decks(journal: Journal, now: float | None) -> Iterator[RemovedDeck]:
    for record in journal.records_of(Kind.DECK_DEFECT):
        at = datetime.fromisoformat(record.wall.replace("Z", "+00:00")).timestamp()
        if now is not None and now - at > DECK_MEMORY:
            continue
        cards = record.payload_object().get("cards", {})
        yield RemovedDeck(
            Defect(
                missing=_cards(cards.get("missing")),
                duplicated=_cards(cards.get("duplicated")),
                foreign=_cards(cards.get("foreign")),
            ),
            at,
        )


def _cards(texts: object) -> frozenset[Card]:
    if not isinstance(texts, list):
        return frozenset()
    return frozenset(Card.parse(str(text)) for text in texts)


def _facts(payload: dict[str, Any]) -> d.TableFacts:
    shoe = payload.get("shoe")
    return d.TableFacts(
        phase=str(payload["phase"]),
        faults=tuple(d.FaultCode(code) for code in payload.get("faults", ())),
        fault_origin=payload.get("fault_origin"),
        deck_must_change=bool(payload["deck_must_change"]),
        deck_waiting=bool(payload["deck_waiting"]),
        deck_spent=bool(payload.get("deck_spent", False)),
        shoe=(str(shoe[0]), str(shoe[1])) if shoe else None,
        round_id=payload.get("round_id"),
    )


@dataclasses.dataclass
class _RoundReader:
    """What a round's records say, read one record at a time."""

    round_id: str
    outcome: d.Outcome | None = None
    closed: bool = False
    start: StartPosition | None = None
    wagered: frozenset[int] = frozenset()
    cards: list[tuple[int, int, Card]] = dataclasses.field(default_factory=list)
    stub_count: int | None = None

    def ended(self, payload: dict[str, Any]) -> None:
        self.outcome = d.Outcome(payload["outcome"])

    def closed_now(self, payload: dict[str, Any]) -> None:
        self.closed = True

    def bets(self, payload: dict[str, Any]) -> None:
        self.wagered = frozenset(int(p) for p in payload["wagered"])

    def start_position(self, payload: dict[str, Any]) -> None:
        method = StartMethod(payload.get("source") or _method(payload["method"]))
        self.start = StartPosition(method, tuple(payload["raw"]), int(payload["position"]))

    def card(self, payload: dict[str, Any]) -> None:
        card = Card.parse(str(payload["card"]))
        self.cards.append((int(payload["index"]), int(payload["position"]), card))

    def stub(self, payload: dict[str, Any]) -> None:
        self.stub_count = int(payload["count"])

    def facts(self) -> RoundFacts | None:
        """The round, while it is open or dealt and not yet closed; else None."""
        if self.closed or self.outcome not in (None, d.Outcome.DEALT):
            return None
        return RoundFacts(
            self.round_id,
            self.outcome,
            self.start,
            self.wagered,
            tuple(self.cards),
            self.stub_count,
        )


_ROUND_READERS: dict[str, Callable[[_RoundReader, dict[str, Any]], None]] = {
    Kind.ROUND_ENDED: _RoundReader.ended,
    Kind.ROUND_CLOSED: _RoundReader.closed_now,
    Kind.BETS_CLOSED: _RoundReader.bets,
    Kind.START_POSITION: _RoundReader.start_position,
    Kind.CARD: _RoundReader.card,
    Kind.STUB_COUNTED: _RoundReader.stub,
}


def _round_facts(round_id: str, records: list[Record]) -> RoundFacts | None:
    reader = _RoundReader(round_id)
    for record in records:
        read = _ROUND_READERS.get(record.kind)
        if read is not None:
            read(reader, json.loads(record.payload))
    return reader.facts()


def _method(name: str) -> str:
    return StartMethod.DICE.value if name == "dice" else StartMethod.CONTROLLER_RNG.value
