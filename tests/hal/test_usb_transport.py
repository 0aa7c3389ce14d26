"""UsbTransport: pyusb's real code paths over a fake backend, and the errno mapping."""

from __future__ import annotations

import errno
import logging
import sys
from typing import Any
from unittest.mock import MagicMock

import pytest
import usb.backend.libusb0
import usb.backend.libusb1
import usb.backend.openusb
import usb.core
from pytest_mock import MockerFixture

from shoe_controller.errors import (
    BackendUnavailable,
    ConfigError,
    DeviceBusy,
    DeviceNotFound,
    DevicePermissionError,
    ExitCode,
    LinkLost,
    TransportError,
)
from shoe_controller.hal import usb_ids, usb_transport
from shoe_controller.hal.addresses import open_transport
from shoe_controller.hal.usb_transport import UsbTransport, default_backend, usb_address
from tests.hal.fake_usb import FakeBackend, FakeDevice, usb_error


def opened(*devices: FakeDevice, serial_number: str | None = None) -> UsbTransport:
    transport = UsbTransport(serial_number=serial_number, backend=FakeBackend(*devices))
    transport.open()
    return transport


def test_open_claims_the_vendor_interface_and_close_gives_everything_back() -> None:
    # The fake's claim fails with EBUSY while a kernel driver holds the interface.
    device = FakeDevice(kernel_driver=True, interface_number=2, endpoints=(0x02, 0x83))
    transport = UsbTransport(backend=FakeBackend(device))
    transport.open()
    assert transport.is_open
    assert device.detached and device.claimed == {2}
    transport.write(b"out")
    device.send(b"in")
    assert transport.read(0.1) == b"in" and device.received == b"out"
    transport.close()
    assert not transport.is_open
    assert device.claimed == set()
    assert device.reattached and device.kernel_driver
    assert device.open_handles == 0
    transport.close()


def test_no_kernel_driver_means_nothing_to_detach_or_give_back() -> None:
    device = FakeDevice()
    opened(device).close()
    assert not device.detached and not device.reattached


def test_an_unconfigured_device_is_configured_once() -> None:
    device = FakeDevice(configuration=0)
    transport = opened(device)
    assert device.configuration == 1
    transport.close()


@pytest.mark.parametrize("packet", [8, 64, 512])
def test_reads_ask_for_whole_packets(packet: int) -> None:
    device = FakeDevice(max_packet=packet)
    transport = opened(device)
    message = bytes(range(256)) * 3
    device.send(message)
    received = b""
    while len(received) < len(message):
        chunk = transport.read(0.1)
        assert chunk, "the fake holds data, so every read returns some"
        received += chunk
    assert received == message
    assert device.read_sizes and all(size % packet == 0 for size in device.read_sizes)
    assert all(size >= 255 for size in device.read_sizes)  # a whole frame fits in one read
    transport.close()


def test_a_short_packet_ends_a_read() -> None:
    device = FakeDevice()
    transport = opened(device)
    device.send(b"\x11" * 70)  # one full packet, one of 6 bytes
    device.send(b"\x22" * 3)
    assert transport.read(0.1) == b"\x11" * 70
    assert transport.read(0.1) == b"\x22" * 3
    transport.close()


def test_a_read_timeout_is_no_data() -> None:
    device = FakeDevice()
    transport = opened(device)
    assert transport.read(0.25) == b""
    assert transport.read(0) == b""
    # libusb takes 0 ms as "no time limit": the shortest wait asked for is 1 ms.
    assert device.read_timeouts == [250, 1]
    with pytest.raises(ValueError, match="timeout"):
        transport.read(-0.1)
    transport.close()


def test_writes_go_to_the_bulk_out_endpoint_whole() -> None:
    device = FakeDevice(accept=5)  # the device takes 5 bytes per transfer
    transport = opened(device)
    transport.write(b"\x01" * 23)
    assert bytes(device.received) == b"\x01" * 23
    transport.close()


def test_a_device_that_takes_nothing_is_link_lost() -> None:
    device = FakeDevice(accept=0)
    transport = opened(device)
    with pytest.raises(LinkLost, match="took no data"):
        transport.write(b"x")
    transport.close()


def test_the_serial_number_chooses_among_several_shoes() -> None:
    first = FakeDevice(serial="ES-1", address=7)
    second = FakeDevice(serial="ES-2", address=8)
    transport = opened(first, second, serial_number="ES-2")
    assert second.claimed and not first.claimed
    assert first.open_handles == 0  # reading its serial number did not keep it open
    transport.close()


def test_several_shoes_without_a_serial_number_is_a_config_error() -> None:
    shoes = FakeBackend(FakeDevice(serial="ES-1", address=7), FakeDevice(serial="ES-2", address=8))
    with pytest.raises(ConfigError) as info:
        UsbTransport(backend=shoes).open()
    message = str(info.value)
    assert "serial ES-1 at /dev/bus/usb/001/007" in message
    assert "serial ES-2 at /dev/bus/usb/001/008" in message
    assert "?serial=" in message


def test_no_shoe_is_device_not_found() -> None:
    other = FakeDevice(vid=0x0403, pid=0x6001)
    with pytest.raises(DeviceNotFound, match="USB shoe 1209:0001 not found"):
        UsbTransport(backend=FakeBackend(other)).open()
    with pytest.raises(DeviceNotFound, match="serial number ES-9"):
        UsbTransport(serial_number="ES-9", backend=FakeBackend(FakeDevice())).open()


def test_an_unreadable_serial_number_is_a_permission_problem() -> None:
    device = FakeDevice(fail={"strings": errno.EACCES})
    with pytest.raises(DevicePermissionError, match=usb_ids.DEVICE_GROUP):
        UsbTransport(serial_number="SHOE-1", backend=FakeBackend(device)).open()


@pytest.mark.parametrize(
    ("operation", "code", "error", "words"),
    [
        ("open", errno.EACCES, DevicePermissionError, ["udev rules", "usermod -aG shoe"]),
        ("claim", errno.EACCES, DevicePermissionError, ["udev rules"]),
        ("claim", errno.EBUSY, DeviceBusy, ["shoe-controller service", "/dev/bus/usb/001/007"]),
        ("get_configuration", errno.ENODEV, DeviceNotFound, ["plugged in"]),
        ("detach", errno.EBUSY, DeviceBusy, ["in use by another process"]),
        ("claim", errno.EIO, TransportError, ["cannot open USB shoe"]),
    ],
)
def test_open_errors_are_clear_and_release_what_was_taken(
    operation: str, code: int, error: type[TransportError], words: list[str]
) -> None:
    device = FakeDevice(kernel_driver=operation == "detach", fail={operation: code})
    transport = UsbTransport(backend=FakeBackend(device))
    with pytest.raises(error) as info:
        transport.open()
    assert type(info.value) is error
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message
    assert not transport.is_open
    assert device.open_handles == 0 and not device.claimed
    transport.close()


@pytest.mark.parametrize(
    ("operation", "code", "reason"),
    [
        ("bulk_read", errno.ENODEV, "the device is gone"),
        ("bulk_read", errno.EIO, "Errno 5"),
        ("bulk_read", errno.EPIPE, "Errno 32"),
        ("bulk_write", errno.ENODEV, "the device is gone"),
    ],
)
def test_io_errors_are_link_lost(operation: str, code: int, reason: str) -> None:
    device = FakeDevice()
    transport = opened(device)
    device.fail[operation] = code
    with pytest.raises(LinkLost, match="reconnects") as info:
        if operation == "bulk_read":
            transport.read(0.1)
        else:
            transport.write(b"x")
    assert reason in str(info.value)
    assert info.value.exit_code is ExitCode.LINK
    device.fail["release"] = errno.ENODEV  # a vanished device cannot be released either
    transport.close()
    assert not transport.is_open and device.open_handles == 0


def test_a_kernel_driver_that_cannot_be_given_back_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    device = FakeDevice(kernel_driver=True, fail={"attach": errno.ENODEV})
    transport = opened(device)
    with caplog.at_level(logging.WARNING, logger="shoe_controller.hal.usb_transport"):
        transport.close()
    assert "kernel driver" in caplog.text
    assert device.open_handles == 0


def test_a_device_without_the_vendor_interface_is_refused() -> None:
    device = FakeDevice(interface_class=0x02)
    with pytest.raises(TransportError, match=r"no vendor interface \(class 0xFF\)"):
        UsbTransport(backend=FakeBackend(device)).open()
    assert device.open_handles == 0


def test_a_vendor_interface_without_bulk_in_is_refused() -> None:
    device = FakeDevice(endpoints=(0x01,))
    with pytest.raises(TransportError, match="lacks a bulk IN or bulk OUT endpoint"):
        UsbTransport(backend=FakeBackend(device)).open()
    assert device.open_handles == 0 and not device.claimed


def test_open_twice_is_a_programming_error_and_reopen_after_close_works() -> None:
    device = FakeDevice()
    transport = opened(device)
    with pytest.raises(RuntimeError, match="already open"):
        transport.open()
    transport.close()
    with pytest.raises(TransportError, match="not open"):
        transport.read(0)
    with pytest.raises(TransportError, match="not open"):
        transport.write(b"x")
    with transport:
        device.send(b"back")
        assert transport.read(0.1) == b"back"
    assert not transport.is_open


# --- the errno mapping around pyusb, with pyusb itself mocked ---------------------------


def _mock_device(mocker: MockerFixture, **failures: int) -> MagicMock:
    device = MagicMock(name="device", bus=3, address=9)
    for method, code in failures.items():
        getattr(device, method).side_effect = usb_error(code)
    device.is_kernel_driver_active.return_value = False
    mocker.patch("usb.core.find", return_value=iter([device]))
    return device


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (errno.EACCES, DevicePermissionError),
        (errno.EBUSY, DeviceBusy),
        (errno.ENODEV, DeviceNotFound),
        (errno.ETIMEDOUT, TransportError),
    ],
)
def test_errno_of_the_configuration_request_is_mapped(
    mocker: MockerFixture, code: int, error: type[TransportError]
) -> None:
    device = _mock_device(mocker, get_active_configuration=code)
    with pytest.raises(error) as info:
        UsbTransport(backend=object()).open()
    assert type(info.value) is error
    if code == errno.EBUSY:
        assert "/dev/bus/usb/003/009" in str(info.value)
    device.set_configuration.assert_not_called()


def test_enumeration_failure_is_mapped(mocker: MockerFixture) -> None:
    mocker.patch("usb.core.find", side_effect=usb_error(errno.EACCES))
    with pytest.raises(DevicePermissionError):
        UsbTransport(backend=object()).open()


@pytest.mark.parametrize(
    ("code", "outcome"),
    [(errno.ETIMEDOUT, b""), (errno.ENODEV, LinkLost), (errno.EOVERFLOW, LinkLost)],
)
def test_errno_of_a_bulk_read_is_mapped(
    mocker: MockerFixture, code: int, outcome: bytes | type[Exception]
) -> None:
    transport = opened(FakeDevice())
    assert transport._ep_in is not None
    mocker.patch.object(transport._ep_in, "read", side_effect=usb_error(code))
    if isinstance(outcome, bytes):
        assert transport.read(0.5) == outcome
    else:
        with pytest.raises(outcome):
            transport.read(0.5)
    transport.close()


def test_a_plain_usb_error_with_errno_110_is_a_timeout_too(mocker: MockerFixture) -> None:
    transport = opened(FakeDevice())
    plain = usb.core.USBError("Operation timed out", -7, errno.ETIMEDOUT)
    mocker.patch.object(transport._ep_in, "read", side_effect=plain)
    assert transport.read(0.5) == b""
    transport.close()


# --- finding a USB library --------------------------------------------------------------


@pytest.fixture
def no_libusb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "libusb_package", None)  # import fails
    for module in (usb.backend.libusb1, usb.backend.openusb, usb.backend.libusb0):
        monkeypatch.setattr(module, "get_backend", lambda *args, **kwargs: None)


@pytest.mark.usefixtures("no_libusb")
def test_no_usb_library_names_the_fix() -> None:
    with pytest.raises(BackendUnavailable) as info:
        default_backend()
    message = str(info.value)
    assert "pip install 'shoe-controller[usb]'" in message
    assert "apt install libusb-1.0-0" in message
    transport = open_transport("usb://")
    with pytest.raises(BackendUnavailable):
        transport.open()
    assert not transport.is_open
    transport.close()


def test_libusb_package_is_preferred(monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = object()
    fake_package = MagicMock()
    fake_package.get_libusb1_backend.return_value = sentinel
    monkeypatch.setitem(sys.modules, "libusb_package", fake_package)
    assert default_backend() is sentinel


def test_pyusb_default_is_used_without_libusb_package(monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = object()
    monkeypatch.setitem(sys.modules, "libusb_package", None)
    monkeypatch.setattr(usb.backend.libusb1, "get_backend", lambda *a, **k: None)
    monkeypatch.setattr(usb.backend.openusb, "get_backend", lambda *a, **k: sentinel)
    assert default_backend() is sentinel


def test_the_backend_is_looked_up_only_when_opening(mocker: MockerFixture) -> None:
    lookup = mocker.patch.object(usb_transport, "default_backend", side_effect=AssertionError)
    transport = UsbTransport.from_address("usb://1209:0001?serial=ES-1")
    lookup.assert_not_called()
    assert transport.address == "usb://1209:0001?serial=ES-1"


@pytest.mark.parametrize(
    ("args", "address"),
    [
        ((0x1209, 0x0001, None), "usb://1209:0001"),
        ((0x16C0, 0x05DC, "ES-7"), "usb://16c0:05dc?serial=ES-7"),
    ],
)
def test_usb_address(args: tuple[Any, ...], address: str) -> None:
    assert usb_address(*args) == address
    assert UsbTransport(*args).address == address


def test_usb_address_round_trips_any_serial_number() -> None:
    address = usb_address(0x1209, 0x0001, "ES 1&2%/?")
    assert address == "usb://1209:0001?serial=ES%201%262%25%2F%3F"
    transport = UsbTransport.from_address(address)
    assert transport.serial_number == "ES 1&2%/?"
