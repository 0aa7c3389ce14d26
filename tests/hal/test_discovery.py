"""Discovery of candidate shoes, and the address ``auto``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import usb.core
from serial.tools.list_ports_common import ListPortInfo

from shoe_controller.errors import ConfigError, DeviceNotFound, ExitCode
from shoe_controller.hal import usb_ids
from shoe_controller.hal.addresses import open_transport
from shoe_controller.hal.auto_transport import AutoTransport
from shoe_controller.hal.base import Transport
from shoe_controller.hal.discovery import Candidate, choose_one, list_candidates
from tests.hal.fake_usb import FakeBackend, FakeDevice

SHOE = (usb_ids.VENDOR_ID, usb_ids.PRODUCT_ID)
FTDI = (0x0403, 0x6001)


def port(
    device: str,
    ids: tuple[int, int] | None = None,
    serial_number: str | None = None,
    location: str | None = None,
    description: str = "n/a",
) -> ListPortInfo:
    info = ListPortInfo(device, skip_link_detection=True)
    if ids is not None:
        info.vid, info.pid = ids
    info.serial_number = serial_number
    info.location = location
    info.description = description
    return info


def ports(*infos: ListPortInfo) -> Callable[[], list[ListPortInfo]]:
    return lambda: list(infos)


def usb_devices(*devices: FakeDevice) -> Callable[[], list[Any]]:
    backend = FakeBackend(*devices)
    return lambda: list(usb.core.find(find_all=True, backend=backend))


NO_USB = usb_devices()


def test_serial_ports_become_candidates_with_their_usb_details(tmp_path: Path) -> None:
    found = list_candidates(
        serial_ports=ports(
            port("/dev/ttyS0"),
            port("/dev/ttyACM0", SHOE, "ES-042", "1-1.2:1.0", "Electronic shoe"),
        ),
        usb_devices=NO_USB,
        link_dirs=[str(tmp_path)],
    )
    assert found == [
        Candidate(
            address="/dev/ttyACM0",
            kind="serial",
            vid=usb_ids.VENDOR_ID,
            pid=usb_ids.PRODUCT_ID,
            serial_number="ES-042",
            location="1-1.2:1.0",
            description="Electronic shoe",
            known=True,
        ),
        Candidate("/dev/ttyS0", "serial", None, None, None, None, "n/a"),
    ]


def test_udev_symlinks_are_found(tmp_path: Path) -> None:
    node = tmp_path / "ttyUSB3"
    node.touch()
    links = tmp_path / "links"
    by_id = tmp_path / "by-id"
    links.mkdir()
    by_id.mkdir()
    (links / "electronic-shoe").symlink_to(node)
    (by_id / "usb-FTDI_RS232-if00-port0").symlink_to(node)
    (links / "unrelated").symlink_to(tmp_path / "elsewhere")
    (candidate,) = list_candidates(
        serial_ports=ports(port(str(node), FTDI, "A10K")),
        usb_devices=NO_USB,
        link_dirs=[str(links), str(by_id), str(tmp_path / "missing")],
    )
    assert candidate.symlinks == (
        str(by_id / "usb-FTDI_RS232-if00-port0"),
        str(links / "electronic-shoe"),
    )
    assert not candidate.known  # the adapter's IDs are not ours ...
    assert not candidate.is_shoe  # ... and the link is not called /dev/electronic-shoe


def test_the_udev_symlink_marks_an_rs232_shoe() -> None:
    candidate = Candidate(
        "/dev/ttyUSB0", "serial", *FTDI, "A10K", "1-3:1.0", "FT232R", (usb_ids.SYMLINK,)
    )
    assert candidate.is_shoe and not candidate.known
    assert choose_one([candidate]) is candidate
    per_serial = Candidate("/dev/ttyUSB1", "serial", *FTDI, None, None, "", ("/dev/other",))
    assert not per_serial.is_shoe
    per_serial = Candidate(
        "/dev/ttyUSB1", "serial", *FTDI, None, None, "", (f"{usb_ids.SYMLINK}-ES-7",)
    )
    assert per_serial.is_shoe


def test_raw_usb_shoes_are_listed_once(tmp_path: Path) -> None:
    with_port = FakeDevice(serial="ES-1", bus=1, port_numbers=(1, 2), address=5)
    raw_only = FakeDevice(serial="ES-2", bus=2, port_numbers=(4,), address=9, product=None)
    foreign = FakeDevice(vid=0x0403, pid=0x6001, serial="F", bus=1, port_numbers=(3,))
    found = list_candidates(
        serial_ports=ports(port("/dev/ttyACM0", SHOE, "ES-1", "1-1.2:1.0")),
        usb_devices=usb_devices(with_port, raw_only, foreign),
        link_dirs=[str(tmp_path)],
    )
    assert [c.address for c in found] == ["/dev/ttyACM0", "usb://1209:0001?serial=ES-2"]
    raw = found[1]
    assert (raw.kind, raw.serial_number, raw.location, raw.known) == ("usb", "ES-2", "2-4", True)
    assert raw.description == "USB shoe"
    assert with_port.open_handles == raw_only.open_handles == 0


def test_a_raw_usb_shoe_matches_its_port_by_serial_number_without_location(
    tmp_path: Path,
) -> None:
    device = FakeDevice(serial="ES-1", port_numbers=())
    found = list_candidates(
        serial_ports=ports(port("/dev/ttyACM0", SHOE, "ES-1")),
        usb_devices=usb_devices(device),
        link_dirs=[str(tmp_path)],
    )
    assert [c.address for c in found] == ["/dev/ttyACM0"]


def test_unreadable_usb_strings_are_reported_not_fatal(tmp_path: Path) -> None:
    device = FakeDevice(fail={"strings": 13})
    (candidate,) = list_candidates(
        serial_ports=ports(), usb_devices=usb_devices(device), link_dirs=[str(tmp_path)]
    )
    assert candidate.address == "usb://1209:0001"
    assert candidate.serial_number is None
    assert "check the udev rules and group" in candidate.description


def test_shoes_are_listed_first(tmp_path: Path) -> None:
    found = list_candidates(
        serial_ports=ports(port("/dev/ttyS0"), port("/dev/ttyACM9", SHOE), port("/dev/ttyS1")),
        usb_devices=NO_USB,
        link_dirs=[str(tmp_path)],
    )
    assert [c.address for c in found] == ["/dev/ttyACM9", "/dev/ttyS0", "/dev/ttyS1"]


def test_default_sources_run_on_this_machine() -> None:
    # Whatever this machine has: the real pyserial and pyusb listings must not fail.
    for candidate in list_candidates():
        assert candidate.kind in ("serial", "usb")


def shoe(address: str, serial_number: str | None = None) -> Candidate:
    return Candidate(address, "serial", *SHOE, serial_number, None, "shoe", known=True)


def test_choose_one_with_no_shoe_says_what_to_check() -> None:
    with pytest.raises(DeviceNotFound) as info:
        choose_one([Candidate("/dev/ttyS0", "serial", None, None, None, None, "n/a")])
    message = str(info.value)
    assert "plugged in" in message and "1209:0001" in message and "--device" in message
    assert info.value.exit_code is ExitCode.DEVICE_NOT_FOUND


def test_choose_one_with_several_shoes_lists_them() -> None:
    with pytest.raises(ConfigError) as info:
        choose_one([shoe("/dev/ttyACM0", "ES-1"), shoe("usb://1209:0001?serial=ES-2", "ES-2")])
    message = str(info.value)
    assert "/dev/ttyACM0 serial ES-1" in message
    assert "usb://1209:0001?serial=ES-2" in message
    assert "pass --device" in message


class Recorder:
    """An opener that records the addresses it is asked for and returns loop:// ports."""

    def __init__(self) -> None:
        self.addresses: list[str] = []

    def __call__(self, address: str) -> Transport:
        self.addresses.append(address)
        return open_transport("loop://")


@pytest.mark.parametrize("count", [0, 1, 2])
def test_auto_with_zero_one_or_two_shoes(count: int) -> None:
    candidates = [shoe(f"/dev/ttyACM{n}", f"ES-{n}") for n in range(count)]
    opener = Recorder()
    transport = AutoTransport(candidates=lambda: candidates, opener=opener)
    assert not transport.is_open
    if count == 0:
        with pytest.raises(DeviceNotFound):
            transport.open()
    elif count == 2:
        with pytest.raises(ConfigError, match="2 shoes found"):
            transport.open()
    else:
        with transport:
            assert transport.is_open and transport.chosen == candidates[0]
            transport.write(b"ping")
            assert transport.read(1.0) == b"ping"
        assert not transport.is_open
    assert opener.addresses == (["/dev/ttyACM0"] if count == 1 else [])
    transport.close()


def test_auto_looks_again_at_every_open() -> None:
    current = [shoe("/dev/ttyACM0")]
    opener = Recorder()
    transport = AutoTransport(candidates=lambda: current, opener=opener)
    transport.open()
    transport.close()
    current[:] = [shoe("/dev/ttyACM1")]  # unplugged, back under another name
    transport.open()
    assert opener.addresses == ["/dev/ttyACM0", "/dev/ttyACM1"]
    transport.close()


def test_auto_closes_the_chosen_transport_when_its_open_fails(tmp_path: Path) -> None:
    missing = str(tmp_path / "ttyACM0")
    transport = AutoTransport(candidates=lambda: [shoe(missing)])
    with pytest.raises(DeviceNotFound, match=os.path.basename(missing)):
        transport.open()
    assert not transport.is_open and transport.inner is None
    transport.close()


def test_auto_from_its_address() -> None:
    transport = open_transport("auto")
    assert isinstance(transport, AutoTransport)
    assert transport.address == "auto" and not transport.in_process_simulator
    with pytest.raises(ConfigError):
        AutoTransport.from_address("/dev/ttyACM0")
