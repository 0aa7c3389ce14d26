"""Device addresses: one string names any shoe, and a registry maps it to a transport.

Accepted forms::

    /dev/ttyACM0, /dev/electronic-shoe     a serial device path (scheme "serial")
    socket://HOST:PORT, loop://, spy://..., rfc2217://..., alt://..., hwgrep://...
                                           a pyserial URL (scheme = the URL's scheme)
    usb://[VID:PID][?serial=SN]            raw USB bulk endpoints (VID:PID in hex)
    sim://[?options]                       the simulated shoe (it parses its own options)
    auto                                   discovery picks the one shoe attached

Transport classes are named by strings and imported only when an address needs them, so
that a missing optional library is a clear error when (and only when) it is used.

:func:`check_shoe_address` is what a program that drives a shoe calls first: it refuses
every mistake an address can hold (its form, a simulator option, a URL that can never
reach a shoe) at once, before the first attempt to open it, which would otherwise be
retried for ever.
"""

from __future__ import annotations

import importlib
import logging
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl

from shoe_controller.errors import BackendUnavailable, ConfigError
from shoe_controller.hal import usb_ids
from shoe_controller.hal.base import Transport

log = logging.getLogger(__name__)

_SERIAL = "shoe_controller.hal.serial_transport:SerialTransport"

#: The schemes pyserial's ``serial_for_url`` handles that make sense for a shoe.
PYSERIAL_SCHEMES: tuple[str, ...] = ("socket", "loop", "spy", "rfc2217", "alt", "hwgrep")

_registry: dict[str, str] = {
    "serial": _SERIAL,
    **dict.fromkeys(PYSERIAL_SCHEMES, _SERIAL),
    "usb": "shoe_controller.hal.usb_transport:UsbTransport",
    "sim": "shoe_controller.simulator.transport:SimTransport",
    "auto": "shoe_controller.hal.auto_transport:AutoTransport",
}

#: Registry keys that are not URL schemes: "serial" stands for a device path.
_NOT_URL = frozenset({"serial", "auto"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_HEX16 = r"(?:0[xX])?([0-9A-Fa-f]{1,4})"
_VID_PID = re.compile(rf"^{_HEX16}:{_HEX16}$")
_USB_OPTIONS = ("serial",)
_HOST_PORT_SCHEMES = frozenset({"socket", "rfc2217"})
_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^:\[\]/]+):([0-9]{1,5})$")


@dataclass(frozen=True, slots=True)
class Address:
    """A parsed device address.

    ``scheme`` is "serial" for a device path, "auto", or the URL scheme. ``path`` is the
    device path, or for a URL the part between ``://`` and ``?``; ``query`` is the raw text
    after ``?``. For ``usb://`` the vendor and product IDs (our own when the address names
    none) and the optional serial number are parsed out.
    """

    text: str
    scheme: str
    path: str = ""
    query: str = ""
    vid: int | None = None
    pid: int | None = None
    serial_number: str | None = None

    def __str__(self) -> str:
        return self.text


def known_schemes() -> list[str]:
    """Every scheme an address may use, sorted."""
    return sorted(_registry)


def register_scheme(scheme: str, target: str) -> None:
    """Map ``scheme`` to a transport class named "package.module:ClassName".

    The module is imported only when an address with this scheme is opened. Registering
    the same target again is harmless; a different target replaces the previous one.
    """
    if not re.fullmatch(r"[a-z][a-z0-9+.-]*", scheme):
        raise ValueError(f"scheme {scheme!r} must be lower case letters, digits, '+', '.', '-'")
    module, sep, name = target.partition(":")
    if not (module and sep and name):
        raise ValueError(f"transport target {target!r} must look like 'package.module:Class'")
    previous = _registry.get(scheme)
    if previous not in (None, target):
        log.info("scheme %s:// now maps to %s (was %s)", scheme, target, previous)
    _registry[scheme] = target


def parse_address(text: str) -> Address:
    """Parse a device address; a malformed or unknown one raises :class:`ConfigError`."""
    stripped = text.strip()
    if not stripped:
        raise ConfigError(
            "no device address given; pass a path such as /dev/electronic-shoe, a URL such "
            "as socket://HOST:PORT, usb://, sim://, or auto"
        )
    if stripped.lower() == "auto":
        return Address(stripped, "auto")
    match = _SCHEME.match(stripped)
    if match is None:
        if stripped.startswith(("/", "./", "../")):
            return Address(stripped, "serial", path=stripped)
        raise ConfigError(
            f"{stripped!r} is not a device address; pass a path such as /dev/ttyACM0, or a "
            f"URL with one of the schemes {_scheme_list()}, or auto"
        )
    scheme = match.group(1).lower()
    if scheme not in _registry or scheme in _NOT_URL:
        raise ConfigError(
            f"unknown device address scheme {scheme}:// in {stripped!r}; use a device path, "
            f"auto, or one of {_scheme_list()}"
        )
    path, _, query = stripped[match.end() :].partition("?")
    if scheme == "usb":
        return _parse_usb(stripped, path, query)
    if scheme in _HOST_PORT_SCHEMES and not _host_port_ok(path):
        raise ConfigError(f"{stripped!r}: expected {scheme}://HOST:PORT with a port 1..65535")
    return Address(stripped, scheme, path=path, query=query)


def _parse_usb(text: str, path: str, query: str) -> Address:
    vid, pid = usb_ids.VENDOR_ID, usb_ids.PRODUCT_ID
    if path:
        ids = _VID_PID.fullmatch(path)
        if ids is None:
            raise ConfigError(
                f"{text!r}: expected usb://VID:PID with hexadecimal IDs, e.g. "
                f"usb://{usb_ids.VENDOR_ID:04x}:{usb_ids.PRODUCT_ID:04x}"
            )
        vid, pid = int(ids.group(1), 16), int(ids.group(2), 16)
    serial_number = None
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ConfigError(f"{text!r}: malformed options after '?'") from None
    for key, value in pairs:
        if key not in _USB_OPTIONS:
            raise ConfigError(
                f"{text!r}: unknown option {key!r}; usb:// accepts only ?serial=SERIAL_NUMBER"
            )
        if not value:
            raise ConfigError(f"{text!r}: serial= needs the shoe's serial number")
        serial_number = value
    return Address(
        text, "usb", path=path, query=query, vid=vid, pid=pid, serial_number=serial_number
    )


def _host_port_ok(path: str) -> bool:
    match = _HOST_PORT.fullmatch(path)
    return match is not None and 1 <= int(match.group(2)) <= 65535


def transport_class(scheme: str) -> type[Transport]:
    """Import and return the transport class registered for ``scheme``."""
    try:
        target = _registry[scheme]
    except KeyError:
        raise ConfigError(
            f"unknown device address scheme {scheme}://; use a device path, auto, or one of "
            f"{_scheme_list()}"
        ) from None
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(
            f"the {scheme}:// transport cannot be loaded ({exc}); reinstall shoe-controller "
            f"or use another device address"
        ) from exc
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Transport)):
        raise TypeError(f"{target} registered for {scheme}:// is not a Transport class")
    return cls


def open_transport(address: str) -> Transport:
    """The transport for ``address``, not yet opened (call ``open()`` or use ``with``)."""
    parsed = parse_address(address)
    cls = transport_class(parsed.scheme)
    transport = cls.from_address(parsed.text)
    if not isinstance(transport, Transport):
        raise TypeError(f"{cls.__qualname__}.from_address returned {type(transport).__name__}")
    return transport


#: Addresses of pyserial's that are valid transports, yet behind which no shoe can ever be.
_NO_SHOE = {
    "loop": "loop:// is pyserial's loopback: it reads back what this program writes, so no "
    "shoe can ever answer on it",
}


def check_shoe_address(text: str) -> Address:
    """Parse ``text`` and build its transport without opening it, so that a malformed
    address, a bad ``sim://`` option or an address that can never reach a shoe raises
    :class:`ConfigError` now (a missing transport library: BackendUnavailable)."""
    parsed = parse_address(text)
    for scheme, why in _NO_SHOE.items():
        # spy:// and alt:// wrap another URL: look through them.
        if parsed.scheme == scheme or parsed.path.lower().startswith(f"{scheme}://"):
            raise ConfigError(
                f"{parsed.text!r}: {why}; give the shoe's address (a serial path, "
                "socket://HOST:PORT, usb://, auto), or sim:// for the simulated shoe"
            )
    open_transport(parsed.text)  # built, never opened: it holds nothing
    return parsed


def _scheme_list() -> str:
    return ", ".join(f"{name}://" for name in known_schemes() if name not in _NOT_URL)
