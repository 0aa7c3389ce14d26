"""The forwarder's core on its own, in virtual time: batches, acknowledgements and the
cursor, the replay gate, and the decisions of a run (where reading starts again, what the
cursor may say, when the status and the head are due)."""

from __future__ import annotations

from typing import Any

from floor_protocol import freshness
from floor_protocol.messages import MAX_PAYLOAD, MAX_RECORDS, Replay
from shoe_controller.floor.core import Forwarding, InFlight, ReplayGate, Rewind, batches
from shoe_controller.service import events as ev


def ready(seq: int, size: int = 100) -> tuple[int, str, bytes]:
    return seq, "0" * 64, b"x" * size


def test_live_records_go_one_a_message() -> None:
    assert [len(b) for b in batches([ready(1), ready(2), ready(3)], backlog=False)] == [1, 1, 1]


def test_a_backlog_goes_together_within_the_bounds() -> None:
    records = [ready(seq, 1000) for seq in range(1, 201)]
    sent = list(batches(records, backlog=True))
    assert [r for b in sent for r in b] == records
    # 65 records of 1,000 bytes and their 64 line ends fit in 64 KiB; 66 do not.
    assert [len(b) for b in sent] == [65, 65, 65, 5]
    assert all(sum(len(r[2]) for r in b) + len(b) - 1 <= MAX_PAYLOAD for b in sent)
    small = [ready(seq, 10) for seq in range(1, 2 * MAX_RECORDS + 2)]
    assert [len(b) for b in batches(small, backlog=True)] == [MAX_RECORDS, MAX_RECORDS, 1]


def test_the_cursor_moves_only_over_what_was_acknowledged_in_order() -> None:
    flight = InFlight()
    flight.add(mid=1, first=1, last=10)
    flight.add(mid=2, first=12, last=20)
    flight.add(mid=3, first=21, last=21)
    assert flight.acknowledged_through(21) == 0
    assert flight.settle(2, refused=False)
    assert flight.acknowledged_through(21) == 0  # message 1 is still out
    assert flight.settle(1, refused=False)
    assert flight.acknowledged_through(21) == 20
    assert not flight.settle(99, refused=False)  # none of ours
    assert flight.settle(3, refused=True)
    assert flight.refused() and flight.all_settled()
    assert flight.acknowledged_through(21) == 20  # sent again from 21


def test_the_replay_gate_answers_one_an_interval() -> None:
    gate = ReplayGate(10.0)
    answered = [gate.admit(now) for now in (0.0, 0.5, 9.9, 10.0, 10.1, 25.0)]
    assert answered == [True, False, False, True, False, True]
    assert all(ReplayGate(0.0).admit(now) for now in (0.0, 0.0, 0.1))


# --- Forwarding: the forwarder's state and decisions --------------------------------------

JOURNAL = "a" * 32


def forwarding(*, window: int = 10, replay_interval: float = 10.0) -> Forwarding:
    return Forwarding(
        window=window, head_interval=1.0, replay_interval=replay_interval, refusals_interval=60.0
    )


def opened(stored: int = 0, last: int | None = 100, **kwargs: Any) -> Forwarding:
    core = forwarding(**kwargs)
    core.open(JOURNAL, stored, last)
    core.rewind(core.cursor, 0)
    return core


def request(
    after: int, nonce: str = "1" * 32, at: float = 1000.0, journal: str = JOURNAL
) -> Replay:
    return Replay("casino", "T1", journal, after, at, nonce)


def test_forwarding_resumes_after_the_cursor_or_from_the_start_when_it_is_ahead() -> None:
    core = forwarding()
    assert core.open(JOURNAL, 40, 100) and core.cursor == 40
    ahead = forwarding()
    # The journal was replaced by an older copy of itself: forward it all again.
    assert not ahead.open(JOURNAL, 140, 100) and ahead.cursor == 0
    empty = forwarding()
    assert empty.open(JOURNAL, 0, None) and empty.cursor == 0


def test_the_cursor_in_memory_moves_only_once_written() -> None:
    core = opened()
    core.sent(1, 1, 10)
    core.read(10)
    assert core.cursor_due() is None  # nothing acknowledged yet
    core.settle(1, refused=False, now=0.0)
    assert core.cursor_due() == 10
    assert core.cursor == 0 and core.snapshot().cursor == 0  # not written: not moved
    assert core.cursor_due() == 10  # due again, at the next write
    core.cursor_written(10)
    assert core.cursor == 10 and core.snapshot().cursor == 10
    assert core.cursor_due() is None


def test_a_refused_message_is_read_again_after_the_retry_and_the_cursor_waits_for_its_write() -> (
    None
):
    core = opened(window=3)
    core.sent(1, 1, 10)
    core.sent(2, 12, 20)
    core.read(20)
    assert core.room(0.0) == 1
    assert core.settle(2, refused=True, now=100.0)
    assert core.rewind_due() is None  # message 1 is still out
    assert core.room(100.0) == 0  # nothing goes out before the refused one
    assert not core.settle(1, refused=False, now=101.0)
    rewind = core.rewind_due()
    assert rewind == Rewind(11, asked=False)
    # What was acknowledged is the cursor's to write, not yet the cursor.
    assert core.cursor == 0 and core.in_flight == 0
    core.rewind(rewind.seq, 10)
    assert core.cursor_due() == 11
    assert core.room(104.9) == 0 and core.room(105.0) == 3
    # A write that fails leaves the cursor where it was; the next step tries again.
    assert core.cursor_due() == 11
    core.cursor_written(11)
    assert core.cursor == 11


def test_the_acknowledged_point_of_a_refusal_survives_a_replay_rewinding_before_it() -> None:
    core = opened(window=3)
    core.sent(1, 1, 10)
    core.sent(2, 12, 20)
    core.read(20)
    core.settle(1, refused=False, now=0.0)
    core.settle(2, refused=True, now=0.0)
    assert core.consider(request(after=3), wall=1000.0, now=0.0) == freshness.FRESH
    assert core.rewind_due() == Rewind(3, asked=True)  # the earlier of the two
    core.rewind(3, 2)
    assert core.cursor_due() == 11


def test_a_replay_request_rewinds_only_to_before_where_reading_is() -> None:
    core = opened()
    core.read(50)
    assert core.consider(request(after=60), wall=1000.0, now=0.0) == freshness.FRESH
    assert core.rewind_due() is None  # not read that far yet: it goes out anyway
    assert core.consider(request(after=20, nonce="2" * 32), wall=1000.0, now=20.0) == (
        freshness.FRESH
    )
    assert core.rewind_due() == Rewind(20, asked=True)
    assert core.rewind_due() is None  # answered once


def test_replay_requests_for_another_journal_copies_and_floods_are_told_apart() -> None:
    core = opened(replay_interval=10.0)
    assert core.consider(request(0, journal="b" * 32), wall=1000.0, now=0.0) is None
    assert core.consider(request(0), wall=1000.0, now=0.0) == freshness.FRESH
    assert core.consider(request(0), wall=1000.0, now=20.0) == freshness.REPLAYED
    assert core.consider(request(0, nonce="3" * 32), wall=1000.0, now=5.0) == freshness.TOO_SOON
    assert core.consider(request(0, nonce="4" * 32), wall=1200.0, now=30.0) == freshness.STALE
    assert core.refuse(freshness.REPLAYED) == (1, 1)
    assert core.refuse(freshness.REPLAYED) == (2, 2)
    assert core.refuse("bad_signature") == (1, 3)
    assert core.snapshot().replays_refused == {freshness.REPLAYED: 2, "bad_signature": 1}


def test_the_replay_topic_is_subscribed_once_a_connection_and_only_with_the_journal_open() -> None:
    core = forwarding()
    core.connect()
    assert not core.subscription_due()  # a request names its journal: it must be known
    core.open(JOURNAL, 0, None)
    assert core.subscription_due()
    assert not core.subscription_due()
    assert core.disconnect() and not core.disconnect()
    assert not core.subscription_due()
    core.connect()
    assert core.subscription_due()  # a clean start: a new session subscribes again


def test_the_status_is_said_again_at_each_connection_and_when_it_changes() -> None:
    core = opened()
    assert not core.status_due(0.0)  # offline: nothing can be said
    core.connect()
    assert core.status_due(0.0)
    core.status_published(core.status(), 0.0)
    assert not core.status_due(1.0)
    core.note(ev.StateEvent(state="dealing", round="r1"))
    assert core.status_due(1.0)
    core.status_published(core.status(), 1.0)
    core.disconnect()
    core.connect()
    assert core.status_due(2.0)  # a broker without its store lost the retained one


def test_refusals_change_the_status_at_most_once_an_interval() -> None:
    core = opened()
    core.connect()
    assert core.status_due(0.0)
    core.status_published(core.status(), 0.0)
    core.refuse(freshness.STALE)
    assert not core.status_due(59.9)
    assert core.status_due(60.0)
    status = core.status()
    assert status["replays_refused"] == {freshness.STALE: 1}
    core.status_published(status, 60.0)
    assert not core.status_due(500.0)


def test_the_head_is_due_with_something_new_at_most_once_an_interval() -> None:
    core = opened()
    assert core.head_wait(0.0) is None  # nothing read yet
    core.sent(1, 1, 5)
    core.read(6)
    assert core.head_due(10.0, force=False)
    core.head_published(10.0)
    assert core.head_wait(10.5) is None  # nothing new
    core.read(7)
    assert core.head_wait(10.5) == 0.5
    assert not core.head_due(10.5, force=False)
    assert core.head_due(10.5, force=True)
    assert core.head_due(11.0, force=False)
    core.head_published(11.0)
    core.connect()  # the broker may have lost the retained head
    assert core.head_due(11.1, force=True)


def test_draining_ends_when_everything_read_was_acknowledged() -> None:
    core = opened()
    core.sent(1, 1, 5)
    core.read(5)
    core.read(None)
    assert core.caught_up and not core.drained()
    core.settle(1, refused=False, now=0.0)
    assert core.drained()
