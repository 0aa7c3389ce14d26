"""The pit's board: every table's live state, folded from public records and presence.

The board starts from the store (the last day's records and every table's presence) and
then follows the broker. It holds only what the boxes published: no card identity but a
closed round's hands, which the board does not keep.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from floor_protocol import Rejected, epoch
from shoe_floor.store import Store

HOUR: Final = 3600.0
DAY: Final = 24 * HOUR
#: The records the board folds; the rest (cards, stub counts, ...) change nothing on it.
BOARD_EVENTS: Final = ("state", "round_end", "fault", "fault_cleared", "connected")


@dataclass
class TableView:
    site: str
    table: str
    online: bool | None = None
    connection: str | None = None
    shoe: dict[str, Any] | None = None
    state: str | None = None
    round: str | None = None
    last_round: dict[str, Any] | None = None
    round_ends: collections.deque[float] = field(default_factory=collections.deque)
    fault: dict[str, Any] | None = None
    faults: collections.deque[tuple[float, str]] = field(default_factory=collections.deque)
    updated: float = 0.0

    def as_json(self, now: float) -> dict[str, Any]:
        while self.round_ends and self.round_ends[0] < now - HOUR:
            self.round_ends.popleft()
        while self.faults and self.faults[0][0] < now - DAY:
            self.faults.popleft()
        return {
            "site": self.site,
            "table": self.table,
            "online": self.online,
            "shoe": self.shoe,
            "state": self.state,
            "round": self.round,
            "last_round": self.last_round,
            "rounds_last_hour": len(self.round_ends),
            "fault": self.fault,
            "faults_last_day": len(self.faults),
            "updated": self.updated,
        }


class Board:
    """Thread-safe; ``listen`` gives a callback run after every change."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._tables: dict[tuple[str, str], TableView] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        #: Messages refused since the board started (and the store's last day of them), by
        #: reason: the pit's alarm.
        self._refused: collections.Counter[str] = collections.Counter()
        self._refused_tables: collections.Counter[str] = collections.Counter()

    def listen(self, callback: Callable[[], None]) -> None:
        self._listeners.append(callback)

    def seed(self, store: Store) -> None:
        """What the store knows: the last day's records, every table's presence, and the
        last day's refused messages."""
        now = self._clock()
        for (site, table, reason), count in store.quarantined(now - DAY, now).items():
            self._refused[reason] += count
            self._refused_tables[f"{site}/{table}" if table else ""] += count
        for event in store.events(BOARD_EVENTS, since=now - DAY):
            self.record(event.site, event.table_id, json.loads(event.body), notify=False)
        latest: dict[tuple[str, str], tuple[float, str, bool]] = {}
        for p in store.presence():
            key = (p.site, p.table_id)
            # A connection's going offline counts only if it is the latest connection.
            if p.online or latest.get(key, (0.0, "", True))[1] == p.connection:
                latest[key] = (p.at, p.connection, p.online)
        with self._lock:
            for (site, table), (at, connection, online) in latest.items():
                view = self._view(site, table)
                view.online, view.connection, view.updated = online, connection, at
        self._changed()

    def record(self, site: str, table: str, body: dict[str, Any], *, notify: bool = True) -> None:
        """Fold one public record."""
        name = body.get("event")
        if name not in BOARD_EVENTS:
            return
        at = _epoch(body.get("ts"), self._clock())
        with self._lock:
            view = self._view(site, table)
            view.updated = max(view.updated, at)
            if name == "state":
                view.state, view.round = body.get("state"), body.get("round")
            elif name == "round_end":
                view.last_round = {
                    "round": body.get("round"),
                    "outcome": body.get("outcome"),
                    "ended": body.get("ts"),
                }
                view.round_ends.append(at)
            elif name == "fault":
                view.fault = {"code": body.get("code"), "message": body.get("message")}
                view.faults.append((at, str(body.get("code"))))
            elif name == "fault_cleared":
                view.fault = None
            elif name == "connected":
                view.shoe = {"model": body.get("model"), "serial": body.get("serial")}
        if notify:
            self._changed()

    def refused(self, site: str, table: str, reason: str) -> None:
        """Count a message that was refused (unsigned, forged, malformed)."""
        with self._lock:
            self._refused[reason] += 1
            self._refused_tables[f"{site}/{table}" if table else ""] += 1
        self._changed()

    def status(self, site: str, table: str, body: dict[str, Any], at: float) -> None:
        """Fold a verified presence message (the box's status, or its Last Will)."""
        online, connection = body.get("online"), body.get("connection")
        if not isinstance(online, bool):
            return
        with self._lock:
            view = self._view(site, table)
            if not online and view.connection not in (None, connection):
                return  # the Last Will of a connection the box has already replaced
            view.online, view.connection = online, connection
            if online:
                shoe = body.get("shoe")
                if isinstance(shoe, dict):
                    view.shoe = {"model": shoe.get("model"), "serial": shoe.get("serial")}
                if body.get("state"):
                    view.state, view.round = body.get("state"), body.get("round")
            view.updated = at
        self._changed()

    def snapshot(self) -> dict[str, Any]:
        now = self._clock()
        with self._lock:
            tables = [self._tables[key].as_json(now) for key in sorted(self._tables)]
            refused = {
                "messages": sum(self._refused.values()),
                "by_reason": dict(sorted(self._refused.items())),
                "by_table": dict(sorted(self._refused_tables.items())),
            }
        return {"now": now, "tables": tables, "refused": refused}

    def _view(self, site: str, table: str) -> TableView:
        key = (site, table)
        view = self._tables.get(key)
        if view is None:
            view = self._tables[key] = TableView(site, table)
        return view

    def _changed(self) -> None:
        for callback in list(self._listeners):
            callback()


def _epoch(ts: object, default: float) -> float:
    if not isinstance(ts, str):
        return default
    try:
        return epoch(ts)
    except Rejected:
        return default
