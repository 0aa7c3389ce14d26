"""interrupt(): a read blocked in another thread returns early and the transport stays open
(the link driver's stop relies on it)."""

from __future__ import annotations

import os
import threading

from shoe_controller.hal.base import Transport
from shoe_controller.hal.serial_transport import SerialTransport
from shoe_controller.simulator.transport import SimTransport, switch_off


def _blocked_read_returns(transport: Transport) -> None:
    done = threading.Event()
    results: list[bytes] = []

    def reader() -> None:
        results.append(transport.read(60.0))
        done.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    # The read would block for a minute; interrupted, it lets go at once.
    for _ in range(100):
        transport.interrupt()
        if done.wait(0.05):
            break
    assert done.is_set(), "interrupt() did not wake the blocked read"
    thread.join(5)
    assert results and transport.is_open


def test_interrupt_wakes_a_serial_read() -> None:
    master, slave = os.openpty()
    transport = SerialTransport(os.ttyname(slave))
    transport.open()
    try:
        _blocked_read_returns(transport)
        os.write(master, b"\x01\x02")
        assert transport.read(5.0) == b"\x01\x02"  # still usable afterwards
    finally:
        transport.close()
        os.close(master)
        os.close(slave)


def test_interrupt_wakes_a_simulator_read() -> None:
    address = "sim://?seed=77&pace=0&heartbeat=60&autoload=0"
    transport = SimTransport.from_address(address)
    transport.open()
    try:
        transport.read(0.5)  # whatever the shoe says first
        _blocked_read_returns(transport)
    finally:
        transport.close()
        switch_off(address)
