"""Builders shared by the journal tests: a fake clock, realistic rounds, direct tampering."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from firmware_protocol import DECK_53
from shoe_controller.journal import Journal, Kind

POSITIONS = range(1, 8)


class FakeClock:
    """Wall and monotonic clocks that advance by a fixed step at every reading."""

    def __init__(self, wall: float = 1_746_130_000.0, mono: float = 5_000.0) -> None:
        self._wall = wall
        self._mono = mono

    def wall(self) -> float:
        self._wall += 0.25
        return self._wall

    def monotonic(self) -> float:
        self._mono += 0.25
        return self._mono


def open_journal(path: Path, clock: FakeClock | None = None) -> Journal:
    clock = clock or FakeClock()
    return Journal.open(path, clock=clock.wall, monotonic=clock.monotonic)


@dataclass
class DealtRound:
    """What a round put in the journal, for the tests to check the export against."""

    round_id: str
    wagered: frozenset[int]
    hands: dict[int, list[str]] = field(default_factory=dict)
    stub: list[str] = field(default_factory=list)
    closed: bool = False

    def visible_cards(self) -> set[str]:
        if not self.closed:
            return set()
        return {c for p, cards in self.hands.items() if p == 1 or p in self.wagered for c in cards}

    def sealed_cards(self) -> set[str]:
        every = {c for cards in self.hands.values() for c in cards} | set(self.stub)
        return every - self.visible_cards()


def deal_round(
    journal: Journal,
    round_id: str,
    *,
    wagered: Iterable[int],
    seed: int,
    cards: int = 49,
    end: bool = True,
    close: bool = True,
) -> DealtRound:
    """Journal a round as the service would: cards in deal order from a start position,
    then the stub, the outcome and the closing. (The service commits each card; here the
    cards share one transaction to keep the tests fast, which the content does not show.)"""
    rng = random.Random(seed)
    deck = [card.text for card in DECK_53]
    rng.shuffle(deck)
    wagered_set = frozenset(wagered)
    dealt = DealtRound(round_id, wagered_set)
    start = rng.randint(1, 7)
    with journal.transaction():
        journal.append(Kind.ROUND_OPENED, {"round_id": round_id}, round_id)
        journal.append(Kind.BETS_CLOSED, {"wagered": sorted(wagered_set)}, round_id)
        journal.append(
            Kind.START_POSITION,
            {"method": "rng", "raw": [start], "position": start},
            round_id,
        )
    with journal.transaction():
        for index in range(1, cards + 1):
            position = (start - 1 + index - 1) % 7 + 1
            card = deck[index - 1]
            dealt.hands.setdefault(position, []).append(card)
            journal.append(
                Kind.SHOE_EVENT,
                {"seq": index, "message": {"type": "CardDrawn", "draw_index": index}},
                round_id,
            )
            journal.append(
                Kind.CARD,
                {"index": index, "position": position, "card": card, "gate_mode": "deal"},
                round_id,
            )
    if cards < 49 or not end:
        return dealt
    with journal.transaction():
        for offset, card in enumerate(deck[49:], start=1):
            dealt.stub.append(card)
            journal.append(Kind.STUB_CARD, {"index": 49 + offset, "card": card}, round_id)
        journal.append(Kind.STUB_COUNTED, {"count": 4, "source": "shoe"}, round_id)
        journal.append(
            Kind.ROUND_ENDED,
            {
                "outcome": "dealt",
                "reason": "49 cards dealt, stub of 4",
                "start_position": start,
                "cards_per_position": {str(p): 7 for p in POSITIONS},
                "wagered": sorted(wagered_set),
                "collected_unseen": [p for p in POSITIONS if p != 1 and p not in wagered_set],
            },
            round_id,
        )
    if close:
        hands = {str(p): dealt.hands[p] for p in POSITIONS if p == 1 or p in wagered_set}
        journal.append(Kind.ROUND_CLOSED, {"hands": hands}, round_id)
        dealt.closed = True
    return dealt


def fill(journal: Journal, count: int, round_id: str | None = None) -> None:
    """Append ``count`` simple input records in one transaction."""
    with journal.transaction():
        for i in range(count):
            journal.append(Kind.INPUT, {"by": "croupier", "name": "confirm", "args": [i]}, round_id)


def tamper(path: Path, *statements: str) -> None:
    """Change the journal file directly, as someone with write access to it could."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("DROP TRIGGER IF EXISTS records_no_update")
        conn.execute("DROP TRIGGER IF EXISTS records_no_delete")
        conn.execute("BEGIN")
        for statement in statements:
            conn.execute(statement)
        conn.execute("COMMIT")
    finally:
        conn.close()


def rows(path: Path, sql: str, *args: object) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()
