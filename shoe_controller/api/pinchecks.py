"""PIN checks in a process of their own.

argon2id is slow and memory-hard on purpose: a check takes tens of milliseconds and tens
of megabytes, mapped, touched and unmapped each time. In the service's own process every
check weighs on the table's threads (the same address space: page faults and the
allocator), and a flood of sign-ins would make the cards wait. So the service's API checks
PINs in a child process that does nothing else, at a lower priority where the system
allows it: the lowest, so that the table's threads and the shoe always come first (the
service's unit allows a process to lower its own priority, never to raise it).

The child is started with ``spawn`` (a fresh interpreter: a fork would copy the state of
the service's threads) when the checker is made, so that a failure shows at start and the
first sign-in does not wait for it. A child that dies is started again at the next check.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Final

from shoe_controller.api.users import pin_matches

log = logging.getLogger(__name__)

#: The checking process's niceness (the lowest priority), when the system lets it lower it.
NICENESS: Final = 19
#: Longest wait for the checking process to start (seconds).
START_S: Final = 60.0


def _lower_priority() -> None:
    with contextlib.suppress(OSError):  # forbidden (a seccomp filter): the same priority
        os.setpriority(os.PRIO_PROCESS, 0, NICENESS)


def _ready() -> bool:
    return True


class PinChecker:
    """``checker(pin_hash, pin)``: :func:`~.users.pin_matches` in the checking process.
    Thread-safe; one check at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False
        self._pool = self._start()

    def _start(self) -> ProcessPoolExecutor:
        pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_lower_priority,
        )
        try:
            pool.submit(_ready).result(START_S)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        return pool

    def __call__(self, pin_hash: str, pin: str) -> bool:
        """Whether ``pin`` matches ``pin_hash``; RuntimeError once closed."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the PIN checker is closed")
            try:
                return self._pool.submit(pin_matches, pin_hash, pin).result()
            except BrokenProcessPool:
                log.error("the PIN checking process ended; starting it again")
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._start()
                return self._pool.submit(pin_matches, pin_hash, pin).result()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._pool.shutdown(wait=True, cancel_futures=True)
