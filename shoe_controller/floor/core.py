"""The forwarder's decisions, without I/O (as the link's core is): which records go in which
message, what the cursor may say once the broker acknowledged some of them, and whether a
replay request is answered. Time is passed in; the paho driver (:mod:`.forwarder`) does
the reading, the publishing and the waiting.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from floor_protocol.messages import MAX_PAYLOAD, MAX_RECORDS

#: One public record ready to go: (seq, MAC in hex, its compact JSON).
Ready = tuple[int, str, bytes]


def batches(records: Sequence[Ready], *, backlog: bool) -> Iterator[list[Ready]]:
    """The messages ``records`` go in, in order: one record a message when live; when a
    backlog, consecutive records together, each message at most MAX_PAYLOAD bytes (the
    records a line each) and MAX_RECORDS records."""
    batch: list[Ready] = []
    size = 0
    for record in records:
        grown = size + len(record[2]) + (1 if batch else 0)
        if batch and (not backlog or grown > MAX_PAYLOAD or len(batch) >= MAX_RECORDS):
            yield batch
            batch, grown = [], len(record[2])
        batch.append(record)
        size = grown
    if batch:
        yield batch


@dataclass
class _Sent:
    """One message in flight: the records ``first`` to ``last``."""

    first: int
    last: int
    state: str = "sent"  # "sent", "acked" or "refused"


class InFlight:
    """Messages published and not yet acknowledged, in publish order, and what the cursor
    may say: every public record up to it acknowledged."""

    def __init__(self) -> None:
        self._order: collections.deque[_Sent] = collections.deque()
        self._by_mid: dict[int, _Sent] = {}

    def __len__(self) -> int:
        return len(self._order)

    def add(self, mid: int, first: int, last: int) -> None:
        sent = _Sent(first, last)
        self._order.append(sent)
        self._by_mid[mid] = sent

    def settle(self, mid: int, refused: bool) -> bool:
        """Mark ``mid`` acknowledged (or refused); False when it is none of ours."""
        sent = self._by_mid.pop(mid, None)
        if sent is None:
            return False
        sent.state = "refused" if refused else "acked"
        while self._order and self._order[0].state == "acked":
            self._order.popleft()
        return True

    def acknowledged_through(self, read_seq: int) -> int:
        """The last record such that every public record up to it was acknowledged."""
        return self._order[0].first - 1 if self._order else read_seq

    def refused(self) -> bool:
        return bool(self._order) and self._order[0].state == "refused"

    def all_settled(self) -> bool:
        return not self._by_mid

    def clear(self) -> None:
        self._order.clear()
        self._by_mid.clear()


class ReplayGate:
    """At most one replay request answered every ``interval`` seconds: a flood of them,
    even signed, costs the box one read of its journal an interval."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._answered: float | None = None

    def admit(self, now: float) -> bool:
        if self._answered is not None and now - self._answered < self.interval:
            return False
        self._answered = now
        return True
