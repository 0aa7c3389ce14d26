"""Rounds left open by a controller that stopped, and the records that void them (rule F3).

A round is open when the journal has its ``round_opened`` record and no ``round_ended``
record. (A round that ended ``dealt`` and awaits its ``round_closed`` is not open: its
outcome is decided.)
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shoe_controller.journal.records import Kind, Outcome

RULE: str = "F3"


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


def void_payload(open_round: OpenRound, reason: str) -> dict[str, Any]:
    """The ``round_ended`` payload voiding ``open_round`` under Section 10.13."""
    return {
        "outcome": Outcome.VOID_FAULT.value,
        "reason": reason,
        "rule": RULE,
        "start_position": open_round.start_position,
        "cards_per_position": {str(p): n for p, n in open_round.cards_per_position.items()},
        "wagered": list(open_round.wagered),
        # A void round shows no hand: every card dealt goes to the discard rack unseen.
        "collected_unseen": sorted(open_round.cards_per_position),
    }
