"""SerialTransport over a real pseudo-terminal, pyserial's loop:// and a loopback TCP socket."""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import struct
import termios
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import serial
from pytest_mock import MockerFixture

from shoe_controller.errors import (
    ConfigError,
    DeviceBusy,
    DeviceNotFound,
    DevicePermissionError,
    ExitCode,
    LinkLost,
    TransportError,
)
from shoe_controller.hal import usb_ids
from shoe_controller.hal.addresses import open_transport
from shoe_controller.hal.base import Transport
from shoe_controller.hal.serial_transport import SerialTransport

# Linux ioctls that Python's termios module does not name.
TIOCGEXCL = 0x80045440
TIOCVHANGUP = 0x5437
WAIT = 5.0  # the longest any test waits for something that should happen at once


class Pty:
    """A pseudo-terminal: the test plays the shoe on the master side."""

    def __init__(self) -> None:
        self.master, slave = os.openpty()
        self.path = os.ttyname(slave)
        os.close(slave)
        self.master_open = True

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def receive(self, count: int) -> bytes:
        data = b""
        deadline = time.monotonic() + WAIT
        while len(data) < count and time.monotonic() < deadline:
            data += os.read(self.master, count - len(data))
        return data

    def unplug(self) -> None:
        if self.master_open:
            os.close(self.master)
            self.master_open = False


@pytest.fixture
def pty() -> Iterator[Pty]:
    pair = Pty()
    yield pair
    pair.unplug()


@pytest.fixture
def shoe(pty: Pty) -> Iterator[SerialTransport]:
    transport = SerialTransport(pty.path)
    transport.open()
    yield transport
    transport.close()


def read_exactly(transport: Transport, count: int) -> bytes:
    data = b""
    deadline = time.monotonic() + WAIT
    while len(data) < count and time.monotonic() < deadline:
        data += transport.read(0.5)
    return data


def test_bytes_flow_both_ways_over_a_real_pty(pty: Pty, shoe: SerialTransport) -> None:
    pty.send(b"\x05frame\x00")
    assert read_exactly(shoe, 7) == b"\x05frame\x00"
    shoe.write(b"\x02ack\x00")
    assert pty.receive(5) == b"\x02ack\x00"


def test_read_returns_what_arrived_without_waiting_for_more(
    pty: Pty, shoe: SerialTransport
) -> None:
    pty.send(b"abc")
    started = time.monotonic()
    data = read_exactly(shoe, 3)
    assert data == b"abc"
    assert time.monotonic() - started < WAIT / 2


def test_read_times_out_with_no_data(shoe: SerialTransport) -> None:
    started = time.monotonic()
    assert shoe.read(0.05) == b""
    assert time.monotonic() - started >= 0.05
    assert shoe.read(0) == b""


def test_negative_timeout_is_a_programming_error(shoe: SerialTransport) -> None:
    with pytest.raises(ValueError, match="timeout"):
        shoe.read(-1)


def test_line_settings_are_115200_8n1_without_flow_control(pty: Pty, shoe: SerialTransport) -> None:
    assert shoe._port is not None
    attributes = termios.tcgetattr(shoe._port.fileno())
    _iflag, _oflag, cflag, _lflag, ispeed, ospeed, _cc = attributes
    assert ispeed == ospeed == termios.B115200
    assert cflag & termios.CSIZE == termios.CS8
    assert not cflag & (termios.PARENB | termios.CSTOPB | termios.CRTSCTS)
    assert shoe._port is not None
    assert (shoe._port.dtr, shoe._port.rts) == (True, True)


def test_exclusive_open_refuses_a_second_opener(pty: Pty, shoe: SerialTransport) -> None:
    second = SerialTransport(pty.path)
    with pytest.raises(DeviceBusy) as info:
        second.open()
    message = str(info.value)
    assert "shoe-controller service" in message
    assert f"fuser -v {pty.path}" in message and f"lsof {pty.path}" in message
    assert info.value.exit_code is ExitCode.DEVICE_BUSY
    assert not second.is_open
    second.close()
    # The first one still works, and once it closes the port is free again.
    pty.send(b"x")
    assert read_exactly(shoe, 1) == b"x"
    shoe.close()
    with SerialTransport(pty.path) as third:
        assert third.is_open


def test_terminal_is_locked_against_other_openers_while_open(
    pty: Pty, shoe: SerialTransport
) -> None:
    def exclusive() -> bool:
        fd = os.open(pty.path, os.O_RDWR | os.O_NOCTTY)  # root may open despite TIOCEXCL
        try:
            flag = fcntl.ioctl(fd, TIOCGEXCL, struct.pack("i", 0))
        except OSError as exc:
            pytest.skip(f"TIOCGEXCL unsupported here: {exc}")
        finally:
            os.close(fd)
        return bool(struct.unpack("i", flag)[0])

    if os.geteuid() != 0:
        with pytest.raises(DeviceBusy):
            SerialTransport(pty.path).open()  # the kernel refuses: EBUSY
        return
    assert exclusive()
    shoe.close()
    assert not exclusive()


def test_unplugged_device_is_link_lost(pty: Pty, shoe: SerialTransport) -> None:
    pty.unplug()
    with pytest.raises(LinkLost, match=r"link to .* lost .*reconnects") as info:
        shoe.read(1.0)
    assert "\n" not in str(info.value)
    with pytest.raises(LinkLost):
        shoe.write(b"x")
    shoe.close()
    assert not shoe.is_open


def test_hung_up_terminal_is_link_lost(shoe: SerialTransport) -> None:
    # What the kernel does to a USB serial port whose device is unplugged.
    assert shoe.read(0.01) == b""  # the timeout is set: no port reconfiguration below
    assert shoe._port is not None
    try:
        fcntl.ioctl(shoe._port.fileno(), TIOCVHANGUP)
    except OSError as exc:
        pytest.skip(f"cannot hang up a terminal here: {exc}")
    with pytest.raises(LinkLost, match="returned no data"):
        shoe.read(0.01)


def test_readiness_without_data_is_link_lost(shoe: SerialTransport, mocker: MockerFixture) -> None:
    assert shoe._port is not None
    mocker.patch.object(
        shoe._port,
        "read",
        side_effect=serial.SerialException(
            "device reports readiness to read but returned no data "
            "(device disconnected or multiple access on port?)"
        ),
    )
    with pytest.raises(LinkLost, match="returned no data"):
        shoe.read(0.1)


def test_a_device_that_takes_no_data_is_link_lost(pty: Pty) -> None:
    with (
        SerialTransport(pty.path, write_timeout=0.05) as transport,
        pytest.raises(LinkLost, match=r"took no data for 0\.05 s"),
    ):
        transport.write(b"\x55" * 4_000_000)  # the master never reads


def test_missing_device_is_device_not_found() -> None:
    transport = SerialTransport("/dev/no-such-shoe")
    with pytest.raises(DeviceNotFound, match="shoe-diag ports") as info:
        transport.open()
    assert info.value.exit_code is ExitCode.DEVICE_NOT_FOUND
    assert not transport.is_open
    transport.close()
    transport.close()


def _permission_message_ok(message: str) -> bool:
    return usb_ids.DEVICE_GROUP in message and "udev rules" in message and "\n" not in message


@pytest.mark.skipif(os.geteuid() == 0, reason="root opens a mode 000 node anyway")
def test_unreadable_node_is_permission_error(pty: Pty) -> None:
    os.chmod(pty.path, 0)
    try:
        with pytest.raises(DevicePermissionError) as info:
            SerialTransport(pty.path).open()
    finally:
        os.chmod(pty.path, 0o620)
    assert _permission_message_ok(str(info.value))


def _fail_open_of(mocker: MockerFixture, path: str, code: int) -> None:
    real_open = os.open

    def fake_open(name: str, flags: int, *args: Any) -> int:
        if name == path:
            raise OSError(code, os.strerror(code), name)
        return real_open(name, flags, *args)

    mocker.patch("serial.serialposix.os.open", side_effect=fake_open)


def test_permission_denied_by_the_kernel_is_permission_error(
    pty: Pty, mocker: MockerFixture
) -> None:
    _fail_open_of(mocker, pty.path, errno.EACCES)
    with pytest.raises(DevicePermissionError) as info:
        SerialTransport(pty.path).open()
    assert _permission_message_ok(str(info.value))
    assert info.value.exit_code is ExitCode.PERMISSION_DENIED


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (errno.EBUSY, DeviceBusy),
        (errno.ENODEV, DeviceNotFound),
        (errno.ENXIO, DeviceNotFound),
        (errno.EPERM, DevicePermissionError),
        (errno.EIO, TransportError),
    ],
)
def test_open_errors_are_mapped(
    pty: Pty, mocker: MockerFixture, code: int, error: type[TransportError]
) -> None:
    _fail_open_of(mocker, pty.path, code)
    transport = SerialTransport(pty.path)
    with pytest.raises(error) as info:
        transport.open()
    assert type(info.value) is error
    transport.close()


def test_close_is_idempotent_and_the_port_can_be_reopened(pty: Pty) -> None:
    transport = SerialTransport(pty.path)
    transport.close()
    transport.open()
    with pytest.raises(RuntimeError, match="already open"):
        transport.open()
    transport.close()
    transport.close()
    with pytest.raises(TransportError, match="not open"):
        transport.read(0)
    with pytest.raises(TransportError, match="not open"):
        transport.write(b"x")
    transport.open()
    pty.send(b"again")
    assert read_exactly(transport, 5) == b"again"
    transport.close()


def test_close_wakes_a_reader_blocked_in_another_thread(shoe: SerialTransport) -> None:
    port = shoe._port
    assert port is not None
    entered = threading.Event()
    real_read = port.read

    def read(size: int = 1) -> bytes:
        entered.set()
        return bytes(real_read(size))

    port.read = read
    results: list[object] = []
    reader = threading.Thread(target=lambda: results.append(shoe.read(30.0)))
    reader.start()
    assert entered.wait(WAIT)
    shoe.close()
    reader.join(WAIT)
    assert not reader.is_alive()
    assert results == [b""]


def test_loop_url() -> None:
    with open_transport("loop://") as transport:
        transport.write(b"\x01\x02\x00")
        assert transport.read(1.0) == b"\x01\x02\x00"
        assert transport.read(0.01) == b""


@pytest.mark.parametrize(
    "url", ["loop://?colour=red", "socket://127.0.0.1:9?colour=red", "alt://x?class=Nope"]
)
def test_bad_url_options_are_config_errors(url: str) -> None:
    transport = open_transport(url)
    with pytest.raises(ConfigError, match=r"invalid URL or option \(unknown"):
        transport.open()
    assert not transport.is_open


def test_hwgrep_matching_nothing_is_device_not_found() -> None:
    with pytest.raises(DeviceNotFound):
        open_transport("hwgrep://no-port-is-named-like-this-ever").open()


class TcpShoe:
    """A loopback TCP server standing in for a shoe; it accepts one connection."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.accepted = threading.Event()
        self.peer: socket.socket | None = None
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.peer, _ = self.server.accept()
        self.accepted.set()

    def connection(self) -> socket.socket:
        assert self.accepted.wait(WAIT)
        assert self.peer is not None
        return self.peer

    def close(self) -> None:
        if self.peer is not None:
            self.peer.close()
        self.server.close()


@pytest.fixture
def tcp_shoe() -> Iterator[TcpShoe]:
    server = TcpShoe()
    yield server
    server.close()


def test_socket_url_against_a_loopback_server(tcp_shoe: TcpShoe) -> None:
    with open_transport(f"socket://127.0.0.1:{tcp_shoe.port}") as transport:
        peer = tcp_shoe.connection()
        peer.sendall(b"hello\x00")
        assert read_exactly(transport, 6) == b"hello\x00"
        transport.write(b"ack\x00")
        assert peer.recv(16) == b"ack\x00"
        peer.close()
        with pytest.raises(LinkLost, match="socket disconnected"):
            read_exactly(transport, 1)


def test_socket_url_with_nothing_listening_is_device_not_found() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    # The port was just freed: nothing listens there now.
    with pytest.raises(DeviceNotFound, match="nothing accepts connections"):
        open_transport(f"socket://127.0.0.1:{port}").open()


def test_a_node_that_is_no_terminal_is_a_configuration_error() -> None:
    """/dev/null opens, but no terminal settings apply to it: one line saying what to give,
    not pyserial's errno tuple."""
    transport = SerialTransport("/dev/null")
    with pytest.raises(ConfigError) as caught:
        transport.open()
    assert str(caught.value) == (
        "/dev/null is not a serial port (no terminal settings can be applied): give the "
        "shoe's device node, e.g. /dev/electronic-shoe, or a pyserial URL"
    )
