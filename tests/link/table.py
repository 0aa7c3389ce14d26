"""A minimal table for driver tests: its own thread consumes the link's events.

Like the service, it receives events through a queue filled by ``on_event``, acknowledges
what it received whenever its queue runs dry (one "journal commit" per batch), keeps the
gate open while a deck is in the shoe and closes it when the shoe is empty, so that the
virtual croupier loads the next deck. Tests wait on its condition, never sleep.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TypeVar

from firmware_protocol import CardDrawn, DeckLoaded, GateMode, Message, SetGate, ShoeEmpty
from shoe_controller.errors import LinkError, NotApproved
from shoe_controller.link.driver import LinkDriver
from shoe_controller.link.events import (
    CommandFailed,
    Connected,
    EventsLost,
    LinkEvent,
    ShoeEvent,
)

WAIT = 30.0
T = TypeVar("T")


class Table:
    def __init__(self, deal: bool = True) -> None:
        self.deal = deal
        self.events: list[LinkEvent] = []
        self.delivered: list[ShoeEvent] = []
        self.refusals: list[NotApproved] = []
        self.cond = threading.Condition()
        self._queue: queue.Queue[LinkEvent | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.driver: LinkDriver | None = None
        self._gate = GateMode.LOCKED
        self._closing = False
        self._stopping = threading.Event()

    # -- wiring ----------------------------------------------------------------------

    def on_event(self, event: LinkEvent) -> None:
        self._queue.put(event)

    def run(self, driver: LinkDriver) -> None:
        self.driver = driver
        self._thread = threading.Thread(target=self._main, name="test-table", daemon=True)
        self._thread.start()
        driver.start()

    def stop(self) -> None:
        self._stopping.set()
        if self.driver is not None:
            self.driver.stop()
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(WAIT)

    # -- waiting ---------------------------------------------------------------------

    def wait_for(self, predicate: Callable[[], bool], timeout: float = WAIT) -> None:
        with self.cond:
            if not self.cond.wait_for(predicate, timeout):
                kinds = [type(e).__name__ for e in self.events[-12:]]
                raise AssertionError(f"condition not met in {timeout} s; last events: {kinds}")

    def wait_for_cards(self, count: int, timeout: float = WAIT) -> None:
        self.wait_for(lambda: len(self.cards()) >= count, timeout)

    def close_gate(self) -> None:
        """Stop dealing: lock the gate and open it no more."""
        with self.cond:
            self._closing = True
            self._gate = GateMode.LOCKED
        self._send_gate()

    # -- what happened ---------------------------------------------------------------

    def of_type(self, kind: type[T]) -> list[T]:
        with self.cond:
            return [e for e in self.events if isinstance(e, kind)]

    def cards(self) -> list[CardDrawn]:
        return [e.message for e in self.delivered if isinstance(e.message, CardDrawn)]

    def delivered_pairs(self) -> list[tuple[int, Message]]:
        with self.cond:
            return [(e.seq, e.message) for e in self.delivered]

    def lost_seqs(self) -> set[int]:
        return {s for e in self.of_type(EventsLost) for s in range(e.expected_seq, e.got_seq)}

    # -- the thread ------------------------------------------------------------------

    def _main(self) -> None:
        while (event := self._queue.get()) is not None:
            with self.cond:
                self.events.append(event)
                if isinstance(event, ShoeEvent):
                    self.delivered.append(event)
                    self._follow(event.message)
                self.cond.notify_all()
            if self._changes_gate(event):
                self._send_gate()
            if self._queue.empty() and self.delivered and self.driver is not None:
                self.driver.acknowledge(self.delivered[-1].seq)

    @staticmethod
    def _changes_gate(event: LinkEvent) -> bool:
        if isinstance(event, ShoeEvent):
            return isinstance(event.message, DeckLoaded | ShoeEmpty)
        # A command the link gave up on is sent again; one it could not send waits for
        # the next Connected.
        return isinstance(event, Connected) or (
            isinstance(event, CommandFailed) and event.reason == "no_answer"
        )

    def _follow(self, message: Message) -> None:
        if isinstance(message, DeckLoaded) and self.deal and not self._closing:
            self._gate = GateMode.DEAL
        elif isinstance(message, ShoeEmpty):
            self._gate = GateMode.LOCKED

    def _send_gate(self) -> None:
        assert self.driver is not None
        with self.cond:
            gate = self._gate
        try:
            self.driver.send_command(SetGate(gate))
        except NotApproved as refusal:
            with self.cond:
                self.refusals.append(refusal)
                self.cond.notify_all()
        except LinkError:
            # The test stopped the driver while this thread still followed the shoe: the
            # gate goes nowhere, as it would for a controller that is stopping.
            if not self._stopping.is_set():
                raise
