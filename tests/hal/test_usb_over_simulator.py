"""UsbTransport against the simulated shoe's pyusb backend: a whole conversation through
pyusb's real code paths, and what a second program or a missing udev rule sees."""

from __future__ import annotations

import time

import pytest
import usb.core

from firmware_protocol import SUPPORTED_VERSIONS, GetIdentity, Hello, StreamDecoder, encode_frame
from shoe_controller.errors import DeviceBusy, DevicePermissionError
from shoe_controller.hal.discovery import list_candidates
from shoe_controller.hal.usb_transport import UsbTransport

usb_backend = pytest.importorskip("shoe_controller.simulator.usb_backend")
options = pytest.importorskip("shoe_controller.simulator.options")

WAIT = 5.0


def backend(**kwargs: object) -> object:
    return usb_backend.SimUsbBackend(options.SimOptions(seed=3), **kwargs)


def hello_from(transport: UsbTransport) -> Hello:
    decoder = StreamDecoder()
    transport.write(encode_frame(GetIdentity(SUPPORTED_VERSIONS), seq=1))
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        decoder.receive_data(transport.read(0.05))
        for packet in decoder:
            if isinstance(packet.message, Hello):
                return packet.message
    raise AssertionError("the simulated shoe never said Hello")


def test_identity_over_usb_then_everything_is_given_back() -> None:
    shoe = backend(kernel_driver_active=True)
    transport = UsbTransport(backend=shoe)
    with transport:
        assert not shoe.kernel_driver_active  # detached to claim the interface
        hello = hello_from(transport)
        assert hello.serial_number == shoe.shoe.options.serial_number
    assert shoe.open_handles == 0
    assert not shoe.claimed
    assert shoe.kernel_driver_active  # given back to the kernel


def test_serial_number_selects_the_simulated_shoe() -> None:
    shoe = backend()
    serial_number = shoe.shoe.options.serial_number
    with UsbTransport(serial_number=serial_number, backend=shoe) as transport:
        assert hello_from(transport).serial_number == serial_number


def test_a_second_program_is_told_the_shoe_is_busy() -> None:
    shoe = backend(kernel_driver_active=False)
    with UsbTransport(backend=shoe):
        second = UsbTransport(backend=shoe)
        with pytest.raises(DeviceBusy, match="in use by another process"):
            second.open()
        assert not second.is_open
    assert shoe.open_handles == 0


def test_without_the_udev_rules_opening_is_permission_denied() -> None:
    with pytest.raises(DevicePermissionError, match="udev rules"):
        UsbTransport(backend=backend(permission_denied=True)).open()


def test_discovery_lists_the_raw_usb_shoe() -> None:
    shoe = backend()
    found = list_candidates(
        serial_ports=list,
        usb_devices=lambda: list(usb.core.find(find_all=True, backend=shoe)),
        link_dirs=[],
    )
    serial_number = shoe.shoe.options.serial_number
    assert [(c.kind, c.address, c.known) for c in found] == [
        ("usb", f"usb://1209:0001?serial={serial_number}", True)
    ]
    assert shoe.open_handles == 0
