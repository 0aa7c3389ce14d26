"""Export the journal's events or rounds as JSON lines or CSV.

By default the export is public: identities that rules E1 and E2 keep secret are sealed
(see :mod:`.sealing`). An audit export includes everything and is available only to whoever
can read the journal's key: it is read and proven against the journal first.

Events: one row per record, fields ``seq, time, monotonic_ns, round_id, kind, payload``
(in CSV the payload is its JSON text). Rounds: one row per round, fields
``round_id, opened_at, start_position, wagered, outcome, reason, ended_at, closed_at, hands,
stub`` (in CSV the lists and mappings are JSON text); ``hands`` maps each position that
received cards to its cards in deal order.
"""

from __future__ import annotations

import contextlib
import csv
import hmac
import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TextIO

from shoe_controller.errors import ConfigError, JournalError
from shoe_controller.journal import schema
from shoe_controller.journal.chain import Chain
from shoe_controller.journal.keys import load_key
from shoe_controller.journal.paths import default_key_path
from shoe_controller.journal.records import Kind
from shoe_controller.journal.sealing import SEALED, Disclosure, read_disclosures, seal
from shoe_controller.journal.stub_commitment import COMMITTED

Format = Literal["jsonl", "csv"]
View = Literal["events", "rounds"]

EVENT_FIELDS: Final = ("seq", "time", "monotonic_ns", "round_id", "kind", "payload")
ROUND_FIELDS: Final = (
    "round_id",
    "opened_at",
    "start_position",
    "wagered",
    "outcome",
    "reason",
    "ended_at",
    "closed_at",
    "hands",
    "stub",
)

_SELECT = "SELECT seq, wall, mono_ns, round_id, kind, payload, mac FROM records"
#: The writer's payloads nest a few levels at most; far deeper is not a record of ours.
MAX_PAYLOAD_DEPTH: Final = 32


def export(
    path: str | os.PathLike[str],
    out: TextIO,
    fmt: Format = "jsonl",
    *,
    audit: bool = False,
    key_path: str | os.PathLike[str] | None = None,
    what: View = "events",
    round_id: str | None = None,
) -> int:
    """Write the journal's events (or rounds) to ``out``; returns the rows written.

    ``round_id`` limits the export to one round (a round the journal does not hold is a
    ConfigError). ``audit`` includes sealed identities and needs the journal's key (beside
    it unless ``key_path`` is given); without a readable, matching key it raises
    JournalError, as it does for a record this program cannot have written ("damaged at
    record N").
    """
    with open_export(
        path, fmt, audit=audit, key_path=key_path, what=what, round_id=round_id
    ) as source:
        return source.write(out)


@contextlib.contextmanager
def open_export(
    path: str | os.PathLike[str],
    fmt: Format = "jsonl",
    *,
    audit: bool = False,
    key_path: str | os.PathLike[str] | None = None,
    what: View = "events",
    round_id: str | None = None,
) -> Iterator[ExportSource]:
    """Everything :func:`export` checks, done before anything is written: the journal is
    one, the key is its key (``audit``), the round is in it. Yields the source to write
    from, on one consistent snapshot of the journal."""
    if fmt not in ("jsonl", "csv"):
        raise JournalError(f"unknown export format {fmt!r}: use jsonl or csv")
    if what not in ("events", "rounds"):
        raise JournalError(f"unknown export view {what!r}: use events or rounds")
    journal = Path(path)
    conn = schema.connect(journal, writable=False)
    try:
        if audit:
            _prove_key(conn, journal, Path(key_path) if key_path else default_key_path(journal))
        # One read transaction: one consistent snapshot even while the service appends.
        conn.execute("BEGIN")
        if round_id is not None and not _holds_round(conn, round_id):
            raise ConfigError(
                f"no round {round_id} in journal {journal}: list its rounds with "
                "shoe-diag audit export --rounds"
            )
        yield ExportSource(journal, conn, fmt, audit, what, round_id)
    except sqlite3.DatabaseError as exc:
        raise schema.damaged(journal, exc) from None
    finally:
        conn.close()


@dataclass
class ExportSource:
    """A journal checked and ready to export; see :func:`open_export`."""

    journal: Path
    conn: sqlite3.Connection
    fmt: Format
    audit: bool
    what: View
    round_id: str | None

    def write(self, out: TextIO) -> int:
        """Write the rows to ``out``; returns how many."""
        if self.what == "events":
            rows = _events(self.journal, self.conn, self.audit, self.round_id)
            return _write(out, self.fmt, EVENT_FIELDS, rows)
        rows = _rounds(self.journal, self.conn, self.audit, self.round_id)
        return _write(out, self.fmt, ROUND_FIELDS, rows)


def _holds_round(conn: sqlite3.Connection, round_id: str) -> bool:
    row = conn.execute("SELECT 1 FROM records WHERE round_id = ? LIMIT 1", (round_id,))
    return row.fetchone() is not None


def _damaged_at(journal: Path, seq: object) -> JournalError:
    return JournalError(
        f"journal {journal} damaged at record {seq}: it holds what this program never "
        "writes; keep the file for investigation and verify it (shoe-diag audit verify)"
    )


def _payload(journal: Path, seq: object, text: object) -> dict[str, Any]:
    """The record's payload, which the writer always makes a JSON object."""
    try:
        value = json.loads(text)  # type: ignore[arg-type]
    except (TypeError, ValueError, RecursionError):
        raise _damaged_at(journal, seq) from None
    if not isinstance(value, dict) or _deeper_than(value, MAX_PAYLOAD_DEPTH):
        raise _damaged_at(journal, seq)
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists or objects more than ``limit`` deep (without
    recursion, so that any depth is measured safely)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return False


def _prove_key(conn: sqlite3.Connection, journal: Path, key_path: Path) -> None:
    """Read the key and check it against the journal's key check and first record."""
    chain = Chain(load_key(key_path))
    journal_id, key_check = schema.read_identity(conn, journal)
    wrong = JournalError(
        f"{key_path} is not the key of journal {journal}: an audit export needs the journal's "
        "own key (--key)"
    )
    if not hmac.compare_digest(key_check, chain.key_check()):
        raise wrong
    first = conn.execute(_SELECT + " ORDER BY seq LIMIT 1").fetchone()
    if first is not None:
        mac = first[6]
        expected = chain.record_mac(chain.genesis(journal_id), first[:6])
        if not isinstance(mac, bytes) or not hmac.compare_digest(expected, mac):
            raise JournalError(
                f"the first record of journal {journal} does not match key {key_path}: verify "
                "the journal before an audit export"
            )


def _records(conn: sqlite3.Connection, round_id: str | None) -> sqlite3.Cursor:
    if round_id is None:
        return conn.execute(_SELECT + " ORDER BY seq")
    return conn.execute(_SELECT + " WHERE round_id = ? ORDER BY seq", (round_id,))


def _events(
    journal: Path, conn: sqlite3.Connection, audit: bool, round_id: str | None
) -> Iterator[dict[str, Any]]:
    disclosures = {} if audit else read_disclosures(conn)
    for seq, wall, mono_ns, rid, kind, text, _mac in _records(conn, round_id):
        payload = _payload(journal, seq, text)
        if not audit:
            try:
                payload = seal(kind, payload, disclosures.get(rid))
            except (TypeError, ValueError, RecursionError):
                raise _damaged_at(journal, seq) from None
        yield {
            "seq": seq,
            "time": wall,
            "monotonic_ns": mono_ns,
            "round_id": rid,
            "kind": kind,
            "payload": payload,
        }


@dataclass
class _Round:
    round_id: str
    opened_at: str | None = None
    start_position: int | None = None
    wagered: list[int] = field(default_factory=list)
    outcome: str | None = None
    reason: str | None = None
    ended_at: str | None = None
    closed_at: str | None = None
    #: (position, card) in deal order.
    cards: list[tuple[Any, Any]] = field(default_factory=list)
    stub: list[Any] = field(default_factory=list)

    def row(self, audit: bool, disclosure: Disclosure) -> dict[str, Any]:
        hands: dict[str, Any] = {}
        for position, card in self.cards:
            hands.setdefault(str(position), []).append(card)
        if not audit:
            hands = {p: cards if disclosure.visible(p) else SEALED for p, cards in hands.items()}
        stub: Any = self.stub if audit or not self.stub else SEALED
        return {
            "round_id": self.round_id,
            "opened_at": self.opened_at,
            "start_position": self.start_position,
            "wagered": self.wagered,
            "outcome": self.outcome,
            "reason": self.reason,
            "ended_at": self.ended_at,
            "closed_at": self.closed_at,
            "hands": dict(sorted(hands.items(), key=lambda item: _position_order(item[0]))),
            "stub": stub,
        }


def _position_order(position: str) -> tuple[int, str]:
    return (int(position), "") if position.isdigit() else (1 << 30, position)


def _rounds(
    journal: Path, conn: sqlite3.Connection, audit: bool, round_id: str | None
) -> Iterator[dict[str, Any]]:
    disclosures = read_disclosures(conn)
    rounds: dict[str, _Round] = {}
    for seq, wall, _mono, rid, kind, text, _mac in _records(conn, round_id):
        if rid is None:
            continue
        entry = rounds.setdefault(rid, _Round(rid))
        payload = _payload(journal, seq, text)
        try:
            _add(entry, kind, wall, payload)
        except (TypeError, ValueError):
            raise _damaged_at(journal, seq) from None
    for entry in rounds.values():
        yield entry.row(audit, disclosures.get(entry.round_id, Disclosure()))


def _add(entry: _Round, kind: str, wall: str, payload: dict[str, Any]) -> None:
    if kind == Kind.ROUND_OPENED:
        entry.opened_at = wall
    elif kind == Kind.START_POSITION:
        entry.start_position = payload.get("position")
    elif kind == Kind.BETS_CLOSED:
        entry.wagered = list(payload.get("wagered", []))
    elif kind == Kind.CARD:
        entry.cards.append((payload.get("position"), payload.get("card")))
    elif kind == Kind.STUB_CARD:
        entry.stub.append(payload.get("card", COMMITTED))
    elif kind == Kind.ROUND_ENDED:
        entry.outcome, entry.reason = payload.get("outcome"), payload.get("reason")
        entry.ended_at = wall
    elif kind == Kind.ROUND_CLOSED:
        entry.closed_at = wall


def _write(
    out: TextIO, fmt: Format, fields: tuple[str, ...], rows: Iterator[dict[str, Any]]
) -> int:
    count = 0
    if fmt == "jsonl":
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
            count += 1
        return count
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(fields)
    for row in rows:
        writer.writerow([_cell(row[name]) for name in fields])
        count += 1
    return count


def _cell(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return "" if value is None else value
