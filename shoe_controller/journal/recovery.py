"""Rounds left open by a controller that stopped (rule F3), read from the journal.

A round is open when the journal has its ``round_opened`` record and no ``round_ended``
record. (A round that ended ``dealt`` and awaits its ``round_closed`` is not open: its
outcome is decided.) What to do with such a round is the procedure's decision; the journal
only reports it.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shoe_controller.journal.records import Kind


@dataclass(frozen=True, slots=True)
class OpenRound:
    round_id: str
    #: Sequence number and wall time of its ``round_opened`` record.
    opened_seq: int
    opened_at: str
    start_position: int | None = None
    wagered: tuple[int, ...] = ()
    #: Cards read so far, by position.
    cards_per_position: Mapping[int, int] = field(default_factory=dict)


def find_open_rounds(conn: sqlite3.Connection) -> list[OpenRound]:
    opened = conn.execute(
        "SELECT seq, wall, round_id FROM records WHERE kind = ? AND round_id NOT IN "
        "(SELECT round_id FROM records WHERE kind = ? AND round_id IS NOT NULL) ORDER BY seq",
        (Kind.ROUND_OPENED.value, Kind.ROUND_ENDED.value),
    ).fetchall()
    return [_describe(conn, seq, wall, round_id) for seq, wall, round_id in opened]


def _describe(conn: sqlite3.Connection, seq: int, wall: str, round_id: str) -> OpenRound:
    start: int | None = None
    wagered: tuple[int, ...] = ()
    cards: Counter[int] = Counter()
    rows = conn.execute(
        "SELECT kind, payload FROM records WHERE kind IN (?, ?, ?) AND round_id = ? ORDER BY seq",
        (Kind.START_POSITION.value, Kind.BETS_CLOSED.value, Kind.CARD.value, round_id),
    )
    for kind, text in rows:
        payload: dict[str, Any] = json.loads(text)
        if kind == Kind.CARD:
            cards[int(payload["position"])] += 1
        elif kind == Kind.BETS_CLOSED:
            wagered = tuple(sorted(int(p) for p in payload["wagered"]))
        else:
            start = int(payload["position"])
    return OpenRound(round_id, seq, wall, start, wagered, dict(sorted(cards.items())))
