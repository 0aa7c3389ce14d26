"""A shoe on a serial port: a device path or any pyserial URL, through ``serial_for_url``.

Line settings: 115200 baud, 8 data bits, no parity, 1 stop bit, no flow control. A USB CDC
shoe ignores the baud rate; an RS-232 shoe must be set to it.

DTR and RTS are asserted while the port is open, and dropped when it closes. On Linux the
kernel raises DTR as the port opens whatever the application asks, so no host software can
promise a device that DTR stays low; a device that resets on DTR (as many development boards
do) would reset at every connection. The shoe therefore never resets on DTR: its firmware
reads DTR as "a host is listening", the way CDC-ACM devices commonly do, and resends its
unacknowledged events when it rises.

The port is opened exclusively: an advisory ``flock`` (honoured by pyserial and other
well-behaved programs) and, on a terminal device, ``TIOCEXCL``, which makes the kernel
refuse any further open by an unprivileged process. Two readers on one port would split
the byte stream between them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import termios
import threading
from collections.abc import Iterator

import serial

from shoe_controller.errors import (
    ConfigError,
    DeviceBusy,
    DeviceNotFound,
    DevicePermissionError,
    LinkLost,
    TransportError,
)
from shoe_controller.hal import advice
from shoe_controller.hal.addresses import PYSERIAL_SCHEMES, parse_address
from shoe_controller.hal.base import Transport

log = logging.getLogger(__name__)

DEFAULT_BAUDRATE = 115200
#: How long a write may wait for the device to take the bytes before the link counts as lost.
DEFAULT_WRITE_TIMEOUT = 2.0

_NOT_FOUND = frozenset({errno.ENOENT, errno.ENODEV, errno.ENXIO})
_PERMISSION = frozenset({errno.EACCES, errno.EPERM})
# flock reports a lock held elsewhere as EWOULDBLOCK (== EAGAIN); TIOCEXCL gives EBUSY.
_BUSY = frozenset({errno.EBUSY, errno.EAGAIN, errno.EWOULDBLOCK})


class SerialTransport(Transport):
    """A serial port or pyserial URL, opened exclusively, with the line settings above.

    ``url`` is what ``serial.serial_for_url`` takes: a device path or a URL.
    """

    def __init__(
        self,
        url: str,
        *,
        baudrate: int = DEFAULT_BAUDRATE,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        address: str | None = None,
    ) -> None:
        self.address = address if address is not None else url
        self.url = url
        self.baudrate = baudrate
        self.write_timeout = write_timeout
        self._port: serial.SerialBase | None = None
        self._timeout: float | None = None
        self._tiocexcl = False
        # Readers and writers hold these while using the port; close() takes both so that
        # it never pulls the port from under a read or write in another thread.
        self._read_lock = threading.Lock()
        self._write_lock = threading.Lock()

    @classmethod
    def from_address(cls, address: str) -> SerialTransport:
        parsed = parse_address(address)
        if parsed.scheme == "serial":
            return cls(parsed.path, address=parsed.text)
        if parsed.scheme in PYSERIAL_SCHEMES:
            return cls(parsed.text, address=parsed.text)
        raise ConfigError(f"{address!r} is not a serial port path or pyserial URL")

    @property
    def is_open(self) -> bool:
        return self._port is not None

    @property
    def _node(self) -> str | None:
        """The device node, when the address is a path (for the messages' fuser/lsof)."""
        return None if "://" in self.url else self.url

    def open(self) -> None:
        if self._port is not None:
            raise RuntimeError(f"{self.address} is already open")
        try:
            port = serial.serial_for_url(self.url, do_not_open=True)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise self._open_error(exc) from exc
        try:
            self._configure(port)
            port.open()
            self._lock_terminal(port)
        except (serial.SerialException, OSError, ValueError, KeyError, TypeError) as exc:
            # KeyError and TypeError: pyserial 3.5's URL handlers fail so while reporting a
            # bad option (the ValueError that says which is in the exception's context).
            _close_quietly(port)
            raise self._open_error(exc) from exc
        except BaseException:
            _close_quietly(port)
            raise
        self._timeout = port.timeout
        self._port = port
        log.debug("opened %s", self.address)

    def _configure(self, port: serial.SerialBase) -> None:
        port.baudrate = self.baudrate
        port.bytesize = serial.EIGHTBITS
        port.parity = serial.PARITY_NONE
        port.stopbits = serial.STOPBITS_ONE
        port.xonxoff = False
        port.rtscts = False
        port.dsrdtr = False
        port.timeout = 0
        port.write_timeout = self.write_timeout
        # pyserial applies these right after the open() system call.
        port.dtr = True
        port.rts = True
        # URL handlers (socket, loop, rfc2217) have no device node to lock.
        if isinstance(port, serial.Serial):
            port.exclusive = True

    def _lock_terminal(self, port: serial.SerialBase) -> None:
        if not isinstance(port, serial.Serial):
            return
        try:
            fcntl.ioctl(port.fileno(), termios.TIOCEXCL)
        except OSError as exc:
            # Not a terminal (ENOTTY); the flock still keeps cooperative programs out.
            log.debug("TIOCEXCL not applied to %s: %s", self.address, exc)
        else:
            self._tiocexcl = True

    def _open_error(self, exc: BaseException) -> TransportError | ConfigError:
        what = f"serial port {self.address}"
        code = _errno_of(exc)
        if code in _NOT_FOUND:
            return DeviceNotFound(advice.not_found(what))
        if code in _PERMISSION:
            return DevicePermissionError(advice.permission_denied(what))
        if code in _BUSY:
            return DeviceBusy(advice.busy(what, self._node))
        if code == errno.ENOTTY:
            return ConfigError(
                f"{self.address} is not a serial port (no terminal settings can be applied): "
                "give the shoe's device node, e.g. /dev/electronic-shoe, or a pyserial URL"
            )
        if code == errno.ECONNREFUSED:
            return DeviceNotFound(
                f"nothing accepts connections at {self.address}: start the shoe or the "
                f"simulator serving that address, or check the host and port"
            )
        invalid = _in_chain(exc, ValueError)
        if invalid is not None:
            return ConfigError(f"{self.address}: invalid URL or option ({invalid})")
        if "no ports found" in str(exc):  # hwgrep:// matched nothing
            return DeviceNotFound(advice.not_found(what))
        return TransportError(f"cannot open {what}: {_reason(exc)}")

    def read(self, timeout: float) -> bytes:
        if timeout < 0:
            raise ValueError(f"read timeout must be >= 0, not {timeout}")
        port = self._require_open()
        with self._read_lock:
            try:
                if self._timeout != timeout:
                    port.timeout = timeout
                    self._timeout = timeout
                data = bytes(port.read(1))
                if data:
                    waiting = port.in_waiting
                    if waiting:
                        data += port.read(waiting)
            except (serial.SerialException, OSError) as exc:
                if self._port is not port:
                    return b""  # closed by another thread while we waited
                raise self._lost(exc) from exc
            return data

    def write(self, data: bytes) -> None:
        port = self._require_open()
        with self._write_lock:
            try:
                port.write(data)
            except serial.SerialTimeoutException as exc:
                raise LinkLost(
                    f"link to {self.address} lost: the device took no data for "
                    f"{self.write_timeout:g} s; check that the shoe is powered and connected"
                ) from exc
            except (serial.SerialException, OSError) as exc:
                if self._port is not port:
                    raise TransportError(f"{self.address} was closed during a write") from exc
                raise self._lost(exc) from exc

    def _lost(self, exc: BaseException) -> LinkLost:
        return LinkLost(
            f"link to {self.address} lost ({_reason(exc)}): check the cable and the "
            f"shoe's power; the controller reconnects when the device is back"
        )

    def _require_open(self) -> serial.SerialBase:
        port = self._port
        if port is None:
            raise TransportError(f"{self.address} is not open")
        return port

    def interrupt(self) -> None:
        port = self._port
        if port is not None:
            # pyserial's POSIX ports wake their select(); URL handlers without it time out.
            with contextlib.suppress(Exception):
                getattr(port, "cancel_read", lambda: None)()

    @property
    def interruptible(self) -> bool:
        # Device nodes (a select() on a wake-up pipe), loop:// and spy:// can cancel a
        # read; socket:// and rfc2217:// cannot.
        return hasattr(self._port, "cancel_read")

    def close(self) -> None:
        port = self._port
        if port is None:
            return
        self._port = None
        # Wake a reader or writer blocked in select() so it lets go of its lock promptly.
        for cancel in ("cancel_read", "cancel_write"):
            with contextlib.suppress(Exception):
                getattr(port, cancel, lambda: None)()
        with self._read_lock, self._write_lock:
            if self._tiocexcl:
                with contextlib.suppress(Exception):
                    fcntl.ioctl(port.fileno(), termios.TIOCNXCL)
                self._tiocexcl = False
            _close_quietly(port)
        log.debug("closed %s", self.address)

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"<SerialTransport {self.address!r} {state}>"


def _close_quietly(port: serial.SerialBase) -> None:
    # A port whose device vanished can fail to close; it is gone either way.
    try:
        port.close()
    except Exception as exc:
        log.debug("closing %s: %s", port.portstr, exc)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, then its cause or context, and so on.

    pyserial often wraps the error that says what happened in a SerialException that keeps
    only its text, raised inside the handler (so the original is its context).
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _errno_of(exc: BaseException) -> int | None:
    for link in _chain(exc):
        code = getattr(link, "errno", None)
        if isinstance(code, int):
            return code
        # termios.error carries its errno only as its first argument.
        if isinstance(link, termios.error) and link.args and isinstance(link.args[0], int):
            return int(link.args[0])
    return None


def _in_chain(exc: BaseException, kind: type[ValueError]) -> ValueError | None:
    for link in _chain(exc):
        if isinstance(link, kind):
            return link
    return None


def _reason(exc: BaseException) -> str:
    return str(exc).strip() or type(exc).__name__
