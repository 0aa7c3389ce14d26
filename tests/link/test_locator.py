"""Reconnecting to the same shoe: fixed addresses as they are, auto and usb:// by serial."""

from __future__ import annotations

import pytest

from shoe_controller.errors import ConfigError, DeviceNotFound
from shoe_controller.hal import usb_ids
from shoe_controller.hal.auto_transport import AutoTransport
from shoe_controller.hal.base import Transport
from shoe_controller.hal.discovery import Candidate
from shoe_controller.link.identity import ShoeIdentity
from shoe_controller.link.locator import ShoeLocator

VID, PID = usb_ids.VENDOR_ID, usb_ids.PRODUCT_ID


class Dummy(Transport):
    def __init__(self, address: str) -> None:
        self.address = address

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    @property
    def is_open(self) -> bool:
        return False

    def read(self, timeout: float) -> bytes:
        return b""

    def write(self, data: bytes) -> None:
        pass


def identity(serial: str) -> ShoeIdentity:
    return ShoeIdentity("ES-7", serial, "B", "1.4.2", "00" * 32, 0, 1, (1,))  # type: ignore[arg-type]


def usb_port(device: str, serial: str | None, vid: int = VID) -> Candidate:
    return Candidate(device, "serial", vid, PID, serial, None, "shoe", (), vid == VID)


class Attached:
    """What discovery lists, changed by the test between reconnections."""

    def __init__(self, *candidates: Candidate) -> None:
        self.candidates = list(candidates)

    def __call__(self) -> list[Candidate]:
        return list(self.candidates)


def test_fixed_addresses_are_reopened_as_they_are() -> None:
    opened: list[str] = []

    def opener(address: str) -> Transport:
        opened.append(address)
        return Dummy(address)

    locator = ShoeLocator("/dev/electronic-shoe", opener, Attached())
    locator.found(locator.transport(), identity("SN-1"))
    locator.transport()
    assert opened == ["/dev/electronic-shoe", "/dev/electronic-shoe"]


def test_malformed_address_is_refused_at_once() -> None:
    with pytest.raises(ConfigError):
        ShoeLocator("not an address", Dummy, Attached())


def test_auto_finds_the_same_shoe_again_by_serial_number() -> None:
    attached = Attached(usb_port("/dev/ttyACM0", "SN-1"))
    locator = ShoeLocator("auto", Dummy, attached)
    first = locator.transport()
    assert first.address == "auto"  # the first time, discovery picks the one shoe
    chosen = AutoTransport(candidates=attached, opener=Dummy)
    chosen.open()
    assert chosen.chosen is not None
    locator.found(chosen, identity("SN-1"))
    # Unplugged; another shoe appears first, then ours comes back under another name.
    attached.candidates = [usb_port("/dev/ttyACM0", "SN-2")]
    with pytest.raises(DeviceNotFound, match="serial number SN-1"):
        locator.transport()
    attached.candidates.append(usb_port("/dev/ttyACM1", "SN-1"))
    assert locator.transport().address == "/dev/ttyACM1"


def test_auto_without_usb_identity_looks_afresh() -> None:
    attached = Attached(
        Candidate(
            "/dev/ttyS0", "serial", None, None, None, None, "rs232", ("/dev/electronic-shoe",)
        )
    )
    chosen = AutoTransport(candidates=attached, opener=Dummy)
    chosen.open()
    locator = ShoeLocator("auto", Dummy, attached)
    locator.found(chosen, identity("SN-9"))
    assert locator.transport().address == "auto"


def test_unpinned_usb_is_pinned_to_the_serial_number_of_the_shoe_that_answered() -> None:
    locator = ShoeLocator("usb://", Dummy, Attached())
    assert locator.transport().address == "usb://"
    locator.found(Dummy("usb://"), identity("SN-7"))
    assert locator.transport().address == f"usb://{VID:04x}:{PID:04x}?serial=SN-7"


def test_pinned_usb_stays_as_given() -> None:
    locator = ShoeLocator("usb://1209:0001?serial=SN-3", Dummy, Attached())
    locator.found(Dummy("x"), identity("SN-3"))
    assert locator.transport().address == "usb://1209:0001?serial=SN-3"
