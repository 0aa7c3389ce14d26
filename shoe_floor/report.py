"""The floor's report: per table and per shift, what the tables did.

For each table and each shift that overlaps the period asked for:

- ``rounds``: rounds that ended (a ``round_end`` record) in the shift, and of them
  ``dealt``, ``void_misdeal``, ``void_deck_removed``, ``void_fault`` and ``not_played``;
- ``faults``: faults raised, by code;
- ``hands``: hands in play, that is the wagered positions of the dealt rounds;
- ``online_seconds`` and ``offline_seconds``: how long the table's box was connected to the
  broker, and how long it was not (counted from the table's first appearance on the floor;
  a shift in progress counts until now);
- ``rounds_per_hour`` and ``hands_per_hour``: per hour online (null with no time online);
- ``complete``: no public record of the table is known to be missing.

A row whose ``shift`` is null sums the table's shifts over the whole period.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from shoe_floor.shifts import Shifts, ShiftSpan
from shoe_floor.store import Store, StoredEvent, StoredPresence

OUTCOMES: Final = ("dealt", "void_misdeal", "void_deck_removed", "void_fault", "not_played")
REPORTED_EVENTS: Final = ("round_end", "fault")


@dataclass
class TableShift:
    """The figures of one table in one shift (or, with no shift, over the whole period)."""

    site: str
    table: str
    shift: ShiftSpan | None
    start: float
    end: float
    outcomes: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    hands: int = 0
    online_seconds: float = 0.0
    offline_seconds: float = 0.0
    complete: bool = True

    @property
    def rounds(self) -> int:
        return sum(self.outcomes.values())

    def per_hour(self, count: int) -> float | None:
        if self.online_seconds <= 0:
            return None
        return round(count / (self.online_seconds / 3600), 2)

    def as_json(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "table": self.table,
            "shift": self.shift.label if self.shift else None,
            "start": _iso(self.start),
            "end": _iso(self.end),
            "rounds": self.rounds,
            **{outcome: self.outcomes.get(outcome, 0) for outcome in OUTCOMES},
            "faults": dict(sorted(self.faults.items())),
            "hands": self.hands,
            "rounds_per_hour": self.per_hour(self.rounds),
            "hands_per_hour": self.per_hour(self.hands),
            "online_seconds": round(self.online_seconds, 1),
            "offline_seconds": round(self.offline_seconds, 1),
            "complete": self.complete,
        }


def build_report(
    store: Store, shifts: Shifts, since: float, until: float, now: float
) -> list[TableShift]:
    """The report's rows: every table's shifts in order, then its total, tables by name."""
    events = list(store.events(REPORTED_EVENTS, since=since, until=until))
    presence = store.presence()
    incomplete = store.incomplete_tables()
    return summarize(
        events, presence, shifts, since=since, until=until, now=now, incomplete=incomplete
    )


def summarize(
    events: Sequence[StoredEvent],
    presence: Sequence[StoredPresence],
    shifts: Shifts,
    *,
    since: float,
    until: float,
    now: float,
    incomplete: Iterable[tuple[str, str]] = (),
) -> list[TableShift]:
    """The report from records and presence already read (see :func:`build_report`)."""
    spans = shifts.spans(since, until)
    tables = sorted({(e.site, e.table_id) for e in events} | _present(presence, since, until))
    missing = set(incomplete)
    rows: list[TableShift] = []
    for site, table in tables:
        # Two casinos may both have a PG-07: a table is its site and its name.
        online = _online_intervals(
            [p for p in presence if (p.site, p.table_id) == (site, table)], now
        )
        own = [e for e in events if (e.site, e.table_id) == (site, table)]
        first_seen = min([s for s, _ in online] + [e.at for e in own], default=until)
        per_shift = [
            TableShift(site, table, span, max(span.start, since), min(span.end, until))
            for span in spans
        ]
        total = TableShift(site, table, None, since, until)
        for row in [*per_shift, total]:
            row.complete = (site, table) not in missing
            _time_online(row, online, first_seen, now)
        for event in own:
            for row in (r for r in per_shift if r.start <= event.at < r.end):
                _count(row, event)
            _count(total, event)
        rows += [r for r in per_shift if r.rounds or r.faults or r.online_seconds]
        rows.append(total)
    return rows


def _count(row: TableShift, event: StoredEvent) -> None:
    body = json.loads(event.body)
    if event.event == "round_end":
        outcome = str(body.get("outcome"))
        row.outcomes[outcome] += 1
        if outcome == "dealt":
            row.hands += len(body.get("wagered") or ())
    elif event.event == "fault":
        row.faults[str(body.get("code"))] += 1


def _present(
    presence: Sequence[StoredPresence], since: float, until: float
) -> set[tuple[str, str]]:
    return {(p.site, p.table_id) for p in presence if p.online and p.at < until}


def _online_intervals(presence: Sequence[StoredPresence], now: float) -> list[tuple[float, float]]:
    """When the table's box was connected: each connection from its online status to its
    offline status (its goodbye or its Last Will), the next connection, or now."""
    came: dict[str, float] = {}
    went: dict[str, float] = {}
    for p in presence:
        (came if p.online else went)[p.connection] = p.at
    starts = sorted((at, connection) for connection, at in came.items())
    intervals: list[tuple[float, float]] = []
    for i, (start, connection) in enumerate(starts):
        end = min(went.get(connection, now), now)
        if i + 1 < len(starts):
            end = min(end, starts[i + 1][0])
        if end > start:
            intervals.append((start, end))
    return intervals


def _time_online(
    row: TableShift, online: list[tuple[float, float]], first_seen: float, now: float
) -> None:
    start, end = max(row.start, first_seen), min(row.end, now)
    if end <= start:
        return
    covered = sum(max(0.0, min(e, end) - max(s, start)) for s, e in online)
    row.online_seconds = covered
    row.offline_seconds = (end - start) - covered


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
