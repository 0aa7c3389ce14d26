"""Hardware abstraction: transports that move bytes to and from a shoe, and discovery.

Public names: :class:`Transport` (the interface), its implementations
(:class:`SerialTransport` for a serial port or a pyserial URL, :class:`UsbTransport` for the
shoe's USB interface, :class:`AutoTransport` for the first shoe found),
:func:`open_transport` and :func:`parse_address` for an address a person typed, and
discovery (:func:`list_candidates`, :class:`Candidate`).
"""

from shoe_controller.hal.addresses import Address, open_transport, parse_address
from shoe_controller.hal.auto_transport import AutoTransport
from shoe_controller.hal.base import Transport
from shoe_controller.hal.discovery import Candidate, list_candidates
from shoe_controller.hal.serial_transport import SerialTransport
from shoe_controller.hal.usb_transport import UsbTransport

__all__ = [
    "Address",
    "AutoTransport",
    "Candidate",
    "SerialTransport",
    "Transport",
    "UsbTransport",
    "list_candidates",
    "open_transport",
    "parse_address",
]
