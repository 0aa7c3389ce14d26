"""What the journal holds: record kinds, their payload shapes, and the record itself.

Every record has a sequence number (1, 2, 3, ... without gaps), the UTC wall time in ISO 8601,
the monotonic time in nanoseconds, the round it belongs to (or none), its kind, and a payload
stored as canonical JSON (keys sorted, no spaces, ASCII only) so that its bytes, and hence
its MAC, are reproducible.

Payload shapes, by kind (fields marked ``?`` are optional; positions are 1..N, N being the
rules profile's ``positions`` in ``service_started``'s ``rules``, the banker 1; cards are in
their text form, "AS", "TD", "JK", "??"):

``service_started``  version, pid, software_sha256 (the installed packages' files, see
                     :mod:`shoe_controller.service.provenance`), manifest_sha256 (the
                     SHA-256 of the next ``software_manifest`` record's payload text),
                     config_sha256 (null without a file), profile {name, version}, rules
                     (the effective table rules), evidence {stub, external_rng_signature}
                     (the profile's rules of the record), bench (bool), clock
                     {synchronized (bool or null), source}
``software_manifest`` format, software {sha256, packages}, distributions [{name, version,
                     record_sha256}], python {version, implementation, executable, sha256},
                     system_files [{path, present, sha256, error?}]: what ran (see
                     :mod:`shoe_controller.service.manifest`), written right after
                     ``service_started``
``clock_step``       step_seconds (the wall clock's jump against the monotonic clock,
                     positive forward), wall_before, wall_after (UTC ISO 8601: the time
                     on the old setting and on the new one)
``service_stopped``  reason (the stop the operator asked for)
``shoe_connected``   identity (model, serial_number, hardware_revision, firmware_version,
                     firmware_digest as hex), approved (bool), reason, device?
``link``             state ("lost", "restored", "events_lost", "approval" or "error"),
                     detail?
``shoe_event``       seq (the link's number), shoe_seq (the shoe's own number), model,
                     serial_number, boot_id, message (type name and the decoded fields,
                     card identities removed by the writer)
``input``            by (a person's name, or "croupier", "attendant", "controller"), role?,
                     name, accepted, refused?, and the input's arguments
``access``           action (sign_in, sign_out, locked, refused...), user, role?, accepted,
                     detail?
``prompt``           need, message, rule?, proposal?, evidence? (what a person was asked)
``table``            phase, faults, fault_origin, deck_must_change, deck_waiting, shoe,
                     round_id: the table's facts that outlive a stop or a crash
``state``            old, new, trigger?
``gate``             mode ("locked", "deal" or "stub"), limit
``round_opened``     round_id
``wagers``           positions (entered while bets are open)
``bets_closed``      wagered (list of positions holding a wager)
``start_position``   method ("dice" or "rng"), raw (each die, or the number), position
``external_rng``     number, signed (bool), and for a signed number device, algorithm,
                     counter, signature (hex), skipped (counters the device used since the
                     last one accepted): an external generator's number as accepted
                     (:mod:`shoe_controller.service.external_rng`)
``wager_settled``    by
``card``             index (1 to the deal's size), position, card, gate_mode
``stub_card``        index, card (text, or "??" when the shoe does not reveal it)
``unassigned_card``  index, card: a card that left the shoe outside the procedure
``security``         index, reason, card: a duplicate or foreign card (D3)

                     Where the rules profile keeps the stub as commitments (``stub =
                     "commitment"``), a card of these three kinds that left the shoe after
                     the deal has no ``card``: ``commitment`` and ``key_id`` stand in its
                     place (:mod:`shoe_controller.journal.stub_commitment`).
``stub_counted``     count, expected, source ("shoe" or "croupier"), figures? {shoe, read,
                     deal} and agrees? (the croupier's count checked against them, D1)
``stub_accepted``    count, figures {shoe, read, deal}, by: a supervisor accepted the
                     croupier's count the figures disagree with (D1)
``deck_defect``      cards {missing, duplicated, foreign}, returned? (when a deck with the
                     same defect left the table): a deck with a known defect leaves (D3)
``determination``    misdealt (bool), by, proposal?, contradicts? (against a conclusive
                     record, D2)
``fault``            code, reason, rule, voids_round; ``reason`` never names a card
``fault_cleared``    by, codes
``notice``           code, reason, rule? (journaled for maintenance; blocks nothing)
``round_ended``      outcome ("dealt", "void_misdeal", "void_deck_removed", "void_fault"
                     or "not_played"), reason, rule, start_position, cards_per_position
                     (position -> count), wagered, collected_unseen
``round_closed``     hands (position -> list of cards: the banker and wagered positions only)
``recovery``         reason, voided (round ids): written by journals of earlier versions

Card identities are carried only by fields named ``card`` or ``cards`` and by
``round_closed.hands``; the export seals them (see :mod:`.sealing`).
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final


class Kind(enum.StrEnum):
    SERVICE_STARTED = "service_started"
    SOFTWARE_MANIFEST = "software_manifest"
    CLOCK_STEP = "clock_step"
    SERVICE_STOPPED = "service_stopped"
    SHOE_CONNECTED = "shoe_connected"
    LINK = "link"
    SHOE_EVENT = "shoe_event"
    INPUT = "input"
    ACCESS = "access"
    PROMPT = "prompt"
    TABLE = "table"
    STATE = "state"
    GATE = "gate"
    ROUND_OPENED = "round_opened"
    WAGERS = "wagers"
    BETS_CLOSED = "bets_closed"
    START_POSITION = "start_position"
    EXTERNAL_RNG = "external_rng"
    WAGER_SETTLED = "wager_settled"
    CARD = "card"
    STUB_CARD = "stub_card"
    UNASSIGNED_CARD = "unassigned_card"
    SECURITY = "security"
    STUB_COUNTED = "stub_counted"
    STUB_ACCEPTED = "stub_accepted"
    DECK_DEFECT = "deck_defect"
    DETERMINATION = "determination"
    FAULT = "fault"
    FAULT_CLEARED = "fault_cleared"
    NOTICE = "notice"
    ROUND_ENDED = "round_ended"
    ROUND_CLOSED = "round_closed"
    RECOVERY = "recovery"


#: Fields a payload of each kind must have; further fields are allowed.
REQUIRED_FIELDS: Final[Mapping[Kind, frozenset[str]]] = {
    Kind.SERVICE_STARTED: frozenset(
        {
            "version",
            "pid",
            "software_sha256",
            "manifest_sha256",
            "config_sha256",
            "profile",
            "rules",
            "bench",
            "clock",
        }
    ),
    Kind.SOFTWARE_MANIFEST: frozenset(
        {"format", "software", "distributions", "python", "system_files"}
    ),
    Kind.CLOCK_STEP: frozenset({"step_seconds", "wall_before", "wall_after"}),
    Kind.SERVICE_STOPPED: frozenset({"reason"}),
    Kind.SHOE_CONNECTED: frozenset({"identity", "approved", "reason"}),
    Kind.LINK: frozenset({"state"}),
    Kind.SHOE_EVENT: frozenset({"seq", "message"}),
    Kind.INPUT: frozenset({"by", "name"}),
    Kind.ACCESS: frozenset({"action", "user", "accepted"}),
    Kind.PROMPT: frozenset({"need", "message"}),
    Kind.TABLE: frozenset(
        {"phase", "faults", "fault_origin", "deck_must_change", "deck_waiting", "shoe"}
    ),
    Kind.STATE: frozenset({"old", "new"}),
    Kind.GATE: frozenset({"mode", "limit"}),
    Kind.ROUND_OPENED: frozenset({"round_id"}),
    Kind.WAGERS: frozenset({"positions"}),
    Kind.BETS_CLOSED: frozenset({"wagered"}),
    Kind.START_POSITION: frozenset({"method", "raw", "position"}),
    Kind.EXTERNAL_RNG: frozenset({"number", "signed"}),
    Kind.WAGER_SETTLED: frozenset({"by"}),
    Kind.CARD: frozenset({"index", "position", "card", "gate_mode"}),
    # And a card, or its commitment (see CARD_OR_COMMITMENT).
    Kind.STUB_CARD: frozenset({"index"}),
    Kind.UNASSIGNED_CARD: frozenset({"index"}),
    Kind.SECURITY: frozenset({"index", "reason"}),
    Kind.STUB_COUNTED: frozenset({"count", "source"}),
    Kind.STUB_ACCEPTED: frozenset({"count", "figures", "by"}),
    Kind.DECK_DEFECT: frozenset({"cards"}),
    Kind.DETERMINATION: frozenset({"misdealt", "by"}),
    Kind.FAULT: frozenset({"code", "reason", "rule"}),
    Kind.FAULT_CLEARED: frozenset({"by"}),
    Kind.NOTICE: frozenset({"code", "reason"}),
    Kind.ROUND_ENDED: frozenset(
        {"outcome", "reason", "start_position", "cards_per_position", "wagered", "collected_unseen"}
    ),
    Kind.ROUND_CLOSED: frozenset({"hands"}),
    Kind.RECOVERY: frozenset({"reason", "voided"}),
}

#: Kinds whose records carry a card, or in its place its commitment (never both).
CARD_OR_COMMITMENT: Final = frozenset({Kind.STUB_CARD, Kind.UNASSIGNED_CARD, Kind.SECURITY})

#: Kinds that only exist inside a round, so their records must name it.
ROUND_KINDS: Final = frozenset(
    {
        Kind.ROUND_OPENED,
        Kind.WAGERS,
        Kind.BETS_CLOSED,
        Kind.START_POSITION,
        Kind.EXTERNAL_RNG,
        Kind.WAGER_SETTLED,
        Kind.CARD,
        Kind.STUB_CARD,
        Kind.STUB_COUNTED,
        Kind.STUB_ACCEPTED,
        Kind.DETERMINATION,
        Kind.ROUND_ENDED,
        Kind.ROUND_CLOSED,
    }
)

BANKER: Final = 1

# A round id goes into the MAC encoding between newlines, so it must not contain one; this
# also keeps ids readable in exports and file names.
_ROUND_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")


@dataclass(frozen=True, slots=True)
class Record:
    """One journal record as stored."""

    seq: int
    wall: str
    mono_ns: int
    round_id: str | None
    kind: str
    payload: str
    mac: bytes

    def payload_object(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.payload)
        return value


#: json.dumps with these options would build this encoder anew for every record.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
)


def canonical_json(payload: Mapping[str, Any]) -> str:
    """The one JSON text of ``payload``: sorted keys, compact, ASCII, finite numbers only."""
    try:
        return _CANONICAL.encode(payload)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"payload is not plain JSON data: {exc}") from None


def check_record(kind: str, payload: Mapping[str, Any], round_id: str | None) -> Kind:
    """Validate a record the writer is about to append; returns its :class:`Kind`.

    Raises ValueError: a malformed record is a bug in the writer, not a user error.
    """
    try:
        known = Kind(kind)
    except ValueError:
        raise ValueError(f"{kind!r} is not a journal record kind") from None
    if not isinstance(payload, Mapping):
        raise ValueError(f"{known} payload must be a mapping, not {type(payload).__name__}")
    missing = REQUIRED_FIELDS[known] - payload.keys()
    if missing:
        raise ValueError(f"{known} payload lacks {', '.join(sorted(missing))}")
    if known in CARD_OR_COMMITMENT and ("card" in payload) == ("commitment" in payload):
        raise ValueError(f"{known} payload needs a card or its commitment, one of them")
    if round_id is not None and not _ROUND_ID.fullmatch(round_id):
        raise ValueError(
            f"round id {round_id!r} must be 1..64 letters, digits or . _ : - "
            "and start with a letter or digit"
        )
    if known in ROUND_KINDS and round_id is None:
        raise ValueError(f"a {known} record belongs to a round: give its round_id")
    if known is Kind.ROUND_OPENED and payload["round_id"] != round_id:
        raise ValueError("round_opened payload names another round than its record")
    return known


def format_wall(epoch_seconds: float) -> str:
    """UTC ISO 8601 with microseconds and a Z, e.g. ``2025-05-01T20:15:03.120000Z``."""
    if not math.isfinite(epoch_seconds):
        raise ValueError(f"wall clock gave {epoch_seconds!r}")
    moment = datetime.fromtimestamp(epoch_seconds, UTC)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def to_nanoseconds(seconds: float) -> int:
    if not math.isfinite(seconds):
        raise ValueError(f"monotonic clock gave {seconds!r}")
    return round(seconds * 1_000_000_000)
