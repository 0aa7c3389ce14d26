"""A pyusb backend whose one device is the simulated shoe, so that ``usb.core.find`` and
the USB transport run their real code paths without hardware.

The device answers as the real shoe enumerates: our VID:PID (shoe_controller.hal.usb_ids),
manufacturer, product and serial number strings, one configuration with one vendor
interface (class 0xFF) holding a bulk IN (0x81) and a bulk OUT (0x01) endpoint of 64-byte
packets, full speed. Like libusb on Linux it insists on order: an interface is claimed
only once its kernel driver is detached (else EBUSY), and by one handle at a time.

Bulk OUT transfers go to the shoe; bulk IN transfers return its bytes in 64-byte packets
and end at a short packet, as a device's would; a buffer that a whole packet does not fit
gets libusb's overflow error, and a transfer that times out raises pyusb's timeout error
(errno 110). Errors carry libusb's codes and errnos, so that error mapping is exercised.

A ``disconnect`` fault unplugs the device: every open handle fails with ENODEV, and the
device enumerates again at a new address, the same shoe in the same state.
"""

from __future__ import annotations

import errno
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import usb.backend
import usb.core
import usb.util

from shoe_controller.hal import usb_ids
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.runner import Clock, ShoeRunner
from shoe_controller.simulator.shoe import SimulatedShoe

EP_IN = 0x81
EP_OUT = 0x01
PACKET_SIZE = 64
INTERFACE = 0
CONFIGURATION = 1
LANGID_EN_US = 0x0409
MANUFACTURER = "pid.codes test VID"
PRODUCT = "Electronic dealing shoe (simulated)"

_GET_DESCRIPTOR = 0x06
_STANDARD_DEVICE_IN = 0x80
_DT_STRING = 0x03

# libusb error codes, with the errno pyusb reports for each.
_ERRORS = {
    "access": (-3, errno.EACCES, "Access denied (insufficient permissions)"),
    "no_device": (-4, errno.ENODEV, "No such device (it may have been disconnected)"),
    "not_found": (-5, errno.ENOENT, "Entity not found"),
    "busy": (-6, errno.EBUSY, "Resource busy"),
    "overflow": (-8, errno.EOVERFLOW, "Overflow"),
    "pipe": (-9, errno.EPIPE, "Pipe error"),
    "invalid": (-2, errno.EINVAL, "Invalid parameter"),
}


def _error(kind: str) -> usb.core.USBError:
    code, number, text = _ERRORS[kind]
    return usb.core.USBError(text, code, number)


@dataclass(frozen=True, slots=True)
class _DeviceId:
    """What enumerate_devices yields: one per enumeration of the device."""

    generation: int


@dataclass(eq=False, slots=True)
class _Handle:
    generation: int
    closed: bool = False


@dataclass(slots=True)
class _DeviceDescriptor:
    idVendor: int
    idProduct: int
    address: int
    bLength: int = 18
    bDescriptorType: int = 0x01
    bcdUSB: int = 0x0200
    bDeviceClass: int = 0x00  # each interface says its own class
    bDeviceSubClass: int = 0x00
    bDeviceProtocol: int = 0x00
    bMaxPacketSize0: int = 64
    bcdDevice: int = 0x0100
    iManufacturer: int = 1
    iProduct: int = 2
    iSerialNumber: int = 3
    bNumConfigurations: int = 1
    bus: int = 1
    port_number: int = 1
    port_numbers: tuple[int, ...] = (1,)
    speed: int = usb.util.SPEED_FULL


@dataclass(slots=True)
class _ConfigurationDescriptor:
    bLength: int = 9
    bDescriptorType: int = 0x02
    wTotalLength: int = 9 + 9 + 7 + 7
    bNumInterfaces: int = 1
    bConfigurationValue: int = CONFIGURATION
    iConfiguration: int = 0
    bmAttributes: int = 0x80  # bus powered
    bMaxPower: int = 50  # 100 mA, in units of 2 mA
    extra_descriptors: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _InterfaceDescriptor:
    bLength: int = 9
    bDescriptorType: int = 0x04
    bInterfaceNumber: int = INTERFACE
    bAlternateSetting: int = 0
    bNumEndpoints: int = 2
    bInterfaceClass: int = usb_ids.VENDOR_INTERFACE_CLASS
    bInterfaceSubClass: int = 0x00
    bInterfaceProtocol: int = 0x00
    iInterface: int = 0
    extra_descriptors: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _EndpointDescriptor:
    bEndpointAddress: int
    bLength: int = 7
    bDescriptorType: int = 0x05
    bmAttributes: int = usb.util.ENDPOINT_TYPE_BULK
    wMaxPacketSize: int = PACKET_SIZE
    bInterval: int = 0
    bRefresh: int = 0
    bSynchAddress: int = 0
    extra_descriptors: list[int] = field(default_factory=list)


class SimUsbBackend(usb.backend.IBackend):  # type: ignore[misc]  # pyusb is untyped
    """``usb.core.find(backend=SimUsbBackend(options))`` finds the simulated shoe.

    ``kernel_driver_active`` says whether a kernel driver holds the vendor interface when
    the device enumerates (the host must detach it before claiming); ``permission_denied``
    makes opening fail with EACCES, as without the udev rules.
    """

    def __init__(
        self,
        options: SimOptions | None = None,
        *,
        shoe: SimulatedShoe | None = None,
        clock: Clock = time.monotonic,
        kernel_driver_active: bool = True,
        permission_denied: bool = False,
    ) -> None:
        super().__init__()
        self.runner = ShoeRunner(shoe if shoe is not None else SimulatedShoe(options), clock)
        self._lock = self.runner.locked
        self._kernel_driver_at_enumeration = kernel_driver_active
        self.permission_denied = permission_denied
        self._generation = 1
        self._kernel_driver = kernel_driver_active
        self._claimed_by: _Handle | None = None
        self._configuration = CONFIGURATION
        self._packets: deque[bytes] = deque()
        #: Handles opened and not yet closed.
        self.open_handles = 0

    @property
    def shoe(self) -> SimulatedShoe:
        return self.runner.shoe

    @property
    def address(self) -> int:
        """The device's address on bus 1; it changes when the device enumerates again."""
        return 1 + self._generation

    @property
    def kernel_driver_active(self) -> bool:
        return self._kernel_driver

    @property
    def claimed(self) -> bool:
        return self._claimed_by is not None

    # --- enumeration and descriptors ---------------------------------------------------

    def enumerate_devices(self) -> list[_DeviceId]:
        with self._lock():
            self._check_unplugged()
            return [_DeviceId(self._generation)]

    def get_parent(self, dev: _DeviceId) -> None:
        return None

    def get_device_descriptor(self, dev: _DeviceId) -> _DeviceDescriptor:
        return _DeviceDescriptor(usb_ids.VENDOR_ID, usb_ids.PRODUCT_ID, address=1 + dev.generation)

    def get_configuration_descriptor(self, dev: _DeviceId, config: int) -> Any:
        if config != 0:
            raise IndexError(f"configuration index {config} out of range")
        return _ConfigurationDescriptor()

    def get_interface_descriptor(self, dev: _DeviceId, intf: int, alt: int, config: int) -> Any:
        if config != 0 or intf != 0 or alt != 0:
            raise IndexError(f"interface {intf} alternate setting {alt} out of range")
        return _InterfaceDescriptor()

    def get_endpoint_descriptor(
        self, dev: _DeviceId, ep: int, intf: int, alt: int, config: int
    ) -> Any:
        if config != 0 or intf != 0 or alt != 0 or ep not in (0, 1):
            raise IndexError(f"endpoint {ep} out of range")
        return _EndpointDescriptor(EP_IN if ep == 0 else EP_OUT)

    # --- device handles ----------------------------------------------------------------

    def open_device(self, dev: _DeviceId) -> _Handle:
        with self._lock():
            self._check_unplugged()
            if self.permission_denied:
                raise _error("access")
            if dev.generation != self._generation:
                raise _error("no_device")
            self.open_handles += 1
            return _Handle(dev.generation)

    def close_device(self, dev_handle: _Handle) -> None:
        with self._lock():
            if dev_handle.closed:
                return
            dev_handle.closed = True
            self.open_handles -= 1
            if self._claimed_by is dev_handle:
                self._claimed_by = None

    def set_configuration(self, dev_handle: _Handle, config_value: int) -> None:
        with self._lock():
            self._live(dev_handle)
            if config_value not in (0, CONFIGURATION):
                raise _error("not_found")
            if self._claimed_by is not None:
                raise _error("busy")
            self._configuration = config_value

    def get_configuration(self, dev_handle: _Handle) -> int:
        with self._lock():
            self._live(dev_handle)
            return self._configuration

    def set_interface_altsetting(self, dev_handle: _Handle, intf: int, altsetting: int) -> None:
        with self._lock():
            self._live(dev_handle)
            if intf != INTERFACE or altsetting != 0:
                raise _error("not_found")
            if self._claimed_by is not dev_handle:
                raise _error("not_found")

    def claim_interface(self, dev_handle: _Handle, intf: int) -> None:
        with self._lock():
            self._live(dev_handle)
            if intf != INTERFACE or self._configuration != CONFIGURATION:
                raise _error("not_found")
            if self._claimed_by is dev_handle:
                return
            if self._kernel_driver or self._claimed_by is not None:
                raise _error("busy")
            self._claimed_by = dev_handle

    def release_interface(self, dev_handle: _Handle, intf: int) -> None:
        with self._lock():
            self._live(dev_handle)
            if intf != INTERFACE or self._claimed_by is not dev_handle:
                raise _error("not_found")
            self._claimed_by = None

    def is_kernel_driver_active(self, dev_handle: _Handle, intf: int) -> bool:
        with self._lock():
            self._live(dev_handle)
            if intf != INTERFACE:
                raise _error("not_found")
            return self._kernel_driver

    def detach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        with self._lock():
            self._live(dev_handle)
            if intf != INTERFACE or not self._kernel_driver:
                raise _error("not_found")
            self._kernel_driver = False

    def attach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        with self._lock():
            self._live(dev_handle)
            if intf != INTERFACE:
                raise _error("not_found")
            if self._claimed_by is not None or self._kernel_driver:
                raise _error("busy")
            self._kernel_driver = True

    def clear_halt(self, dev_handle: _Handle, ep: int) -> None:
        with self._lock():
            self._live(dev_handle)

    # --- transfers ---------------------------------------------------------------------

    def ctrl_transfer(  # noqa: PLR0917 (pyusb's backend interface fixes the signature)
        self,
        dev_handle: _Handle,
        bmRequestType: int,
        bRequest: int,
        wValue: int,
        wIndex: int,
        data: Any,
        timeout: int,
    ) -> int:
        with self._lock():
            self._live(dev_handle)
            if bmRequestType != _STANDARD_DEVICE_IN or bRequest != _GET_DESCRIPTOR:
                raise _error("pipe")  # the device stalls requests it does not know
            if wValue >> 8 != _DT_STRING:
                raise _error("pipe")
            descriptor = self._string_descriptor(wValue & 0xFF, wIndex)
            count = min(len(data), len(descriptor))
            data[:count] = type(data)(data.typecode, descriptor[:count])
            return count

    def _string_descriptor(self, index: int, langid: int) -> bytes:
        if index == 0:
            body = LANGID_EN_US.to_bytes(2, "little")
        else:
            strings = {1: MANUFACTURER, 2: PRODUCT, 3: self.shoe.options.serial_number}
            if index not in strings or langid != LANGID_EN_US:
                raise _error("pipe")
            body = strings[index].encode("utf-16-le")
        return bytes((2 + len(body), _DT_STRING)) + body

    def bulk_write(self, dev_handle: _Handle, ep: int, intf: int, data: Any, timeout: int) -> int:
        with self._lock():
            self._transfer_check(dev_handle, ep, EP_OUT, intf)
            self.runner.feed(bytes(data))
            return len(data)

    def bulk_read(self, dev_handle: _Handle, ep: int, intf: int, buff: Any, timeout: int) -> int:
        # libusb reads a timeout of 0 as "no limit".
        limit = timeout / 1000 if timeout > 0 else None
        with self._lock():
            self._transfer_check(dev_handle, ep, EP_IN, intf)
            if not self._packets:
                data = self.runner.wait_for_output(limit, stop=lambda: self._gone(dev_handle))
                self._transfer_check(dev_handle, ep, EP_IN, intf)
                self._queue(data)
            if not self._packets:
                raise usb.core.USBTimeoutError("Operation timed out", -7, errno.ETIMEDOUT)
            return self._fill(buff)

    def _fill(self, buff: Any) -> int:
        size = len(buff) * buff.itemsize
        got = 0
        while True:
            if not self._packets:
                self._queue(self.runner.poll())
                if not self._packets:
                    return got
            packet = self._packets[0]
            if len(packet) > size - got:
                if got:
                    return got
                raise _error("overflow")
            self._packets.popleft()
            buff[got : got + len(packet)] = type(buff)(buff.typecode, packet)
            got += len(packet)
            if len(packet) < PACKET_SIZE or got == size:
                return got

    def _queue(self, data: bytes) -> None:
        for start in range(0, len(data), PACKET_SIZE):
            self._packets.append(data[start : start + PACKET_SIZE])

    # --- internals (called with the runner's lock held) --------------------------------

    def _transfer_check(self, handle: _Handle, ep: int, expected: int, intf: int) -> None:
        self._live(handle)
        if ep != expected or intf != INTERFACE:
            raise _error("invalid")
        if self._claimed_by is not handle:
            raise _error("not_found")

    def _live(self, handle: _Handle) -> None:
        self._check_unplugged()
        if handle.closed or handle.generation != self._generation:
            raise _error("no_device")

    def _gone(self, handle: _Handle) -> bool:
        self._check_unplugged()
        return handle.generation != self._generation

    def _check_unplugged(self) -> None:
        if self.runner.shoe.take_link_drop():
            # Unplugged and plugged in again: a new enumeration, nothing of the old one.
            self._generation += 1
            self._claimed_by = None
            self._packets.clear()
            while self.runner.shoe.data_to_send():
                pass  # sent while unplugged: lost
            self._kernel_driver = self._kernel_driver_at_enumeration
            self._configuration = CONFIGURATION
