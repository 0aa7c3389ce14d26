"""The gap finder: which public records of a journal have not arrived.

The public records of a journal are chained by their ``prev`` numbers, so a record whose
predecessor is not stored (or a chain head naming a public record that is not stored)
shows a gap. A progress mark per journal moves forward along the stored links; it only
ever moves forward, so two collectors scanning at once agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from shoe_floor.store import Store

#: Stored links read at a time.
_PAGE: Final = 2000


@dataclass(frozen=True, slots=True)
class Gap:
    """Public records of a table's journal that have not arrived: those after ``after``."""

    site: str
    table_id: str
    journal_id: str
    after: int


def find_gap(
    store: Store, site: str, table: str, journal: str, settled_before: float
) -> tuple[bool, Gap | None]:
    """Advance the journal's progress mark along the stored records' ``prev`` links.

    Returns (complete, gap): complete when no record is missing as far as the store knows;
    a gap when records after the mark are missing while later records (or a head naming a
    later public record) arrived before ``settled_before``."""
    # The head is read before the records, so a record stored meanwhile never makes it
    # look ahead.
    start, head_seq, head_received = store.progress_of(site, table, journal)
    through = start
    waiting_since: float | None = None
    while True:
        rows = store.links_after(site, table, journal, through, _PAGE)
        moved = False
        for seq, prev, received in rows:
            if prev != through:
                waiting_since = received
                break
            through, moved = seq, True
        if not moved or waiting_since is not None or len(rows) < _PAGE:
            break
    if through != start:
        store.set_progress(site, table, journal, through)
    if waiting_since is None and head_seq is not None and head_seq > through:
        waiting_since = head_received
    if waiting_since is None:
        return True, None
    if waiting_since < settled_before:
        return False, Gap(site, table, journal, through)
    return False, None
