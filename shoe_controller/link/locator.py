"""Where to open the shoe at each (re)connection.

A fixed address (a device path, a pyserial URL, ``sim://``) is opened again as it is. For
``auto`` and an unpinned ``usb://``, once a shoe has answered, reconnection looks for that
same shoe, by VID:PID and serial number, so that a reconnect never silently moves to
another shoe plugged in meanwhile. A shoe's USB serial number string is its identity's
serial number.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from shoe_controller.errors import DeviceNotFound
from shoe_controller.hal import discovery
from shoe_controller.hal.addresses import open_transport, parse_address
from shoe_controller.hal.auto_transport import AutoTransport
from shoe_controller.hal.base import Transport
from shoe_controller.link.identity import ShoeIdentity

log = logging.getLogger(__name__)

Opener = Callable[[str], Transport]
CandidateLister = Callable[[], list[discovery.Candidate]]


@dataclass(frozen=True, slots=True)
class _Known:
    vid: int
    pid: int
    serial_number: str


class ShoeLocator:
    """Makes the transport for the next connection attempt (unopened).

    ``address`` is validated at once (ConfigError when malformed). ``opener`` turns an
    address into a transport and ``candidates`` lists attached devices; both default to
    the hardware abstraction's own.
    """

    def __init__(
        self,
        address: str,
        opener: Opener = open_transport,
        candidates: CandidateLister = discovery.list_candidates,
    ) -> None:
        self._address = parse_address(address)
        self._opener = opener
        self._candidates = candidates
        self._known: _Known | None = None

    @property
    def address(self) -> str:
        return self._address.text

    def transport(self) -> Transport:
        """The transport to open now. Raises DeviceNotFound when the shoe met before is not
        attached (again)."""
        known = self._known
        scheme = self._address.scheme
        if known is None or scheme not in ("auto", "usb") or self._address.serial_number:
            return self._opener(self._address.text)
        if scheme == "usb":
            from shoe_controller.hal.usb_transport import usb_address  # noqa: PLC0415

            return self._opener(usb_address(known.vid, known.pid, known.serial_number))
        for candidate in self._candidates():
            if (candidate.vid, candidate.pid, candidate.serial_number) == (
                known.vid,
                known.pid,
                known.serial_number,
            ):
                return self._opener(candidate.address)
        raise DeviceNotFound(
            f"the shoe with serial number {known.serial_number} ({known.vid:04x}:"
            f"{known.pid:04x}) is not attached: check its cable and power; the controller "
            "keeps looking for it"
        )

    def found(self, transport: Transport, identity: ShoeIdentity) -> None:
        """Remember the shoe that answered on ``transport``, to find it again."""
        scheme = self._address.scheme
        if scheme == "usb" and self._address.vid is not None and self._address.pid is not None:
            self._remember(self._address.vid, self._address.pid, identity.serial_number)
        elif scheme == "auto" and isinstance(transport, AutoTransport):
            chosen = transport.chosen
            if chosen is None or chosen.vid is None or chosen.pid is None:
                return  # not a USB device (an RS-232 shoe by its symlink): look up afresh
            self._remember(chosen.vid, chosen.pid, chosen.serial_number or identity.serial_number)

    def _remember(self, vid: int, pid: int, serial_number: str) -> None:
        known = _Known(vid, pid, serial_number)
        if known != self._known:
            log.info(
                "reconnections to %s look for %04x:%04x serial %s",
                self._address.text,
                vid,
                pid,
                serial_number,
            )
        self._known = known
