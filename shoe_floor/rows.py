"""The floor store's rows, built once for both databases: each kind of message becomes a
tuple in its table's column order (SQLite inserts the tuples, PostgreSQL a JSON array of
them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from floor_protocol import Head, Records, Status

EVENT_COLUMNS: Final = (
    "site",
    "table_id",
    "journal_id",
    "seq",
    "prev",
    "mac",
    "event",
    "round_id",
    "ts",
    "at",
    "body",
    "received_at",
)
HEAD_COLUMNS: Final = (
    "site",
    "table_id",
    "journal_id",
    "seq",
    "mac",
    "public_seq",
    "at",
    "received_at",
)
PRESENCE_COLUMNS: Final = ("site", "table_id", "connection", "online", "at", "body")
QUARANTINE_COLUMNS: Final = (
    "received_at",
    "site",
    "table_id",
    "topic",
    "reason",
    "detail",
    "payload",
    "size",
)
#: Of a quarantined message the store keeps this many bytes of payload: enough to read
#: what it was, not enough for a forger to fill the disk with.
QUARANTINE_PAYLOAD: Final = 2048

Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A message the floor refused, and why (floor_protocol.errors.REASONS)."""

    received_at: float
    site: str
    table_id: str
    topic: str
    reason: str
    detail: str
    payload: bytes


@dataclass
class Batch:
    """What one transaction stores: the rows of every kind, and the quarantine's tally
    (minute, site, table, reason) -> messages."""

    events: list[Row] = field(default_factory=list)
    heads: list[Row] = field(default_factory=list)
    presence: list[Row] = field(default_factory=list)
    quarantine: list[Row] = field(default_factory=list)
    tally: dict[tuple[int, str, str, str], int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.events or self.heads or self.presence or self.quarantine or self.tally)

    def add_records(self, message: Records, received_at: float) -> None:
        self.events += [
            (
                message.site,
                message.table,
                message.journal,
                r.seq,
                r.prev,
                r.mac,
                r.event,
                r.round_id,
                r.ts,
                r.at,
                r.body,
                received_at,
            )
            for r in message.records
        ]

    def add_head(self, head: Head, received_at: float) -> None:
        self.heads.append(
            (
                head.site,
                head.table,
                head.journal,
                head.seq,
                head.mac,
                head.public_seq,
                head.at,
                received_at,
            )
        )

    def add_presence(self, status: Status) -> None:
        self.presence.append(
            (
                status.site,
                status.table,
                status.connection,
                int(status.online),
                status.at,
                status.body,
            )
        )

    def add_quarantined(self, item: Quarantined, *, keep: bool) -> None:
        """Count ``item``; keep its row too when ``keep`` (the collector bounds how many)."""
        key = (int(item.received_at // 60), item.site, item.table_id, item.reason)
        self.tally[key] = self.tally.get(key, 0) + 1
        if keep:
            self.quarantine.append(
                (
                    item.received_at,
                    item.site,
                    item.table_id,
                    text(item.topic[:256]),
                    item.reason,
                    text(item.detail[:500]),
                    text(item.payload[:QUARANTINE_PAYLOAD].decode("utf-8", "replace")),
                    len(item.payload),
                )
            )

    def tally_rows(self) -> Sequence[Row]:
        return [(m, s, t, r, n) for (m, s, t, r), n in sorted(self.tally.items())]


def text(value: str) -> str:
    """``value`` as both databases store text: no NUL, no lone surrogate (what a hostile
    sender's bytes may hold), each shown escaped instead."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
