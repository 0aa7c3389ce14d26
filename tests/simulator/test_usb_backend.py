"""The pyusb backend: pyusb's own code (usb.core, usb.util) against the simulated shoe."""

from __future__ import annotations

import array
import errno
import threading
import time

import pytest
import usb.core
import usb.util

from firmware_protocol import (
    SUPPORTED_VERSIONS,
    Ack,
    GateMode,
    GetIdentity,
    Hello,
    Packet,
    Ping,
    SetGate,
    StreamDecoder,
    encode_frame,
)
from shoe_controller.hal import usb_ids
from shoe_controller.simulator import FaultPlan, SimOptions
from shoe_controller.simulator.usb_backend import EP_IN, EP_OUT, PACKET_SIZE, SimUsbBackend


def find(backend: SimUsbBackend) -> usb.core.Device:
    device = usb.core.find(backend=backend, idVendor=usb_ids.VENDOR_ID)
    assert device is not None
    return device


def claim(device: usb.core.Device) -> None:
    if device.is_kernel_driver_active(0):
        device.detach_kernel_driver(0)
    usb.util.claim_interface(device, 0)


def decode(data: bytes) -> list[Packet]:
    decoder = StreamDecoder()
    decoder.receive_data(data)
    return list(decoder)


def test_the_device_enumerates_as_our_shoe() -> None:
    backend = SimUsbBackend(SimOptions(serial_number="USB-7"))
    device = find(backend)
    assert (device.idVendor, device.idProduct) == (usb_ids.VENDOR_ID, usb_ids.PRODUCT_ID)
    assert device.serial_number == "USB-7"
    assert device.product == "Electronic dealing shoe (simulated)"
    assert device.langids == (0x0409,)
    assert usb.core.find(backend=backend, idVendor=0x1234) is None
    interface = device.get_active_configuration()[(0, 0)]
    assert interface.bInterfaceClass == usb_ids.VENDOR_INTERFACE_CLASS
    endpoints = {(e.bEndpointAddress, e.wMaxPacketSize) for e in interface}
    assert endpoints == {(EP_IN, PACKET_SIZE), (EP_OUT, PACKET_SIZE)}
    assert all(
        usb.util.endpoint_type(e.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK for e in interface
    )
    usb.util.dispose_resources(device)
    assert backend.open_handles == 0


def test_claiming_needs_the_kernel_driver_detached() -> None:
    backend = SimUsbBackend()
    device = find(backend)
    with pytest.raises(usb.core.USBError) as busy:
        usb.util.claim_interface(device, 0)
    assert busy.value.errno == errno.EBUSY
    claim(device)
    assert backend.claimed and not backend.kernel_driver_active
    usb.util.release_interface(device, 0)
    device.attach_kernel_driver(0)
    assert backend.kernel_driver_active
    usb.util.dispose_resources(device)


def test_one_handle_at_a_time() -> None:
    backend = SimUsbBackend(kernel_driver_active=False)
    first, second = find(backend), find(backend)
    claim(first)
    with pytest.raises(usb.core.USBError) as busy:
        claim(second)
    assert busy.value.errno == errno.EBUSY
    usb.util.dispose_resources(first)
    claim(second)
    usb.util.dispose_resources(second)


def test_permission_denied_is_eacces() -> None:
    device = find(SimUsbBackend(permission_denied=True))
    with pytest.raises(usb.core.USBError) as denied:
        claim(device)
    assert denied.value.errno == errno.EACCES


def test_bulk_transfers_reach_the_shoe_in_packets() -> None:
    backend = SimUsbBackend(kernel_driver_active=False)
    device = find(backend)
    claim(device)
    device.write(EP_OUT, encode_frame(GetIdentity(SUPPORTED_VERSIONS), 1))
    data = bytearray()
    while True:
        chunk = device.read(EP_IN, 512, 100)
        data += chunk
        if len(chunk) % PACKET_SIZE:
            break  # a short packet ends the transfer
    hellos = [p for p in decode(bytes(data)) if isinstance(p.message, Hello)]
    assert [p.seq for p in hellos] == [0, 1]  # power-up, then the answer
    usb.util.dispose_resources(device)


def test_a_buffer_smaller_than_a_packet_overflows() -> None:
    device = find(SimUsbBackend(kernel_driver_active=False))
    claim(device)
    with pytest.raises(usb.core.USBError) as overflow:
        device.read(EP_IN, 10, 100)  # the Hello does not fit
    assert overflow.value.errno == errno.EOVERFLOW
    usb.util.dispose_resources(device)


def test_a_read_with_nothing_to_send_times_out_with_errno_110() -> None:
    device = find(SimUsbBackend(SimOptions(heartbeat=60), kernel_driver_active=False))
    claim(device)
    while True:
        try:
            device.read(EP_IN, 512, 20)
        except usb.core.USBTimeoutError as exc:
            assert exc.errno == errno.ETIMEDOUT == 110
            break
    usb.util.dispose_resources(device)


def test_a_disconnect_unplugs_the_device_and_it_comes_back() -> None:
    options = SimOptions(faults=FaultPlan.parse("disconnect@2"))
    backend = SimUsbBackend(options)
    device = find(backend)
    old_address = device.address
    claim(device)
    device.write(EP_OUT, encode_frame(SetGate(GateMode.DEAL, 5), 2))
    with pytest.raises(usb.core.USBError) as gone:
        while True:
            device.read(EP_IN, 512, 100)
    assert gone.value.errno == errno.ENODEV
    usb.util.dispose_resources(device)
    again = find(backend)
    assert again.address != old_address
    assert backend.kernel_driver_active  # the kernel bound its driver to the new device
    claim(again)
    again.write(EP_OUT, encode_frame(GetIdentity(SUPPORTED_VERSIONS), 1))
    data = bytes(again.read(EP_IN, 4096, 100))
    resent = [p.seq for p in decode(data) if not isinstance(p.message, Hello)]
    assert resent[:6] == [1, 2, 3, 4, 5, 6]  # the same shoe, every event still held
    usb.util.dispose_resources(again)
    assert backend.open_handles == 0


def test_unsupported_requests_stall() -> None:
    device = find(SimUsbBackend())
    with pytest.raises(usb.core.USBError) as stall:
        device.ctrl_transfer(0xC0, 0x01, 0, 0, 8)  # a vendor request it does not know
    assert stall.value.errno == errno.EPIPE
    buffer = array.array("B", bytes(4))
    assert device.ctrl_transfer(0x80, 0x06, 0x0300, 0, buffer) == 4
    assert bytes(buffer) == b"\x04\x03\x09\x04"
    usb.util.dispose_resources(device)


def test_a_write_from_another_thread_ends_a_waiting_read() -> None:
    device = find(SimUsbBackend(SimOptions(heartbeat=60), kernel_driver_active=False))
    claim(device)
    with pytest.raises(usb.core.USBTimeoutError):
        while True:
            device.read(EP_IN, 512, 20)  # drain what the shoe said at power-up
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(bytes(device.read(EP_IN, 512, 10_000))))
    started = time.monotonic()
    reader.start()
    device.write(EP_OUT, encode_frame(Ping(), 9))
    reader.join(10)
    assert time.monotonic() - started < 5
    assert [(p.message, p.seq) for p in decode(got[0])] == [(Ack(), 9)]
    usb.util.dispose_resources(device)
