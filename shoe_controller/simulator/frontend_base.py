"""What the pty and TCP front ends share: one thread that serves the shoe's byte stream.

The thread waits in a selector on the front end's file descriptors and a wake-up pipe,
with a timeout up to the shoe's next deadline, so it sleeps only while the shoe has
nothing to do. An exception in the thread is logged, kept in :attr:`error`, and stops the
front end; :meth:`ThreadedFrontEnd.stop` re-raises nothing, :func:`serve` does.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import os
import selectors
import threading
import time
from types import TracebackType
from typing import Self

from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.runner import Clock, ShoeRunner
from shoe_controller.simulator.shoe import SimulatedShoe

log = logging.getLogger(__name__)

#: The longest the thread waits without looking at its stop flag.
_MAX_WAIT = 1.0


class ThreadedFrontEnd(abc.ABC):
    def __init__(
        self,
        options: SimOptions | None = None,
        *,
        shoe: SimulatedShoe | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.runner = ShoeRunner(shoe if shoe is not None else SimulatedShoe(options), clock)
        # A test that changes the shoe through the runner wakes the thread to serve it.
        self.runner.on_change = self._wake
        self.error: BaseException | None = None
        self._selector: selectors.BaseSelector | None = None
        self._wake_r = self._wake_w = -1
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def shoe(self) -> SimulatedShoe:
        return self.runner.shoe

    @property
    @abc.abstractmethod
    def address(self) -> str:
        """What a host opens to reach the shoe."""

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> str:
        """Start serving; returns :attr:`address`."""
        if self._thread is not None:
            raise RuntimeError(f"{type(self).__name__} is already started")
        self._stopping.clear()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        try:
            self._open()
        except BaseException:
            self._close_all()
            raise
        self._thread = threading.Thread(
            target=self._main, name=f"sim-{type(self).__name__}", daemon=True
        )
        self._thread.start()
        return self.address

    def stop(self) -> None:
        """Stop serving and release everything; safe to call twice or before start."""
        self._stopping.set()
        self._wake()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        self._close_all()

    def __enter__(self) -> Self:
        if self._thread is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- for subclasses ------------------------------------------------------------------

    @abc.abstractmethod
    def _open(self) -> None:
        """Create the front end's endpoints and register them with the selector."""

    @abc.abstractmethod
    def _close(self) -> None:
        """Release the endpoints; called once, whatever state they are in."""

    @abc.abstractmethod
    def _on_ready(self, key: selectors.SelectorKey) -> None:
        """A registered endpoint (other than the wake-up pipe) is readable."""

    @abc.abstractmethod
    def _send(self, data: bytes) -> None:
        """Deliver what the shoe sent to the host, or drop it when none is attached."""

    @abc.abstractmethod
    def _drop_link(self) -> None:
        """A ``disconnect`` fault: cut the host's link in a way it notices."""

    # --- the thread ----------------------------------------------------------------------

    def _main(self) -> None:
        try:
            while not self._stopping.is_set():
                self._serve_once()
        except BaseException as exc:
            self.error = exc
            log.exception("simulated shoe front end %s stopped", type(self).__name__)

    def _serve_once(self) -> None:
        while data := self.runner.poll():
            self._send(data)
        if self.runner.take_link_drop():
            self._drop_link()
        wait = self.runner.seconds_until_due()
        wait = _MAX_WAIT if wait is None else min(wait, _MAX_WAIT)
        selector = self._selector
        if selector is None:
            return
        for key, _ in selector.select(wait):
            if key.fd == self._wake_r:
                self._drain_wake()
            else:
                self._on_ready(key)

    def _wake(self) -> None:
        if self._wake_w >= 0:
            # A full pipe means a wake-up is pending already.
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"\x00")

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_r, 512):
                pass
        except BlockingIOError:
            pass

    def _close_all(self) -> None:
        try:
            self._close()
        finally:
            if self._selector is not None:
                self._selector.close()
                self._selector = None
            for fd in (self._wake_r, self._wake_w):
                if fd >= 0:
                    os.close(fd)
            self._wake_r = self._wake_w = -1
