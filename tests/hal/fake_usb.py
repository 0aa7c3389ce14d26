"""A small pyusb backend for the transport tests: devices with one vendor interface.

pyusb's own code (``usb.core.find``, ``Device``, descriptors, string descriptors, claiming,
endpoint reads and writes) runs on top of it, as it does on libusb. Bulk IN data is queued
as USB packets; a read completes on a short packet or a full buffer, and a packet that does
not fit the buffer overflows, as on real hardware. Errors are injected by operation name.
"""

from __future__ import annotations

import errno
from collections import deque
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import usb.backend
import usb.core
import usb.util

from shoe_controller.hal import usb_ids

EP_OUT = 0x01
EP_IN = 0x81
_STRING = usb.util.DESC_TYPE_STRING
LIBUSB_CODES = {
    errno.EACCES: -3,
    errno.ENODEV: -4,
    errno.ENOENT: -5,
    errno.EBUSY: -6,
    errno.ETIMEDOUT: -7,
    errno.EOVERFLOW: -8,
    errno.EPIPE: -9,
    errno.EIO: -1,
}


def usb_error(code: int) -> usb.core.USBError:
    """The error libusb's pyusb backend raises for ``code`` (an errno)."""
    cls = usb.core.USBTimeoutError if code == errno.ETIMEDOUT else usb.core.USBError
    return cls(f"[Errno {code}] {errno.errorcode[code]}", LIBUSB_CODES.get(code), code)


@dataclass
class FakeDevice:
    vid: int = usb_ids.VENDOR_ID
    pid: int = usb_ids.PRODUCT_ID
    serial: str | None = "SHOE-1"
    product: str | None = "Electronic shoe"
    bus: int = 1
    address: int = 7
    port_numbers: tuple[int, ...] = (1, 2)
    max_packet: int = 64
    interface_class: int = usb_ids.VENDOR_INTERFACE_CLASS
    interface_number: int = 0
    endpoints: tuple[int, ...] = (EP_OUT, EP_IN)
    configuration: int = 1  # 0 = unconfigured
    kernel_driver: bool = False
    #: operation name -> errno raised by it (open, claim, release, bulk_read, bulk_write,
    #: get_configuration, strings, attach, detach)
    fail: dict[str, int] = field(default_factory=dict)
    inbound: deque[bytes] = field(default_factory=deque)
    received: bytearray = field(default_factory=bytearray)
    read_sizes: list[int] = field(default_factory=list)
    read_timeouts: list[int] = field(default_factory=list)
    #: bytes the device takes per bulk write; None = all
    accept: int | None = None
    claimed: set[int] = field(default_factory=set)
    open_handles: int = 0
    detached: bool = False
    reattached: bool = False

    def send(self, data: bytes) -> None:
        """Queue ``data`` from the device to the host, cut into packets."""
        for start in range(0, len(data), self.max_packet):
            self.inbound.append(data[start : start + self.max_packet])

    def _check(self, operation: str) -> None:
        code = self.fail.get(operation)
        if code is not None:
            raise usb_error(code)


class FakeBackend(usb.backend.IBackend):  # type: ignore[misc]
    def __init__(self, *devices: FakeDevice) -> None:
        super().__init__()
        self.devices = list(devices)

    # --- enumeration and descriptors -----------------------------------------------------
    def enumerate_devices(self) -> Any:
        return iter(self.devices)

    def get_parent(self, dev: FakeDevice) -> None:
        return None

    def get_device_descriptor(self, dev: FakeDevice) -> Any:
        return SimpleNamespace(
            bLength=18,
            bDescriptorType=usb.util.DESC_TYPE_DEVICE,
            bcdUSB=0x0200,
            bDeviceClass=0xEF,
            bDeviceSubClass=2,
            bDeviceProtocol=1,
            bMaxPacketSize0=64,
            idVendor=dev.vid,
            idProduct=dev.pid,
            bcdDevice=0x0100,
            iManufacturer=0,
            iProduct=2 if dev.product is not None else 0,
            iSerialNumber=3 if dev.serial is not None else 0,
            bNumConfigurations=1,
            address=dev.address,
            bus=dev.bus,
            port_number=dev.port_numbers[-1] if dev.port_numbers else None,
            port_numbers=dev.port_numbers,
            speed=usb.util.SPEED_FULL,
        )

    def get_configuration_descriptor(self, dev: FakeDevice, config: int) -> Any:
        if config != 0:
            raise IndexError(config)
        return SimpleNamespace(
            bLength=9,
            bDescriptorType=usb.util.DESC_TYPE_CONFIG,
            wTotalLength=9 + 9 + 7 * len(dev.endpoints),
            bNumInterfaces=1,
            bConfigurationValue=1,
            iConfiguration=0,
            bmAttributes=0x80,
            bMaxPower=50,
            extra_descriptors=[],
        )

    def get_interface_descriptor(self, dev: FakeDevice, intf: int, alt: int, config: int) -> Any:
        if (intf, alt, config) != (0, 0, 0):
            raise IndexError((intf, alt, config))
        return SimpleNamespace(
            bLength=9,
            bDescriptorType=usb.util.DESC_TYPE_INTERFACE,
            bInterfaceNumber=dev.interface_number,
            bAlternateSetting=0,
            bNumEndpoints=len(dev.endpoints),
            bInterfaceClass=dev.interface_class,
            bInterfaceSubClass=0,
            bInterfaceProtocol=0,
            iInterface=0,
            extra_descriptors=[],
        )

    def get_endpoint_descriptor(
        self, dev: FakeDevice, ep: int, intf: int, alt: int, config: int
    ) -> Any:
        if (intf, alt, config) != (0, 0, 0) or ep >= len(dev.endpoints):
            raise IndexError((ep, intf, alt, config))
        return SimpleNamespace(
            bLength=7,
            bDescriptorType=usb.util.DESC_TYPE_ENDPOINT,
            bEndpointAddress=dev.endpoints[ep],
            bmAttributes=usb.util.ENDPOINT_TYPE_BULK,
            wMaxPacketSize=dev.max_packet,
            bInterval=0,
            bRefresh=0,
            bSynchAddress=0,
            extra_descriptors=[],
        )

    # --- handles, configuration, interfaces ---------------------------------------------
    def open_device(self, dev: FakeDevice) -> FakeDevice:
        dev._check("open")
        dev.open_handles += 1
        return dev

    def close_device(self, dev_handle: FakeDevice) -> None:
        dev_handle.open_handles -= 1

    def get_configuration(self, dev_handle: FakeDevice) -> int:
        dev_handle._check("get_configuration")
        return dev_handle.configuration

    def set_configuration(self, dev_handle: FakeDevice, config_value: int) -> None:
        dev_handle.configuration = config_value

    def claim_interface(self, dev_handle: FakeDevice, intf: int) -> None:
        dev_handle._check("claim")
        if dev_handle.kernel_driver:
            raise usb_error(errno.EBUSY)
        dev_handle.claimed.add(intf)

    def release_interface(self, dev_handle: FakeDevice, intf: int) -> None:
        dev_handle._check("release")
        dev_handle.claimed.discard(intf)

    def is_kernel_driver_active(self, dev_handle: FakeDevice, intf: int) -> bool:
        return dev_handle.kernel_driver

    def detach_kernel_driver(self, dev_handle: FakeDevice, intf: int) -> None:
        dev_handle._check("detach")
        dev_handle.kernel_driver = False
        dev_handle.detached = True

    def attach_kernel_driver(self, dev_handle: FakeDevice, intf: int) -> None:
        dev_handle._check("attach")
        dev_handle.kernel_driver = True
        dev_handle.reattached = True

    # --- transfers -----------------------------------------------------------------------
    def ctrl_transfer(  # noqa: PLR0917 (pyusb's backend signature)
        self,
        dev_handle: FakeDevice,
        bmRequestType: int,
        bRequest: int,
        wValue: int,
        wIndex: int,
        data: Any,
        timeout: int,
    ) -> int:
        dev_handle._check("strings")
        if bRequest != 0x06 or wValue >> 8 != _STRING:
            raise usb_error(errno.EPIPE)
        index = wValue & 0xFF
        if index == 0:
            payload = (0x0409).to_bytes(2, "little")
        else:
            text = {2: dev_handle.product, 3: dev_handle.serial}.get(index)
            if text is None:
                raise usb_error(errno.EPIPE)
            payload = text.encode("utf-16-le")
        descriptor = bytes([2 + len(payload), _STRING]) + payload
        count = min(len(data), len(descriptor))
        data[:count] = type(data)("B", descriptor[:count])
        return count

    def bulk_write(
        self, dev_handle: FakeDevice, ep: int, intf: int, data: Any, timeout: int
    ) -> int:
        dev_handle._check("bulk_write")
        if intf not in dev_handle.claimed or ep not in dev_handle.endpoints or ep & 0x80:
            raise usb_error(errno.EIO)
        count = len(data) if dev_handle.accept is None else min(dev_handle.accept, len(data))
        if count == 0:
            raise usb_error(errno.ETIMEDOUT)
        dev_handle.received += bytes(data[:count])
        return count

    def bulk_read(self, dev_handle: FakeDevice, ep: int, intf: int, buff: Any, timeout: int) -> int:
        dev_handle._check("bulk_read")
        if intf not in dev_handle.claimed or ep not in dev_handle.endpoints or not ep & 0x80:
            raise usb_error(errno.EIO)
        dev_handle.read_sizes.append(len(buff))
        dev_handle.read_timeouts.append(timeout)
        if not dev_handle.inbound:
            raise usb_error(errno.ETIMEDOUT)
        filled = 0
        while dev_handle.inbound:
            packet = dev_handle.inbound[0]
            if filled + len(packet) > len(buff):
                if filled:
                    break
                raise usb_error(errno.EOVERFLOW)
            dev_handle.inbound.popleft()
            buff[filled : filled + len(packet)] = type(buff)("B", packet)
            filled += len(packet)
            if len(packet) < dev_handle.max_packet:
                break  # a short packet ends the transfer
        return filled
