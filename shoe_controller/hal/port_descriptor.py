"""Reads and writes on an open serial port's own descriptor, for :class:`SerialTransport`.

pyserial opens the port and sets the line; the link's bytes then go through the port's
descriptor directly. pyserial's own ``read`` reconfigures the terminal (``flock``,
``tcgetattr``, ``tcsetattr``) whenever its timeout changes, which the link's reader does at
nearly every read (it waits up to its next deadline), and reads one byte before asking how
many wait; its ``write`` waits in a ``select`` after every write once a write timeout is
set. That is about ten system calls per frame on the path from a card to its
acknowledgement, each one a moment where another thread takes the interpreter. Here a read
is one ``select`` and one ``read``, a write one ``write`` unless the device's buffer is
full.

Two pipes wake a waiting thread: :meth:`PortDescriptor.interrupt` ends the current (or
next) read, and :meth:`PortDescriptor.shut` ends every wait for good, before the port is
closed under it.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time

#: Most bytes taken in one read: more than the shoe sends in a second.
READ_SIZE = 4096


class PortShut(Exception):
    """:meth:`PortDescriptor.shut` was called while this thread waited."""


class NoData(OSError):
    """The device reports bytes to read and then returns none: it is gone (a hung-up
    terminal, a pseudo-terminal whose other side closed)."""


class PortDescriptor:
    """Blocking-with-timeout I/O on the non-blocking descriptor ``fd`` (not owned here:
    the port that opened it closes it, after :meth:`shut` and :meth:`close`)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._wake_r, self._wake_w = os.pipe()
        self._shut_r, self._shut_w = os.pipe()
        # Other threads interrupt or shut at any time: never write to a pipe end that
        # close() released (its number may belong to another file by then).
        self._pipes_lock = threading.Lock()
        for pipe_end in (self._wake_r, self._wake_w, self._shut_r, self._shut_w):
            os.set_blocking(pipe_end, False)

    def read(self, timeout: float) -> bytes:
        """What arrived within ``timeout`` seconds (b"" when nothing did, or when woken).
        Raises NoData or the device's OSError; PortShut once :meth:`shut` was called."""
        ready, _, _ = select.select([self.fd, self._wake_r, self._shut_r], [], [], timeout)
        if not ready:
            return b""
        if self._shut_r in ready:
            raise PortShut
        if self._wake_r in ready:
            self._drain_wake()
            if self.fd not in ready:
                return b""
        try:
            data = os.read(self.fd, READ_SIZE)
        except BlockingIOError:
            return b""  # another reader took it: nothing arrived for this one
        if not data:
            raise NoData("device reports readiness to read but returned no data")
        return data

    def write(self, data: bytes, timeout: float) -> None:
        """Write all of ``data``, waiting up to ``timeout`` seconds in all for the device
        to take it. Raises TimeoutError, the device's OSError, or PortShut."""
        view = memoryview(data)
        deadline: float | None = None
        while True:
            with contextlib.suppress(BlockingIOError):  # the device's buffer is full
                view = view[os.write(self.fd, view) :]
            if not view:
                return
            now = time.monotonic()
            if deadline is None:
                deadline = now + timeout
            if now >= deadline:
                raise TimeoutError
            shut, _, _ = select.select([self._shut_r], [self.fd], [], deadline - now)
            if shut:
                raise PortShut

    def interrupt(self) -> None:
        """End the read that waits now, or the next one."""
        with self._pipes_lock, contextlib.suppress(OSError):
            if self._wake_w >= 0:  # a full pipe: a wake-up is pending already
                os.write(self._wake_w, b"\x00")

    def shut(self) -> None:
        """End every wait, now and later: the port is about to close."""
        with self._pipes_lock, contextlib.suppress(OSError):
            if self._shut_w >= 0:
                os.write(self._shut_w, b"\x00")

    def close(self) -> None:
        """Release the pipes; call with no thread inside :meth:`read` or :meth:`write`."""
        with self._pipes_lock:
            for pipe_end in (self._wake_r, self._wake_w, self._shut_r, self._shut_w):
                if pipe_end >= 0:
                    os.close(pipe_end)
            self._wake_r = self._wake_w = self._shut_r = self._shut_w = -1

    def _drain_wake(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 512):
                pass
