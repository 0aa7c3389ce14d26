"""PortDescriptor: the serial transport's direct reads and writes, and what wakes them."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator

import pytest

from shoe_controller.hal.port_descriptor import NoData, PortDescriptor, PortShut

WAIT = 10.0


@pytest.fixture
def pair() -> Iterator[tuple[int, int, PortDescriptor]]:
    """A pipe standing for the device: the descriptor reads one end, or writes the other."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    descriptor = PortDescriptor(read_end)
    yield read_end, write_end, descriptor
    descriptor.close()
    for fd in (read_end, write_end):
        os.close(fd)


def test_a_read_returns_what_arrived_and_times_out_on_nothing(
    pair: tuple[int, int, PortDescriptor],
) -> None:
    _, write_end, descriptor = pair
    assert descriptor.read(0) == b""
    os.write(write_end, b"\x01\x02\x03")
    assert descriptor.read(WAIT) == b"\x01\x02\x03"


def test_an_interrupt_ends_the_next_read_at_once_and_only_that_one(
    pair: tuple[int, int, PortDescriptor],
) -> None:
    _, write_end, descriptor = pair
    descriptor.interrupt()
    descriptor.interrupt()  # two wake-ups pending end one read: both are drained
    assert descriptor.read(60.0) == b""
    os.write(write_end, b"x")
    assert descriptor.read(WAIT) == b"x"


def test_data_and_an_interrupt_together_return_the_data(
    pair: tuple[int, int, PortDescriptor],
) -> None:
    _, write_end, descriptor = pair
    os.write(write_end, b"card")
    descriptor.interrupt()
    assert descriptor.read(WAIT) == b"card"


def test_readiness_without_data_is_no_data() -> None:
    other_read, other_write = os.pipe()
    os.close(other_write)  # the other side is gone: readable, and nothing to read
    descriptor = PortDescriptor(other_read)
    try:
        with pytest.raises(NoData, match="returned no data"):
            descriptor.read(WAIT)
    finally:
        descriptor.close()
        os.close(other_read)


def test_shut_ends_a_blocked_read_in_another_thread(
    pair: tuple[int, int, PortDescriptor],
) -> None:
    _, _, descriptor = pair
    outcome: list[BaseException] = []

    def reader() -> None:
        try:
            descriptor.read(60.0)
        except PortShut as exc:
            outcome.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    descriptor.shut()
    thread.join(WAIT)
    assert not thread.is_alive() and len(outcome) == 1


def _full_pipe() -> tuple[int, int, PortDescriptor]:
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    return read_end, write_end, PortDescriptor(write_end)


def test_a_write_the_device_does_not_take_times_out() -> None:
    read_end, write_end, descriptor = _full_pipe()
    try:
        with pytest.raises(TimeoutError):
            descriptor.write(b"\x55" * 100_000, 0.05)
    finally:
        descriptor.close()
        os.close(read_end)
        os.close(write_end)


def test_a_write_finishes_as_the_device_takes_the_rest() -> None:
    read_end, write_end, descriptor = _full_pipe()
    data = os.urandom(50_000)
    received = bytearray()

    def device() -> None:
        while len(received) < len(data):
            received.extend(os.read(read_end, 65536))

    thread = threading.Thread(target=device)
    thread.start()
    try:
        descriptor.write(data, WAIT)
        thread.join(WAIT)
        assert bytes(received) == data
    finally:
        descriptor.close()
        os.close(read_end)
        os.close(write_end)


def test_shut_ends_a_blocked_write_in_another_thread() -> None:
    read_end, write_end, descriptor = _full_pipe()
    outcome: list[BaseException] = []

    def writer() -> None:
        try:
            descriptor.write(b"\x55" * 100_000, 60.0)
        except PortShut as exc:
            outcome.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        descriptor.shut()
        thread.join(WAIT)
        assert not thread.is_alive() and len(outcome) == 1
    finally:
        descriptor.close()
        os.close(read_end)
        os.close(write_end)


def test_interrupt_and_shut_after_close_touch_nothing(
    pair: tuple[int, int, PortDescriptor],
) -> None:
    _, _, descriptor = pair
    descriptor.close()
    descriptor.interrupt()
    descriptor.shut()
