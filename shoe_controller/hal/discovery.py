"""Finding shoes: serial ports and raw USB devices, matched against our known USB IDs.

Serial ports come from pyserial's ``list_ports`` (with VID, PID, serial number and USB
location when the port is on USB), raw USB devices from pyusb when a USB library is
present. A USB shoe that also shows up as a serial port is listed once, as the port. Every
source is a parameter, so that tests and other programs can supply their own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from shoe_controller.errors import BackendUnavailable, ConfigError, DeviceNotFound
from shoe_controller.hal import advice, usb_ids

log = logging.getLogger(__name__)

#: Directories searched for udev symlinks pointing at a serial port.
LINK_DIRS: tuple[str, ...] = ("/dev", "/dev/serial/by-id", "/dev/serial/by-path")


class SerialPortInfo(Protocol):
    """What discovery reads of ``serial.tools.list_ports_common.ListPortInfo``."""

    device: str
    description: str
    vid: int | None
    pid: int | None
    serial_number: str | None
    location: str | None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A device that may be a shoe.

    ``address`` opens it (a device path or a ``usb://`` address); ``symlinks`` are udev
    links pointing at the node (e.g. /dev/electronic-shoe); ``known`` means its VID:PID is
    one of :data:`usb_ids.KNOWN_SHOES`.
    """

    address: str
    kind: Literal["serial", "usb"]
    vid: int | None
    pid: int | None
    serial_number: str | None
    location: str | None
    description: str
    symlinks: tuple[str, ...] = ()
    known: bool = False

    @property
    def is_shoe(self) -> bool:
        """Known by its USB IDs, or named a shoe by a udev symlink (/dev/electronic-shoe or
        /dev/electronic-shoe-SERIAL): a rule may name an RS-232 shoe behind a USB adapter,
        whose IDs are the adapter's."""
        return self.known or any(
            link == usb_ids.SYMLINK or link.startswith(f"{usb_ids.SYMLINK}-")
            for link in self.symlinks
        )


def list_candidates(
    *,
    serial_ports: Callable[[], Iterable[SerialPortInfo]] | None = None,
    usb_devices: Callable[[], Iterable[Any]] | None = None,
    link_dirs: Sequence[str] = LINK_DIRS,
) -> list[Candidate]:
    """Every serial port, and every raw USB device with a known VID:PID that has no serial
    port; shoes first, then by address.

    ``usb_devices`` yields pyusb ``Device`` objects (default: those of the default backend
    with a known VID:PID, none when no USB library is installed).
    """
    ports = list((serial_ports or _comports)())
    links = _symlinks_by_target(link_dirs)
    candidates = [_serial_candidate(port, links) for port in ports]
    for device in (usb_devices or _known_usb_devices)():
        if (int(device.idVendor), int(device.idProduct)) not in usb_ids.KNOWN_SHOES:
            continue
        candidate = _usb_candidate(device)
        if not any(_same_device(candidate, port) for port in candidates):
            candidates.append(candidate)
    return sorted(candidates, key=lambda c: (not c.is_shoe, c.address))


def choose_one(candidates: Iterable[Candidate]) -> Candidate:
    """The one shoe among ``candidates``, as the address ``auto`` means it.

    None -> :class:`DeviceNotFound` saying what to check; several -> :class:`ConfigError`
    listing them.
    """
    shoes = [candidate for candidate in candidates if candidate.is_shoe]
    if not shoes:
        raise DeviceNotFound(
            f"no shoe found: check that it is plugged in and powered, that 'lsusb' lists "
            f"{usb_ids.VENDOR_ID:04x}:{usb_ids.PRODUCT_ID:04x}, and that the udev rules "
            f"({advice.UDEV_RULES}) are installed; or pass --device with its address"
        )
    if len(shoes) > 1:
        listed = ", ".join(_label(shoe) for shoe in shoes)
        raise ConfigError(f"{len(shoes)} shoes found ({listed}); pass --device with one of them")
    return shoes[0]


def _label(candidate: Candidate) -> str:
    serial = f" serial {candidate.serial_number}" if candidate.serial_number else ""
    return f"{candidate.address}{serial}"


def _comports() -> list[SerialPortInfo]:
    from serial.tools import list_ports  # noqa: PLC0415 (only discovery needs it)

    return list(list_ports.comports())


def _known_usb_devices() -> list[Any]:
    import usb.core  # noqa: PLC0415

    from shoe_controller.hal.usb_transport import default_backend  # noqa: PLC0415

    try:
        backend = default_backend()
    except BackendUnavailable as exc:
        log.info("raw USB devices not listed: %s", exc)
        return []
    known = set(usb_ids.KNOWN_SHOES)
    try:
        return list(
            usb.core.find(
                find_all=True,
                backend=backend,
                custom_match=lambda d: (d.idVendor, d.idProduct) in known,
            )
        )
    except usb.core.USBError as exc:
        log.warning("listing USB devices failed: %s", exc)
        return []


def _symlinks_by_target(link_dirs: Sequence[str]) -> Mapping[str, tuple[str, ...]]:
    links: dict[str, list[str]] = {}
    for directory in link_dirs:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                links.setdefault(os.path.realpath(entry.path), []).append(entry.path)
    return {target: tuple(sorted(paths)) for target, paths in links.items()}


def _serial_candidate(port: SerialPortInfo, links: Mapping[str, tuple[str, ...]]) -> Candidate:
    vid, pid = port.vid, port.pid
    return Candidate(
        address=port.device,
        kind="serial",
        vid=vid,
        pid=pid,
        serial_number=port.serial_number or None,
        location=port.location or None,
        description=port.description or "",
        symlinks=links.get(os.path.realpath(port.device), ()),
        known=(vid, pid) in usb_ids.KNOWN_SHOES,
    )


def _usb_candidate(device: Any) -> Candidate:
    from shoe_controller.hal.usb_transport import (  # noqa: PLC0415
        read_strings,
        usb_address,
        usb_location,
    )

    vid, pid = int(device.idVendor), int(device.idProduct)
    strings = read_strings(device)
    description = strings.product or "USB shoe"
    if not strings.readable:
        description += " (strings unreadable: check the udev rules and group)"
    return Candidate(
        address=usb_address(vid, pid, strings.serial_number),
        kind="usb",
        vid=vid,
        pid=pid,
        serial_number=strings.serial_number,
        location=usb_location(device),
        description=description,
        known=True,
    )


def _same_device(usb_candidate: Candidate, port: Candidate) -> bool:
    """Whether a serial port is an interface of this USB device."""
    if port.kind != "serial" or (port.vid, port.pid) != (usb_candidate.vid, usb_candidate.pid):
        return False
    if usb_candidate.location and port.location:
        # pyserial's location is the USB interface's sysfs name, e.g. "1-1.2:1.0".
        return port.location.split(":")[0] == usb_candidate.location
    return usb_candidate.serial_number is not None and (
        usb_candidate.serial_number == port.serial_number
    )
