"""Checkpointer: the newest point is written, off the committing thread."""

from __future__ import annotations

import threading

from shoe_controller.journal.checkpoint import Checkpoint
from shoe_controller.journal.checkpointer import Checkpointer

WAIT = 10.0


def test_points_left_while_one_is_written_come_down_to_the_newest() -> None:
    written: list[int] = []
    entered, release = threading.Event(), threading.Event()

    def write(point: Checkpoint) -> None:
        entered.set()
        assert release.wait(WAIT)
        written.append(point.seq)

    checkpointer = Checkpointer(write, lambda exc: None)
    try:
        checkpointer.submit(Checkpoint(1, b"a"))
        assert entered.wait(WAIT)  # the thread writes point 1 and waits
        for seq in (2, 3, 4):
            checkpointer.submit(Checkpoint(seq, b"b"))
        assert not checkpointer.settle(0)
        release.set()
        assert checkpointer.settle(WAIT)
    finally:
        checkpointer.stop()
    assert written == [1, 4]


def test_a_failed_write_is_reported_and_the_thread_goes_on() -> None:
    failures: list[OSError] = []
    written: list[int] = []

    def write(point: Checkpoint) -> None:
        if point.seq == 1:
            raise OSError(28, "No space left on device")
        written.append(point.seq)

    checkpointer = Checkpointer(write, failures.append)
    try:
        checkpointer.submit(Checkpoint(1, b"a"))
        assert checkpointer.settle(WAIT)
        checkpointer.submit(Checkpoint(2, b"b"))
        assert checkpointer.settle(WAIT)
    finally:
        checkpointer.stop()
    assert [f.errno for f in failures] == [28] and written == [2]


def test_stop_writes_what_waits() -> None:
    written: list[int] = []
    checkpointer = Checkpointer(lambda point: written.append(point.seq), lambda exc: None)
    checkpointer.submit(Checkpoint(7, b"c"))
    checkpointer.stop()
    assert written == [7]
