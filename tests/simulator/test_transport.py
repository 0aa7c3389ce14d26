"""sim:// in-process: the Transport interface, the injected clock, the registry of live
shoes that makes reconnecting reach the same shoe."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from firmware_protocol import (
    SUPPORTED_VERSIONS,
    Ack,
    AckEvents,
    GateMode,
    GetIdentity,
    Heartbeat,
    Hello,
    Packet,
    Ping,
    SetGate,
    StreamDecoder,
    encode_frame,
)
from shoe_controller.errors import LinkLost, TransportError
from shoe_controller.hal.addresses import open_transport
from shoe_controller.simulator import SimOptions
from shoe_controller.simulator.transport import SimTransport, live_addresses, switch_off


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        #: Set whenever the clock is read.
        self.asked = threading.Event()

    def __call__(self) -> float:
        self.asked.set()
        return self.now


@pytest.fixture(autouse=True)
def no_shoe_left_behind() -> Iterator[None]:
    yield
    for address in live_addresses():
        switch_off(address)


def decode(*chunks: bytes) -> list[Packet]:
    decoder = StreamDecoder()
    for chunk in chunks:
        decoder.receive_data(chunk)
    return list(decoder)


def test_the_hal_opens_sim_addresses_with_this_transport() -> None:
    transport = open_transport("sim://?seed=3&serial=T-1")
    assert isinstance(transport, SimTransport)
    assert transport.in_process_simulator
    assert transport.address == "sim://?seed=3&serial=T-1"
    assert not transport.is_open
    with transport:
        assert transport.is_open
        packets = decode(transport.read(0))
        hello = packets[0].message
        assert isinstance(hello, Hello) and hello.serial_number == "T-1"
    assert not transport.is_open


def test_the_injected_clock_drives_the_shoe() -> None:
    clock = FakeClock()
    with SimTransport(SimOptions(heartbeat=2.0), clock=clock) as transport:
        transport.read(0)
        transport.write(encode_frame(AckEvents(1), 0))
        assert transport.read(0) == b""
        clock.now += 1.9
        assert transport.read(0) == b""
        clock.now += 0.1
        (beat,) = decode(transport.read(0))
        assert beat.message == Heartbeat(2000, 0, 1)


def test_read_waits_no_longer_than_its_timeout() -> None:
    with SimTransport(address="sim://", clock=FakeClock()) as transport:
        transport.read(0)
        started = time.monotonic()
        assert transport.read(0.05) == b""
        assert 0.04 <= time.monotonic() - started < 1.0


def test_a_write_wakes_a_waiting_read() -> None:
    got: list[bytes] = []
    with SimTransport(address="sim://", clock=FakeClock()) as transport:
        transport.read(0)
        reader = threading.Thread(target=lambda: got.append(transport.read(10.0)))
        started = time.monotonic()
        reader.start()
        transport.write(encode_frame(Ping(), 5))
        reader.join(5.0)
        assert time.monotonic() - started < 5.0
    (ack,) = decode(*got)
    assert (ack.message, ack.seq) == (Ack(), 5)


def test_the_same_address_reaches_the_same_shoe_and_takes_the_link_over() -> None:
    first = SimTransport.from_address("sim://?seed=1")
    second = SimTransport.from_address("sim://?seed=1")
    other = SimTransport.from_address("sim://?seed=2")
    with first, second, other:
        assert first.shoe is second.shoe
        assert other.shoe is not first.shoe
        with pytest.raises(LinkLost, match="close and open it again"):
            first.read(0)
        second.read(0)


def test_a_shoe_stays_on_until_switched_off() -> None:
    with SimTransport.from_address("sim://?seed=1") as transport:
        shoe = transport.shoe
    assert live_addresses() == ["sim://?seed=1"]
    with SimTransport.from_address("sim://?seed=1") as transport:
        assert transport.shoe is shoe  # reconnecting after any close reaches it
    switch_off("sim://?seed=1")
    assert live_addresses() == []
    with SimTransport.from_address("sim://?seed=1") as transport:
        assert transport.shoe is not shoe


def test_a_disconnect_drops_the_link_and_reconnecting_reaches_the_same_shoe() -> None:
    address = "sim://?faults=disconnect@2"
    transport = SimTransport.from_address(address)
    transport.open()
    transport.read(0)
    transport.write(encode_frame(SetGate(GateMode.DEAL, 5), 2))
    with pytest.raises(LinkLost):
        transport.read(0)
    with pytest.raises(LinkLost):
        transport.write(encode_frame(Ping(), 3))
    shoe = transport.shoe
    transport.close()
    with SimTransport.from_address(address) as again:
        assert again.shoe is shoe
        again.write(encode_frame(GetIdentity(SUPPORTED_VERSIONS), 1))
        packets = decode(again.read(0))
        assert [p.seq for p in packets[1:]] == [1, 2, 3, 4, 5, 6]


def test_a_silent_shoe_waits_for_its_host() -> None:
    address = "sim://?faults=silent@1&silent_for=60"
    with SimTransport.from_address(address) as transport:
        transport.write(encode_frame(SetGate(GateMode.DEAL, 5), 2))
        shoe = transport.shoe
        assert shoe.stalled
    with SimTransport.from_address(address) as again:
        assert again.shoe is shoe


def test_misuse_is_a_clear_error() -> None:
    transport = SimTransport.from_address("sim://")
    transport.close()  # safe before open
    with pytest.raises(TransportError, match="not open"):
        transport.read(0)
    with pytest.raises(TransportError, match="not open"):
        transport.write(b"\x00")
    with pytest.raises(TransportError, match="not open"):
        _ = transport.runner
    transport.open()
    with pytest.raises(RuntimeError, match="already open"):
        transport.open()
    transport.close()
    transport.close()
    assert repr(transport) == "<SimTransport 'sim://' closed>"


def test_closing_from_another_thread_ends_a_waiting_read() -> None:
    clock = FakeClock()
    transport = SimTransport(address="sim://", clock=clock)
    transport.open()
    transport.read(0)
    clock.asked.clear()
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(transport.read(10.0)))
    started = time.monotonic()
    reader.start()
    assert clock.asked.wait(5)  # the reader holds the shoe until it waits
    transport.close()
    reader.join(10)
    assert got == [b""]
    assert time.monotonic() - started < 5


def test_a_negative_timeout_is_a_mistake() -> None:
    with SimTransport() as transport, pytest.raises(ValueError, match=">= 0"):
        transport.read(-1)
