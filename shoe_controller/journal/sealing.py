"""What of the journal may be published (rules E1 and E2).

- The card of a ``stub_card`` record is never published.
- The card of a ``card`` record is published only when its round has a ``round_closed``
  record and the card's position is the banker's (1) or one of the round's wagered positions
  (its ``bets_closed`` record).
- ``round_closed`` hands are published as written, except a position that is neither the
  banker nor wagered, which the writer should never have put there.
- Any other field named ``card`` or ``cards``, at any depth of any record (the card of a
  ``fault`` about a card outside the procedure or a duplicate card, a card that slipped into
  a ``shoe_event``), is never published.

A sealed value is replaced by :data:`SEALED`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from shoe_controller.journal.records import BANKER, Kind

SEALED: Final = "sealed"


@dataclass(frozen=True, slots=True)
class Disclosure:
    """What the journal says about publishing one round's hands."""

    closed: bool = False
    wagered: frozenset[int] = frozenset()

    def visible(self, position: object) -> bool:
        if isinstance(position, bool) or not isinstance(position, int | str):
            return False
        try:
            number = int(position)
        except ValueError:
            return False
        return self.closed and (number == BANKER or number in self.wagered)


def read_disclosures(conn: sqlite3.Connection) -> dict[str, Disclosure]:
    """Every round's disclosure, from its ``bets_closed`` and ``round_closed`` records."""
    wagered: dict[str, frozenset[int]] = {}
    closed: set[str] = set()
    rows = conn.execute(
        "SELECT round_id, kind, payload FROM records WHERE kind IN (?, ?) "
        "AND round_id IS NOT NULL ORDER BY seq",
        (Kind.BETS_CLOSED.value, Kind.ROUND_CLOSED.value),
    )
    for round_id, kind, text in rows:
        if kind == Kind.ROUND_CLOSED:
            closed.add(round_id)
            continue
        try:
            wagered[round_id] = frozenset(int(p) for p in json.loads(text)["wagered"])
        except (ValueError, TypeError, KeyError, RecursionError):
            # Not what the writer writes: nothing of that round is disclosed.
            wagered[round_id] = frozenset()
    return {
        round_id: Disclosure(round_id in closed, wagered.get(round_id, frozenset()))
        for round_id in wagered.keys() | closed
    }


def seal(kind: str, payload: Mapping[str, Any], disclosure: Disclosure | None) -> dict[str, Any]:
    """``payload`` with every identity that may not be published replaced by SEALED."""
    rules = disclosure or Disclosure()
    sealed: dict[str, Any] = _seal_fields(payload)
    if kind == Kind.CARD and rules.visible(payload.get("position")) and "card" in payload:
        sealed["card"] = payload["card"]
    elif kind == Kind.ROUND_CLOSED:
        hands = payload.get("hands")
        if isinstance(hands, Mapping):
            sealed["hands"] = {
                position: cards if rules.visible(position) else SEALED
                for position, cards in hands.items()
            }
        else:
            sealed["hands"] = SEALED
    return sealed


_IDENTITY_FIELDS: Final = frozenset({"card", "cards"})


def _seal_fields(value: Any) -> Any:
    """``value`` with every field named in _IDENTITY_FIELDS sealed, at any depth."""
    if isinstance(value, Mapping):
        return {
            key: SEALED if key in _IDENTITY_FIELDS else _seal_fields(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_seal_fields(item) for item in value]
    return value
