"""Requests other threads leave for the link's reader thread, and how they wake it.

The reader thread alone touches the link core. Another thread that needs it (to send a
command, acknowledge events, verify the shoe, read the counters) posts a request here; the
reader runs the requests between two reads. A reader blocked in a read is interrupted
(``Transport.interrupt()``) so that it runs them at once; a reader waiting between two
connections is woken. Only a read that is blocked, or about to block, is interrupted: a
busy reader finds the request before its next read.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from functools import partial

from shoe_controller.hal.base import Transport

Request = Callable[[], None]


class Inbox:
    """The reader thread's queue of requests (see the module documentation)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: deque[Request] = deque()
        self._open = False
        self._wake = threading.Event()
        self._transport: Transport | None = None
        self._waiting = False

    # -- any thread ------------------------------------------------------------------

    def post(self, request: Request, handoff: float = 0.0) -> bool:
        """Queue ``request`` for the reader and wake it; False when no reader takes
        requests (before :meth:`open`, after :meth:`close`).

        With ``handoff``, wait up to that many seconds for the reader to run it: the
        waiting thread lets go of the interpreter, so that the reader runs at once instead
        of when the poster next blocks. Never hand off from the reader's own thread.
        """
        done = threading.Event() if handoff > 0 else None
        if done is not None:
            request = partial(_then, request, done.set)
        with self._lock:
            if not self._open:
                return False
            self._requests.append(request)
        if self._waiting:
            self.interrupt()
        if done is not None:
            done.wait(handoff)
        return True

    def interrupt(self) -> None:
        """Wake the reader: end its read or its pause early."""
        self._wake.set()
        transport = self._transport
        if transport is not None:
            transport.interrupt()

    # -- the reader thread -----------------------------------------------------------

    def open(self) -> None:
        """The reader runs: take requests from now on."""
        with self._lock:
            self._open = True

    def close(self) -> None:
        """The reader ends: take no more requests (run those queued with :meth:`run`)."""
        with self._lock:
            self._open = False

    def attach(self, transport: Transport | None) -> None:
        """The transport the reader reads now (None between connections)."""
        self._transport = transport

    def run(self) -> None:
        """Run the queued requests, oldest first."""
        while self._requests:
            with self._lock:
                request = self._requests.popleft()
            request()

    def read(self, transport: Transport, timeout: float) -> bytes:
        """``transport.read(timeout)``, unless a request is waiting (then b"" at once)."""
        # Set before the last look at the queue: a request posted after that interrupts.
        self._waiting = True
        try:
            if self._requests:
                return b""
            return transport.read(timeout)
        finally:
            self._waiting = False

    def pause(self, seconds: float) -> None:
        """Wait up to ``seconds``, less when a request or an interrupt comes."""
        self._waiting = True
        try:
            if not self._requests:
                self._wake.wait(seconds)
        finally:
            self._waiting = False
        self._wake.clear()


def _then(request: Request, after: Callable[[], None]) -> None:
    try:
        request()
    finally:
        after()
