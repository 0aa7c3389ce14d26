"""PIN checks in a process of their own, and when they run.

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
What it runs is in :mod:`.pinprocess`, so that it imports little.

Even in a process of its own, a check beside the deal slows the cards it overlaps on a
small box (the caches they share). So :class:`PinCheckPacing` runs each check:

- once no card has left the shoe for :data:`SETTLE_S` (:data:`DEAL_UNDER_WAY`: the deal
  and the shoe's reading of the stub), waiting :data:`DEFER_S` at most. A fault ends the
  deal: a supervisor called to one waits a second. It is told the table's phase, a
  :class:`~shoe_controller.procedure.machine.Phase`, at each change;
- one at a time on each of two lanes, the table console's and every other client's, so
  that the console's sign-ins never queue behind other clients' (the checking process
  still checks one PIN at a time);
- at most :data:`SHARE` of the time on a lane, so that a flood of sign-ins leaves the cores
  to the table.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Final, Protocol, TypeVar

from shoe_controller.api.pinprocess import NICENESS, lower_priority, ready
from shoe_controller.api.users import pin_matches
from shoe_controller.procedure.machine import Phase

__all__ = [
    "DEAL_UNDER_WAY",
    "DEFER_S",
    "NICENESS",
    "NO_DEAL",
    "SETTLE_S",
    "SHARE",
    "START_S",
    "Clock",
    "DealWatch",
    "PinCheckPacing",
    "PinChecker",
    "SystemClock",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Longest wait for the checking process to start (seconds).
START_S: Final = 60.0
#: The share of the time PIN checks may take on a lane: after a check that took t seconds,
#: the lane rests (1 / share - 1) t, behind the checks already queued on it.
SHARE: Final = 0.25
#: Longest a PIN check waits for the deal under way to end (seconds)...
DEFER_S: Final = 30.0
#: ... and for the table to have been out of a deal this long (the next may follow at once).
SETTLE_S: Final = 1.0

#: The table's phases in which cards leave the shoe: the deal and the shoe's reading of
#: the stub. PIN checks wait for them to end.
DEAL_UNDER_WAY: Final = frozenset({Phase.DEALING, Phase.STUB_COUNT})
#: The phases in which no card leaves the shoe: the table waits for a shoe, a deck or a
#: person (the shuffle, the wager, the start, a count, a determination, a fault), or has
#: stopped. A PIN is checked at once. Every phase is in one of the two sets (a test says
#: so): a new phase is placed on purpose.
NO_DEAL: Final = frozenset(
    {
        Phase.NO_SHOE,
        Phase.IDLE,
        Phase.SHUFFLE_CHECK,
        Phase.DECK_LOADED,
        Phase.BETS_CLOSED,
        Phase.START_SET,
        Phase.STUB_CONFIRM,
        Phase.STUB_DISPUTE,
        Phase.MISDEAL_REVIEW,
        Phase.DEALT,
        Phase.CLOSED,
        Phase.VOID_MISDEAL,
        Phase.VOID_FAULT,
        Phase.DECK_REMOVED,
        Phase.FAULT,
        Phase.STOPPED,
    }
)


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
            initializer=lower_priority,
        )
        try:
            pool.submit(ready).result(START_S)
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


# --- when checks run --------------------------------------------------------------------


class Clock(Protocol):
    """The time the pacing keeps: seconds that only go forward, and a wait on an event
    that ends when it is set or after ``timeout`` seconds (whether it was set, as
    :meth:`threading.Event.wait`). A test's clock moves on in its waits, at once."""

    def now(self) -> float: ...

    def wait(self, event: threading.Event, timeout: float) -> bool: ...


class SystemClock:
    """The real time: :func:`time.monotonic`, and the event's own wait."""

    def now(self) -> float:
        return time.monotonic()

    def wait(self, event: threading.Event, timeout: float) -> bool:
        return event.wait(timeout)


class DealWatch:
    """Whether cards leave the shoe, told by the table's phases (from any thread), and a
    wait for a pause in them (on a sign-in's lane)."""

    def __init__(self, clock: Clock, *, settle: float = SETTLE_S, defer: float = DEFER_S) -> None:
        self._clock = clock
        self._settle = settle
        self._defer = defer
        self._lock = threading.Lock()
        #: Set while no deal is under way, and once closed.
        self._no_deal = threading.Event()
        self._no_deal.set()
        #: Set once closed: every wait ends at once.
        self._closed = threading.Event()
        #: When the last deal ended; None while one is under way. The watch starts settled:
        #: a check at start waits for nothing.
        self._deal_ended: float | None = clock.now() - settle

    def table_in(self, phase: Phase) -> None:
        """The table is in ``phase`` now."""
        with self._lock:
            if self._closed.is_set():
                return
            if phase in DEAL_UNDER_WAY:
                self._deal_ended = None
                self._no_deal.clear()
            elif self._deal_ended is None:
                self._deal_ended = self._clock.now()
                self._no_deal.set()

    def wait_for_a_pause(self) -> None:
        """Wait until no deal has been under way for ``settle`` seconds, ``defer`` at most
        (past that, the check goes on beside the deal), or until closed."""
        deadline = self._clock.now() + self._defer
        while not self._closed.is_set() and (left := deadline - self._clock.now()) > 0:
            if not self._clock.wait(self._no_deal, left):
                return
            settling = self._settling()
            if settling is None:
                continue  # a deal began again meanwhile
            if settling <= 0:
                return
            # A deal that begins meanwhile is seen at the next turn: no need to wake for it.
            self._clock.wait(self._closed, min(settling, deadline - self._clock.now()))

    def _settling(self) -> float | None:
        """Seconds until the table has been out of a deal ``settle`` long (0 or less: it
        has); None while a deal is under way."""
        ended = self._deal_ended
        if ended is None:
            return None
        return ended + self._settle - self._clock.now()

    def close(self) -> None:
        """End every wait, now and to come."""
        with self._lock:
            self._closed.set()
            self._no_deal.set()


class PinCheckPacing:
    """Runs sign-ins' PIN checks: on the table console's lane or on everyone else's, one at
    a time on each, once no card has left the shoe for a while (:class:`DealWatch`), and
    at most ``share`` of the time on a lane."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        share: float = SHARE,
        settle: float = SETTLE_S,
        defer: float = DEFER_S,
    ) -> None:
        self._clock = clock or SystemClock()
        self._share = share
        self._deals = DealWatch(self._clock, settle=settle, defer=defer)
        #: Set once closed: a lane's rest ends at once.
        self._closed = threading.Event()
        self._elsewhere = ThreadPoolExecutor(max_workers=1, thread_name_prefix="api-sign-in")
        self._at_table = ThreadPoolExecutor(max_workers=1, thread_name_prefix="api-sign-in-table")

    def table_in(self, phase: Phase) -> None:
        """Told (from any thread) the table's phase, at each change."""
        self._deals.table_in(phase)

    def submit(self, check: Callable[[Callable[[], None]], T], *, at_table: bool) -> Future[T]:
        """Run ``check(before_check)`` on the table console's lane (``at_table``) or on the
        other clients'; ``check`` calls ``before_check`` just before it checks the PIN,
        which waits for a pause in the deal. RuntimeError once closed."""
        lane = self._at_table if at_table else self._elsewhere
        return lane.submit(self._run, lane, check)

    def _run(self, lane: ThreadPoolExecutor, check: Callable[[Callable[[], None]], T]) -> T:
        """On ``lane``: run ``check``, then leave the lane idle for a while before its next
        check (its rest); this check's answer does not wait for it."""
        began = self._clock.now()

        def between_deals() -> None:
            nonlocal began
            self._deals.wait_for_a_pause()
            began = self._clock.now()  # the wait for the deal is not the check's time

        try:
            return check(between_deals)
        finally:
            self._rest(lane, self.rest_after(self._clock.now() - began))

    def rest_after(self, spent: float) -> float:
        """How long a lane rests after a check that took ``spent`` seconds: the check then
        took ``share`` of the time."""
        return spent * (1 / self._share - 1)

    def _rest(self, lane: ThreadPoolExecutor, seconds: float) -> None:
        # Queued on the lane itself: the checks already waiting there come first.
        with contextlib.suppress(RuntimeError):  # closed: no next check
            lane.submit(self._clock.wait, self._closed, seconds)

    def close(self) -> None:
        """No more checks: those queued are cancelled; a check waiting for the deal to end
        goes on at once, and finds the checker closed."""
        self._elsewhere.shutdown(wait=False, cancel_futures=True)
        self._at_table.shutdown(wait=False, cancel_futures=True)
        self._closed.set()
        self._deals.close()
