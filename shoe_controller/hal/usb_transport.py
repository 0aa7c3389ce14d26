"""A shoe on raw USB: the bulk IN/OUT endpoints of its vendor interface, through pyusb.

Opening finds the device by VID:PID (and serial number when given), sets its configuration
only if it has none (setting it again would disturb the other interfaces of a composite
device), detaches any kernel driver bound to the vendor interface, claims it, and finds its
bulk endpoints. Closing releases the interface, gives the kernel driver back if we took it,
and disposes of pyusb's handle, so that another program can open the shoe next.

Reads ask for a whole number of packets (``wMaxPacketSize``): a device answers with whole
packets, and a buffer that ends inside one would make the transfer overflow. A read that
times out is "no data", not an error. The byte stream is delimited by the protocol's frame
delimiter, so writes need no zero-length packet to mark their end.
"""

from __future__ import annotations

import errno
import logging
import math
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import usb.backend.libusb0
import usb.backend.libusb1
import usb.backend.openusb
import usb.core
import usb.util

from shoe_controller.errors import (
    BackendUnavailable,
    ConfigError,
    DeviceBusy,
    DeviceNotFound,
    DevicePermissionError,
    LinkLost,
    TransportError,
)
from shoe_controller.hal import advice, usb_ids
from shoe_controller.hal.addresses import parse_address
from shoe_controller.hal.base import Transport

log = logging.getLogger(__name__)

#: Bytes asked for per read, rounded up to whole packets: two maximum frames at full speed.
READ_SIZE = 512
DEFAULT_WRITE_TIMEOUT = 2.0

NO_BACKEND_MESSAGE = (
    "no USB library (libusb-1.0) is available: install it with "
    "pip install 'shoe-controller[usb]' (brings libusb-package) or apt install libusb-1.0-0"
)


def default_backend() -> Any:
    """The libusb backend pyusb should use: libusb-package's when it is installed, else the
    first that pyusb itself finds. Raises :class:`BackendUnavailable` when there is none."""
    try:
        import libusb_package  # noqa: PLC0415 (optional dependency)
    except ImportError:
        pass
    else:
        backend = libusb_package.get_libusb1_backend()
        if backend is not None:
            return backend
    for module in (usb.backend.libusb1, usb.backend.openusb, usb.backend.libusb0):
        backend = module.get_backend()
        if backend is not None:
            return backend
    raise BackendUnavailable(NO_BACKEND_MESSAGE)


def usb_address(vid: int, pid: int, serial_number: str | None = None) -> str:
    """The ``usb://`` address of a shoe, pinned to its serial number when one is known."""
    text = f"usb://{vid:04x}:{pid:04x}"
    return f"{text}?serial={quote(serial_number, safe='')}" if serial_number else text


def usb_location(device: Any) -> str | None:
    """The device's place on the bus in sysfs notation (bus-port.port...), e.g. "1-1.2"."""
    bus, ports = getattr(device, "bus", None), getattr(device, "port_numbers", None)
    if bus is None or not ports:
        return None
    return f"{bus}-{'.'.join(str(port) for port in ports)}"


@dataclass(frozen=True, slots=True)
class DeviceStrings:
    """A device's serial number and product strings. ``readable`` is False when it has
    strings we could not read, which usually means no permission to open it."""

    serial_number: str | None
    product: str | None
    readable: bool


def read_strings(device: Any) -> DeviceStrings:
    """Read the serial number and product strings, then let go of the device."""
    values: list[str | None] = []
    readable = True
    for index, name in (("iSerialNumber", "serial_number"), ("iProduct", "product")):
        if not getattr(device, index, 0):
            values.append(None)
            continue
        try:
            values.append(str(getattr(device, name)))
        except (usb.core.USBError, ValueError, NotImplementedError) as exc:
            log.debug("%s of %s unreadable: %s", name, device_node(device), exc)
            values.append(None)
            readable = False
    _dispose_quietly(device)
    return DeviceStrings(values[0], values[1], readable)


def device_node(device: Any) -> str | None:
    """The usbfs node of a pyusb device, for messages (who holds it: fuser/lsof)."""
    bus, address = getattr(device, "bus", None), getattr(device, "address", None)
    if bus is None or address is None:
        return None
    return f"/dev/bus/usb/{bus:03d}/{address:03d}"


class UsbTransport(Transport):
    """The shoe's vendor interface (class 0xFF) with one bulk IN and one bulk OUT endpoint.

    ``backend`` is a pyusb backend; None means :func:`default_backend`, looked up on open.
    """

    def __init__(
        self,
        vid: int = usb_ids.VENDOR_ID,
        pid: int = usb_ids.PRODUCT_ID,
        serial_number: str | None = None,
        backend: Any = None,
        *,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        address: str | None = None,
    ) -> None:
        self.vid = vid
        self.pid = pid
        self.serial_number = serial_number
        self.backend = backend
        self.write_timeout = write_timeout
        self.address = address if address is not None else usb_address(vid, pid, serial_number)
        self._device: Any = None
        self._interface: int | None = None
        self._detached = False
        self._ep_in: Any = None
        self._ep_out: Any = None
        self._read_size = READ_SIZE
        self._read_lock = threading.Lock()
        self._write_lock = threading.Lock()

    @classmethod
    def from_address(cls, address: str) -> UsbTransport:
        parsed = parse_address(address)
        if parsed.scheme != "usb" or parsed.vid is None or parsed.pid is None:
            raise ConfigError(f"{address!r} is not a usb:// address")
        return cls(parsed.vid, parsed.pid, parsed.serial_number, address=parsed.text)

    @property
    def is_open(self) -> bool:
        return self._device is not None

    @property
    def _what(self) -> str:
        serial = f" with serial number {self.serial_number}" if self.serial_number else ""
        return f"USB shoe {self.vid:04x}:{self.pid:04x}{serial}"

    def open(self) -> None:
        if self._device is not None:
            raise RuntimeError(f"{self.address} is already open")
        backend = self.backend if self.backend is not None else default_backend()
        device = self._find(backend)
        try:
            self._claim(device)
        except usb.core.USBError as exc:
            self._release(device)
            raise self._open_error(exc, device) from exc
        except BaseException:
            self._release(device)
            raise
        self._device = device
        log.debug("opened %s (interface %s)", self.address, self._interface)

    def _find(self, backend: Any) -> Any:
        try:
            devices = list(
                usb.core.find(find_all=True, backend=backend, idVendor=self.vid, idProduct=self.pid)
            )
        except usb.core.USBError as exc:
            raise self._open_error(exc, None) from exc
        if not devices:
            raise DeviceNotFound(advice.not_found(self._what))
        if self.serial_number is None:
            if len(devices) > 1:
                found = ", ".join(_describe(device) for device in devices)
                raise ConfigError(
                    f"{len(devices)} USB shoes {self.vid:04x}:{self.pid:04x} are attached "
                    f"({found}); pass --device usb://{self.vid:04x}:{self.pid:04x}"
                    f"?serial=SERIAL_NUMBER to choose one"
                )
            return devices[0]
        unreadable = False
        for device in devices:
            strings = read_strings(device)
            if strings.serial_number == self.serial_number:
                return device
            unreadable = unreadable or not strings.readable
        if unreadable:
            raise DevicePermissionError(
                advice.permission_denied(f"{self._what} (its serial number is unreadable)")
            )
        raise DeviceNotFound(advice.not_found(self._what))

    def _claim(self, device: Any) -> None:
        config = self._active_configuration(device)
        interface = usb.util.find_descriptor(config, bInterfaceClass=usb_ids.VENDOR_INTERFACE_CLASS)
        if interface is None:
            raise TransportError(
                f"{self._what} has no vendor interface (class "
                f"0x{usb_ids.VENDOR_INTERFACE_CLASS:02X}); update the shoe's firmware or "
                f"use its serial port instead"
            )
        number = int(interface.bInterfaceNumber)
        self._interface = number
        if _kernel_driver_active(device, number):
            device.detach_kernel_driver(number)
            self._detached = True
        usb.util.claim_interface(device, number)
        self._ep_in = _bulk_endpoint(interface, usb.util.ENDPOINT_IN)
        self._ep_out = _bulk_endpoint(interface, usb.util.ENDPOINT_OUT)
        if self._ep_in is None or self._ep_out is None:
            raise TransportError(
                f"{self._what}: its vendor interface lacks a bulk IN or bulk OUT endpoint; "
                f"update the shoe's firmware"
            )
        packet = int(self._ep_in.wMaxPacketSize) & 0x7FF or 64
        self._read_size = packet * math.ceil(READ_SIZE / packet)

    @staticmethod
    def _active_configuration(device: Any) -> Any:
        try:
            return device.get_active_configuration()
        except usb.core.USBError as exc:
            if exc.errno is not None:
                raise
        # pyusb reports an unconfigured device with no errno: configure it once.
        device.set_configuration()
        return device.get_active_configuration()

    def _open_error(self, exc: usb.core.USBError, device: Any) -> TransportError:
        code = exc.errno
        if code in (errno.EACCES, errno.EPERM):
            return DevicePermissionError(advice.permission_denied(self._what))
        if code == errno.EBUSY:
            return DeviceBusy(advice.busy(self._what, device_node(device)))
        if code in (errno.ENODEV, errno.ENOENT):
            return DeviceNotFound(advice.not_found(self._what))
        return TransportError(f"cannot open {self._what}: {exc}")

    def read(self, timeout: float) -> bytes:
        if timeout < 0:
            raise ValueError(f"read timeout must be >= 0, not {timeout}")
        device, endpoint = self._device, self._ep_in
        if device is None:
            raise TransportError(f"{self.address} is not open")
        # libusb reads 0 ms as "wait for ever"; the shortest real wait is 1 ms.
        milliseconds = max(1, math.ceil(timeout * 1000))
        with self._read_lock:
            try:
                data = endpoint.read(self._read_size, milliseconds)
            except usb.core.USBError as exc:
                if exc.errno == errno.ETIMEDOUT or isinstance(exc, usb.core.USBTimeoutError):
                    return b""
                if self._device is not device:
                    return b""  # closed by another thread while we waited
                raise self._lost(exc) from exc
        return bytes(data)

    def write(self, data: bytes) -> None:
        device, endpoint = self._device, self._ep_out
        if device is None:
            raise TransportError(f"{self.address} is not open")
        milliseconds = max(1, math.ceil(self.write_timeout * 1000))
        view = memoryview(data)
        with self._write_lock:
            while view:
                try:
                    sent = endpoint.write(view, milliseconds)
                except usb.core.USBError as exc:
                    if exc.errno == errno.ETIMEDOUT or isinstance(exc, usb.core.USBTimeoutError):
                        sent = 0
                    elif self._device is not device:
                        raise TransportError(f"{self.address} was closed during a write") from exc
                    else:
                        raise self._lost(exc) from exc
                if sent <= 0:
                    raise LinkLost(
                        f"link to {self._what} lost: the device took no data for "
                        f"{self.write_timeout:g} s; check that the shoe is powered and connected"
                    )
                view = view[sent:]

    def _lost(self, exc: usb.core.USBError) -> LinkLost:
        reason = "the device is gone" if exc.errno == errno.ENODEV else str(exc)
        return LinkLost(
            f"link to {self._what} lost ({reason}): check the cable and the shoe's power; "
            f"the controller reconnects when the device is back"
        )

    def close(self) -> None:
        device = self._device
        if device is None:
            return
        self._device = None
        with self._read_lock, self._write_lock:
            self._release(device)
        log.debug("closed %s", self.address)

    def _release(self, device: Any) -> None:
        """Give back what open() took, in reverse order; every step tolerates a device that
        has vanished, and a half-finished open."""
        if self._interface is not None:
            try:
                usb.util.release_interface(device, self._interface)
            except (usb.core.USBError, ValueError) as exc:
                log.debug("releasing interface %s: %s", self._interface, exc)
            if self._detached:
                try:
                    device.attach_kernel_driver(self._interface)
                except (usb.core.USBError, NotImplementedError) as exc:
                    log.warning(
                        "could not give interface %s of %s back to its kernel driver: %s",
                        self._interface,
                        self._what,
                        exc,
                    )
        _dispose_quietly(device)
        self._interface = None
        self._detached = False
        self._ep_in = self._ep_out = None

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"<UsbTransport {self.address!r} {state}>"


def _kernel_driver_active(device: Any, interface: int) -> bool:
    try:
        return bool(device.is_kernel_driver_active(interface))
    except NotImplementedError:
        return False
    except usb.core.USBError as exc:
        # Platforms without kernel drivers to detach answer "not supported".
        if exc.errno in (errno.ENOSYS, errno.EOPNOTSUPP):
            return False
        raise


def _bulk_endpoint(interface: Any, direction: int) -> Any:
    def matches(endpoint: Any) -> bool:
        return bool(
            usb.util.endpoint_direction(endpoint.bEndpointAddress) == direction
            and usb.util.endpoint_type(endpoint.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK
        )

    return usb.util.find_descriptor(interface, custom_match=matches)


def _describe(device: Any) -> str:
    strings = read_strings(device)
    where = device_node(device) or "?"
    if strings.serial_number:
        return f"serial {strings.serial_number} at {where}"
    return f"serial {'unknown' if strings.readable else 'unreadable'} at {where}"


def _dispose_quietly(device: Any) -> None:
    try:
        usb.util.dispose_resources(device)
    except usb.core.USBError as exc:
        log.debug("disposing of %s: %s", device_node(device), exc)
