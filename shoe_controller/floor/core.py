"""The forwarder's decisions, without I/O (as the link's core is): which records go in which
message, what the cursor may say once the broker acknowledged some of them, where reading
starts again after a refusal or a replay request, whether a replay request is answered,
and when the head and the status are due (:class:`Forwarding`). Time is passed in; the paho
driver (:mod:`.forwarder`) does the reading, the publishing, the writing and the waiting.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from floor_protocol import freshness
from floor_protocol.freshness import ReplayGuard
from floor_protocol.messages import MAX_PAYLOAD, MAX_RECORDS, Replay
from shoe_controller.service import events as ev

#: After the broker refused a record, wait this long (seconds) before sending it again.
REFUSED_RETRY: Final = 5.0

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


@dataclass(frozen=True)
class ForwarderState:
    """What the forwarder has done so far, for diagnostics and tests: one moment of it."""

    connected: bool
    journal_id: str | None
    cursor: int
    read_seq: int
    in_flight: int
    #: Replay requests refused since the start, by reason (fp.REPLAY_REFUSALS).
    replays_refused: Mapping[str, int] = field(default_factory=dict)


class Rewind(NamedTuple):
    """Read the journal again after ``seq``; ``asked`` when the floor asked for it."""

    seq: int
    asked: bool


class Forwarding:
    """One run of the forwarder, without I/O: where reading the journal stands, what is in
    flight and what the cursor says, the connection, the head, the status and the replay
    requests. The driver reads the journal, publishes, writes the cursor and tells this
    what happened; this says what is due.

    Only the forwarder's own thread calls it. ``now`` is a monotonic clock's (retries, the
    refusals' interval, the replay gate), ``wall`` the box's clock (the head's interval,
    the requests' freshness).
    """

    def __init__(
        self,
        *,
        window: int,
        head_interval: float,
        replay_interval: float,
        refusals_interval: float,
    ) -> None:
        self.window = window
        self.head_interval = head_interval
        self.refusals_interval = refusals_interval
        self._journal_id: str | None = None
        self._cursor = 0
        #: Every public record up to here was acknowledged, as far as settled messages tell.
        self._acknowledged = 0
        self._read_seq = 0
        self._prev_public = 0
        self._caught_up = False
        self._in_flight = InFlight()
        self._retry_at = -math.inf
        self._replay_after: int | None = None
        self._connected = False
        self._subscribed = False
        self._status_due = False
        self._status_sent: tuple[Any, ...] | None = None
        self._status_at = -math.inf
        self._refusals: dict[str, int] = {}
        self._refusals_sent: dict[str, int] = {}
        self._head_sent: tuple[int, int] = (0, 0)
        self._head_at = 0.0
        self._gate = ReplayGate(replay_interval)
        self._guard = ReplayGuard()
        #: The table as the records read tell it, for the status message.
        self._shoe: dict[str, Any] | None = None
        self._state: str | None = None
        self._round: str | None = None

    @property
    def journal_id(self) -> str | None:
        return self._journal_id

    @property
    def cursor(self) -> int:
        """What the cursor file says (or less): never a record it does not say."""
        return self._cursor

    @property
    def read_seq(self) -> int:
        """The last record read and published."""
        return self._read_seq

    @property
    def prev_public(self) -> int:
        """The last public record at or before ``read_seq``: the next message's ``prev``."""
        return self._prev_public

    @property
    def caught_up(self) -> bool:
        """The last read found nothing more in the journal."""
        return self._caught_up

    @property
    def in_flight(self) -> int:
        """Messages published and not yet acknowledged."""
        return len(self._in_flight)

    @property
    def connected(self) -> bool:
        return self._connected

    def snapshot(self) -> ForwarderState:
        return ForwarderState(
            self._connected,
            self._journal_id,
            self._cursor,
            self._read_seq,
            self.in_flight,
            dict(self._refusals),
        )

    # --- the connection ------------------------------------------------------------------

    def connect(self) -> None:
        """A connection is up. A broker that restarted without its store lost the retained
        status and head: both are said again on every connection."""
        self._connected = True
        self._subscribed = False
        self._status_due = True
        self._head_sent = (0, 0)

    def disconnect(self) -> bool:
        """The connection is down; True when it was up."""
        was, self._connected = self._connected, False
        return was

    def subscription_due(self) -> bool:
        """Subscribe to the replay requests now: once a connection, and only with the
        journal open (a request is for one journal; a retained one must not come before the
        box knows its journal's id)."""
        due = self._connected and self._journal_id is not None and not self._subscribed
        self._subscribed = self._subscribed or due
        return due

    # --- the journal and the cursor ------------------------------------------------------

    def open(self, journal_id: str, stored: int, last: int | None) -> bool:
        """Forward the journal ``journal_id``, whose last record is ``last``, after its
        cursor ``stored``. False when the cursor is ahead of the journal (an older copy of
        the journal replaced it): the journal is then forwarded again from its start."""
        self._journal_id = journal_id
        ahead = last is not None and stored > last
        self._cursor = self._acknowledged = 0 if ahead else stored
        return not ahead

    def rewind(self, seq: int, prev_public: int) -> None:
        """Read again from the record after ``seq``; ``prev_public`` is the last public
        record at or before it."""
        self._read_seq = seq
        self._prev_public = prev_public
        self._caught_up = False

    def cursor_due(self) -> int | None:
        """What the cursor should say now, when it may move: every public record up to it
        acknowledged, and past what it says."""
        if self._journal_id is None:
            return None
        through = max(self._acknowledged, self._in_flight.acknowledged_through(self._read_seq))
        return through if through > self._cursor else None

    def cursor_written(self, seq: int) -> None:
        """The cursor file says ``seq`` now; only now may the cursor in memory say it."""
        self._cursor = max(self._cursor, seq)
        self._acknowledged = max(self._acknowledged, seq)

    # --- publishing records and their acknowledgements -----------------------------------

    def room(self, now: float) -> int:
        """How many more records may be read for publishing: none while a refused message
        waits to be sent again."""
        if self._in_flight.refused() or now < self._retry_at:
            return 0
        return max(0, self.window - len(self._in_flight))

    def sent(self, mid: int, first: int, last: int) -> None:
        """The public records ``first`` to ``last`` went out as message ``mid``."""
        self._in_flight.add(mid, first, last)
        self._prev_public = self._read_seq = last

    def read(self, last: int | None) -> None:
        """The records up to ``last`` were read and published (None: there was nothing to
        read, the journal is caught up)."""
        self._caught_up = last is None
        if last is not None:
            self._read_seq = max(self._read_seq, last)

    def settle(self, mid: int, refused: bool, now: float) -> bool:
        """The broker acknowledged message ``mid``, or refused it; True when it refused one
        of ours, which is sent again REFUSED_RETRY seconds after ``now``."""
        if not self._in_flight.settle(mid, refused) or not refused:
            return False
        self._retry_at = now + REFUSED_RETRY
        return True

    def rewind_due(self) -> Rewind | None:
        """Where reading must start again, if anywhere: at a refused message once every one
        before it was settled, or after what an answered replay request asked for; the
        earlier of the two."""
        target: Rewind | None = None
        if self._in_flight.refused() and self._in_flight.all_settled():
            # Every record sent before the refused one was acknowledged: start over there.
            seq = self._in_flight.acknowledged_through(self._read_seq)
            self._acknowledged = max(self._acknowledged, seq)
            self._in_flight.clear()
            target = Rewind(seq, asked=False)
        asked, self._replay_after = self._replay_after, None
        reading = self._read_seq if target is None else target.seq
        if asked is not None and asked < reading:
            target = Rewind(asked, asked=True)
        return target

    def drained(self) -> bool:
        """Everything read was acknowledged and there is nothing more to read."""
        return self._caught_up and len(self._in_flight) == 0

    # --- replay requests -----------------------------------------------------------------

    def consider(self, request: Replay, wall: float, now: float) -> str | None:
        """The verdict on a signed, well-formed replay request received at ``wall``: None
        when it is for another journal (none of this box's business), FRESH when it is
        answered (``rewind_due`` says where from), or the reason it is refused."""
        if request.journal != self._journal_id:
            return None
        # Fresh and never seen, or a copy of a request read on the broker: its signature
        # is genuine all the same.
        verdict = self._guard.check(request.at, request.nonce, wall)
        if verdict == freshness.FRESH and not self._gate.admit(now):
            verdict = freshness.TOO_SOON
        if verdict == freshness.FRESH:
            after = request.after
            self._replay_after = (
                after if self._replay_after is None else min(self._replay_after, after)
            )
        return verdict

    def refuse(self, reason: str) -> tuple[int, int]:
        """Count a refused replay request: (the count of its reason, of all)."""
        count = self._refusals[reason] = self._refusals.get(reason, 0) + 1
        return count, sum(self._refusals.values())

    @property
    def replay_interval(self) -> float:
        return self._gate.interval

    # --- the status ----------------------------------------------------------------------

    def note(self, event: ev.ServiceEvent) -> None:
        """Keep what the status shows of the table: its shoe, its state and round."""
        if isinstance(event, ev.ConnectedEvent):
            self._shoe = {
                "model": event.model,
                "serial": event.serial,
                "firmware": event.firmware,
                "approved": event.approved,
            }
        elif isinstance(event, ev.StateEvent):
            self._state = event.state
            self._round = event.round

    def recalls(self, event: ev.ServiceEvent) -> bool:
        """Whether ``event``, read back from before the cursor, tells what the first status
        needs and the records read so far did not."""
        if isinstance(event, ev.ConnectedEvent):
            return self._shoe is None
        return isinstance(event, ev.StateEvent) and self._state is None

    def recalled(self) -> bool:
        return self._shoe is not None and self._state is not None

    def status_due(self, now: float) -> bool:
        """Publish the status now: connected, and the connection is new, what it shows
        changed, or the refusals changed (told at most once a refusals interval: a flood of
        requests must not become a flood of statuses)."""
        refusals = self._refusals != self._refusals_sent and (
            now >= self._status_at + self.refusals_interval
        )
        due = self._connected and (
            self._status_due or self._shown() != self._status_sent or refusals
        )
        self._status_due = False
        return due

    def status(self) -> dict[str, Any]:
        """The table's part of an online status."""
        return {
            "shoe": self._shoe,
            "state": self._state,
            "round": self._round,
            "replays_refused": dict(sorted(self._refusals.items())),
        }

    def status_published(self, status: Mapping[str, Any], now: float) -> None:
        self._status_sent = self._shown()
        self._refusals_sent = dict(status["replays_refused"])
        self._status_at = now

    def _shown(self) -> tuple[Any, ...]:
        return self._shoe, self._state, self._round

    # --- the head ------------------------------------------------------------------------

    def head_wait(self, wall: float) -> float | None:
        """Seconds until the head may be published, None when it has nothing new to say."""
        if self._journal_id is None or self._read_seq <= 0:
            return None
        if (self._read_seq, self._prev_public) == self._head_sent:
            return None
        return max(0.0, self._head_at + self.head_interval - wall)

    def head_due(self, wall: float, *, force: bool) -> bool:
        """Publish the head now: something new to say, and (unless ``force``) at most once
        a head interval."""
        wait = self.head_wait(wall)
        return wait is not None and (force or wait == 0.0)

    def head_published(self, wall: float) -> None:
        self._head_sent = (self._read_seq, self._prev_public)
        self._head_at = wall
