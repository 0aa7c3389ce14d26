"""The pty and TCP front ends, and serve(): real terminals, real sockets, real threads."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import serial

from firmware_protocol import (
    SUPPORTED_VERSIONS,
    Flags,
    GateMode,
    GetIdentity,
    Hello,
    Message,
    Packet,
    SetGate,
    StreamDecoder,
    Verify,
    VerifyResult,
    encode_frame,
)
from shoe_controller.errors import ConfigError
from shoe_controller.simulator import FaultPlan, SimOptions
from shoe_controller.simulator.pty_frontend import PtyFrontEnd
from shoe_controller.simulator.serve import serve
from shoe_controller.simulator.tcp_frontend import TcpFrontEnd

WAIT = 5.0


def reply_to(
    seq: int, read: Callable[[], bytes], kind: type[Message], timeout: float = WAIT
) -> Packet:
    """Read until the reply of type ``kind`` to command ``seq`` arrives."""
    decoder = StreamDecoder()
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        decoder.receive_data(read())
        for packet in decoder:
            is_reply = packet.flags & Flags.RESPONSE and packet.seq == seq
            if is_reply and isinstance(packet.message, kind):
                return packet
    raise AssertionError(f"no {kind.__name__} answered command {seq}")


def read_port(port: serial.SerialBase) -> bytes:
    """What waits, or up to the port's timeout for the first byte."""
    return bytes(port.read(port.in_waiting or 1))


def open_port(path: str) -> serial.Serial:
    return serial.Serial(path, 115200, timeout=0.05)


@pytest.fixture
def pty_shoe(tmp_path: Path) -> Iterator[PtyFrontEnd]:
    with PtyFrontEnd(
        SimOptions(seed=1, faults=FaultPlan.parse("disconnect@2")), link_path=str(tmp_path / "shoe")
    ) as front_end:
        yield front_end


def test_the_pty_is_a_raw_serial_port() -> None:
    with PtyFrontEnd(SimOptions(seed=1)) as front_end:
        assert front_end.address == front_end.slave_path
        assert front_end.address.startswith("/dev/pts/")
        with open_port(front_end.address) as port:
            # Bytes a cooked terminal would eat or translate: CR, LF, ^C, ^D, XON, XOFF.
            seed = b"\r\n\x03\x04\x11\x13\x7f\x1a" * 2
            port.write(encode_frame(Verify(seed), 3))
            reply = reply_to(3, lambda: read_port(port), VerifyResult)
            assert isinstance(reply.message, VerifyResult) and reply.message.seed == seed
    assert not os.path.exists(front_end.slave_path)


def test_the_pty_link_follows_the_terminal_through_a_disconnect(
    pty_shoe: PtyFrontEnd, tmp_path: Path
) -> None:
    link = tmp_path / "shoe"
    first_terminal = os.readlink(link)
    assert pty_shoe.address == str(link) and first_terminal == pty_shoe.slave_path
    with open_port(str(link)) as port:
        port.write(encode_frame(GetIdentity(SUPPORTED_VERSIONS), 1))
        hello = reply_to(1, lambda: read_port(port), Hello).message
        port.write(encode_frame(SetGate(GateMode.DEAL, 5), 2))
        with pytest.raises(serial.SerialException):
            give_up = time.monotonic() + WAIT
            while time.monotonic() < give_up:
                port.read(100)
    # A new terminal (the kernel may give it the old number again) behind the same link.
    assert os.readlink(link) == pty_shoe.slave_path
    with open_port(str(link)) as port:
        port.write(encode_frame(GetIdentity(SUPPORTED_VERSIONS), 1))
        again = reply_to(1, lambda: read_port(port), Hello).message
    assert isinstance(hello, Hello) and isinstance(again, Hello)
    assert again.boot_id == hello.boot_id  # the same shoe, not restarted
    pty_shoe.stop()
    assert not link.exists() and not link.is_symlink()


def test_without_a_link_a_disconnect_announces_the_new_terminal() -> None:
    paths: list[str] = []
    announced = threading.Event()

    def on_new_path(path: str) -> None:
        paths.append(path)
        announced.set()

    options = SimOptions(seed=1, faults=FaultPlan.parse("disconnect@1"))
    with PtyFrontEnd(options, on_new_path=on_new_path) as front_end:
        first = front_end.address
        with open_port(first) as port:
            port.write(encode_frame(SetGate(GateMode.DEAL, 1), 2))
            assert announced.wait(WAIT)
        assert paths == [front_end.address] and paths[0] != first


def test_tcp_serves_one_host_at_a_time() -> None:
    with TcpFrontEnd(SimOptions(seed=2)) as front_end:
        host, port = front_end.address.removeprefix("socket://").split(":")
        assert host == "127.0.0.1" and int(port) == front_end.port > 0
        first = socket.create_connection((host, front_end.port), timeout=WAIT)
        first.sendall(encode_frame(GetIdentity(SUPPORTED_VERSIONS), 1))
        reply_to(1, lambda: first.recv(4096), Hello)
        second = socket.create_connection((host, front_end.port), timeout=WAIT)
        # The newcomer takes the link over; the first connection is closed.
        first.settimeout(WAIT)
        while first.recv(4096):
            pass
        second.sendall(encode_frame(GetIdentity(SUPPORTED_VERSIONS), 7))
        reply_to(7, lambda: second.recv(4096), Hello)
        assert front_end.connections == 2
        first.close()
        second.close()


def test_tcp_disconnect_fault_closes_the_connection_and_the_port_stays() -> None:
    options = SimOptions(seed=2, faults=FaultPlan.parse("disconnect@3"))
    with TcpFrontEnd(options) as front_end:
        with socket.create_connection(("127.0.0.1", front_end.port), timeout=WAIT) as conn:
            conn.sendall(encode_frame(SetGate(GateMode.DEAL, 5), 2))
            while conn.recv(4096):
                pass  # until the shoe closes it
        with socket.create_connection(("127.0.0.1", front_end.port), timeout=WAIT) as conn:
            conn.sendall(encode_frame(GetIdentity(SUPPORTED_VERSIONS), 1))
            hello = reply_to(1, lambda: conn.recv(4096), Hello).message
        with front_end.runner.locked() as shoe:
            assert isinstance(hello, Hello) and hello.boot_id == shoe.boot_id
            assert shoe.link_drops == 1 and shoe.draw_index == 5


@pytest.mark.parametrize("front_end", ["pty", "tcp"])
def test_serve_announces_the_address_and_stops_when_told(front_end: str) -> None:
    ready = threading.Event()
    addresses: list[str] = []
    stop = threading.Event()

    def on_ready(address: str) -> None:
        addresses.append(address)
        ready.set()

    server = threading.Thread(target=serve, args=(SimOptions(seed=3), front_end, 0, on_ready, stop))
    server.start()
    try:
        assert ready.wait(WAIT)
        # A pty path or a socket:// URL: pyserial opens either.
        with serial.serial_for_url(addresses[0], timeout=0.05) as port:
            port.write(encode_frame(GetIdentity(SUPPORTED_VERSIONS), 1))
            reply_to(1, lambda: read_port(port), Hello)
    finally:
        stop.set()
        server.join(WAIT)
    assert not server.is_alive()


@pytest.mark.parametrize(
    ("front_end", "port", "says"),
    [("usb", 0, "use pty or tcp"), ("tcp", 70000, "out of range")],
)
def test_serve_refuses_bad_arguments(front_end: str, port: int, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        serve(SimOptions(), front_end, port, print, threading.Event())  # type: ignore[arg-type]


def test_front_ends_stop_twice_and_before_starting() -> None:
    front_end = TcpFrontEnd()
    front_end.stop()
    front_end.start()
    assert front_end.running
    with pytest.raises(RuntimeError, match="already started"):
        front_end.start()
    front_end.stop()
    front_end.stop()
    assert not front_end.running


# -- the link is created only where nothing is, and only ours is moved or removed ----------


def test_the_link_never_replaces_what_is_there(tmp_path: Path) -> None:
    precious = tmp_path / "passwd"
    precious.write_text("root:x:0:0::/root:/bin/bash\n")
    with pytest.raises(ConfigError, match=r"already exists: the simulator never replaces"):
        PtyFrontEnd(SimOptions(seed=1), link_path=str(precious)).start()
    assert precious.read_text() == "root:x:0:0::/root:/bin/bash\n"
    other_link = tmp_path / "other"
    other_link.symlink_to("/dev/null")
    with pytest.raises(ConfigError, match=r"already exists"):
        PtyFrontEnd(SimOptions(seed=1), link_path=str(other_link)).start()
    assert os.readlink(other_link) == "/dev/null"


def test_a_link_in_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    link = tmp_path / "no" / "such" / "shoe"
    with pytest.raises(ConfigError) as caught:
        PtyFrontEnd(SimOptions(seed=1), link_path=str(link)).start()
    assert str(caught.value) == (
        f"the directory of --link {link} does not exist: create it (mkdir -p "
        f"{link.parent}) or choose another --link"
    )


def test_a_link_someone_else_replaced_is_left_alone(tmp_path: Path) -> None:
    link = tmp_path / "shoe"
    front_end = PtyFrontEnd(
        SimOptions(seed=1, faults=FaultPlan.parse("disconnect@2")), link_path=str(link)
    )
    front_end.start()
    try:
        with open_port(front_end.slave_path) as port:
            link.unlink()
            link.write_text("someone else's\n")  # replaced while the simulator runs
            port.write(encode_frame(GetIdentity(SUPPORTED_VERSIONS), 1))
            reply_to(1, lambda: read_port(port), Hello)
            port.write(encode_frame(SetGate(GateMode.DEAL, 5), 2))
            with pytest.raises(serial.SerialException):
                give_up = time.monotonic() + WAIT
                while time.monotonic() < give_up:
                    port.read(100)
        assert link.read_text() == "someone else's\n"  # the disconnect did not repoint it
    finally:
        front_end.stop()
    assert link.read_text() == "someone else's\n"  # nor did the stop remove it


def test_a_link_repointed_by_someone_else_is_not_removed(tmp_path: Path) -> None:
    link = tmp_path / "shoe"
    with PtyFrontEnd(SimOptions(seed=1), link_path=str(link)):
        link.unlink()
        link.symlink_to("/dev/ttyS0")
    assert os.readlink(link) == "/dev/ttyS0"
