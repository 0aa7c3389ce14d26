"""The reader's inbox: requests from other threads reach a reader blocked in a read."""

from __future__ import annotations

import threading

from shoe_controller.hal.base import Transport
from shoe_controller.link.inbox import Inbox

WAIT = 10.0


class _Blocking(Transport):
    """A transport whose read blocks until interrupted (or its timeout)."""

    def __init__(self) -> None:
        self._woken = threading.Event()
        self.blocked = threading.Event()
        self.reads = 0
        self.interrupts = 0

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    @property
    def is_open(self) -> bool:
        return True

    def read(self, timeout: float) -> bytes:
        self.reads += 1
        self.blocked.set()
        self._woken.wait(timeout)
        self._woken.clear()
        return b""

    def write(self, data: bytes) -> None:
        pass

    def interrupt(self) -> None:
        self.interrupts += 1
        self._woken.set()

    @property
    def interruptible(self) -> bool:
        return True


def test_a_request_posted_during_a_read_ends_it_and_runs_next() -> None:
    inbox, transport = Inbox(), _Blocking()
    inbox.open()
    inbox.attach(transport)
    ran = threading.Event()
    reading = threading.Thread(target=inbox.read, args=(transport, 3600.0))
    reading.start()
    assert transport.blocked.wait(WAIT)
    assert inbox.post(ran.set)
    reading.join(WAIT)
    assert not reading.is_alive() and transport.interrupts == 1
    assert not ran.is_set()  # requests run on the reader's thread, when it runs them
    inbox.run()
    assert ran.is_set()


def test_a_waiting_request_skips_the_read_and_a_busy_reader_is_not_interrupted() -> None:
    inbox, transport = Inbox(), _Blocking()
    inbox.open()
    inbox.attach(transport)
    done: list[int] = []
    assert inbox.post(lambda: done.append(1))
    assert transport.interrupts == 0  # nobody was reading
    assert inbox.read(transport, 3600.0) == b"" and transport.reads == 0
    inbox.run()
    assert done == [1]


def test_a_pause_ends_when_a_request_or_an_interrupt_comes() -> None:
    inbox = Inbox()
    inbox.open()
    pausing = threading.Thread(target=inbox.pause, args=(3600.0,))
    pausing.start()
    inbox.post(lambda: None)  # before the pause waits, or while: either way it ends
    pausing.join(WAIT)
    assert not pausing.is_alive()
    inbox.run()
    stopped = threading.Thread(target=inbox.pause, args=(3600.0,))
    stopped.start()
    inbox.interrupt()
    stopped.join(WAIT)
    assert not stopped.is_alive()


def test_no_request_is_taken_before_open_or_after_close() -> None:
    inbox = Inbox()
    assert not inbox.post(lambda: None)
    inbox.open()
    assert inbox.post(lambda: None)
    inbox.close()
    assert not inbox.post(lambda: None)
    inbox.run()  # what was taken still runs
