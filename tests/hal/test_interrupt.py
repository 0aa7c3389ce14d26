"""interrupt(): a read blocked in another thread returns early and the transport stays open
(the link driver's reader relies on it for requests from other threads and for stop), and
``interruptible`` says where it does."""

from __future__ import annotations

import os
import socket
import threading

from shoe_controller.hal import discovery, usb_ids
from shoe_controller.hal.auto_transport import AutoTransport
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
    assert not transport.interruptible  # nothing to interrupt until it is open
    transport.open()
    try:
        assert transport.interruptible
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
        assert transport.interruptible
        transport.read(0.5)  # whatever the shoe says first
        _blocked_read_returns(transport)
    finally:
        transport.close()
        switch_off(address)


def test_a_socket_url_cannot_be_interrupted_and_says_so() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        transport = SerialTransport(f"socket://127.0.0.1:{port}")
        transport.open()
        try:
            assert not transport.interruptible
        finally:
            transport.close()


def test_auto_passes_interrupt_on_to_the_shoe_it_opened() -> None:
    master, slave = os.openpty()
    path = os.ttyname(slave)
    vid, pid = usb_ids.KNOWN_SHOES[0]
    shoe = discovery.Candidate(path, "serial", vid, pid, "SN-1", None, "shoe", known=True)
    transport = AutoTransport(candidates=lambda: [shoe], opener=SerialTransport)
    assert not transport.interruptible
    transport.open()
    try:
        assert transport.interruptible
        _blocked_read_returns(transport)
    finally:
        transport.close()
        os.close(master)
        os.close(slave)
