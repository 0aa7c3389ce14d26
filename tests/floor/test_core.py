"""The forwarder's core on its own, in virtual time: batches, acknowledgements and the
cursor, and the replay gate."""

from __future__ import annotations

from floor_protocol.messages import MAX_PAYLOAD, MAX_RECORDS
from shoe_controller.floor.core import InFlight, ReplayGate, batches


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
