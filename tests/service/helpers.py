"""Run a TableController against the in-process simulated shoe and collect its events."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from shoe_controller.cli.croupier import Script, ScriptedCroupier
from shoe_controller.errors import ShoeControllerError
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.service.controller import (
    Actor,
    LinkFactory,
    TableController,
    _default_link,
    _Stop,
)
from shoe_controller.simulator.transport import runner_at

WAIT = 30.0


class Recorder:
    """Collects every published event; ``wait_for`` blocks on a condition with a timeout."""

    def __init__(self) -> None:
        self.events: list[ev.ServiceEvent] = []
        self._cond = threading.Condition()

    def __call__(self, event: ev.ServiceEvent) -> None:
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def wait_for(
        self, predicate: Callable[[list[ev.ServiceEvent]], bool], timeout: float = WAIT
    ) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: predicate(self.events), timeout):
                names = [e.NAME for e in self.events[-10:]]
                raise AssertionError(f"condition not met within {timeout} s; last: {names}")

    def of(self, kind: type[ev.ServiceEvent]) -> list[ev.ServiceEvent]:
        with self._cond:
            return [e for e in self.events if isinstance(e, kind)]

    def finished_rounds(self) -> int:
        with self._cond:
            return sum(
                1
                for e in self.events
                if isinstance(e, ev.RoundClosedEvent)
                or (isinstance(e, ev.RoundEndEvent) and e.outcome != "dealt")
            )


DEFAULT_SCRIPT = Script(wagers=frozenset({2, 4, 5}))
#: The people signed in at a table in these tests (E4).
DEALER = Actor("dana", "dealer")
SUPERVISOR = Actor("sam", "supervisor")


def start_table(
    tmp_path: Path,
    *,
    device: str = "sim://?pace=0",
    script: Script | None = DEFAULT_SCRIPT,
    config: Config | None = None,
    link_factory: LinkFactory = _default_link,
    journal: Path | None = None,
) -> tuple[TableController, Recorder]:
    controller = TableController(
        config or Config(),
        journal_path=journal or tmp_path / "journal.sqlite3",
        device=device,
        link_factory=link_factory,
        # An automatic croupier answers on a test bench only (E4).
        bench=script is not None,
    )
    recorder = Recorder()
    controller.subscribe(recorder)
    if script is not None:
        errors: list[ShoeControllerError] = []
        controller.subscribe(ScriptedCroupier(controller, script, errors.append))
    controller.start()
    return controller, recorder


def crash(controller: TableController) -> None:
    """What a process that dies leaves behind: the journal as last committed and the shoe
    as it is, its gate included. Nothing is stopped, sent or journaled (F3)."""
    thread = controller._thread
    assert thread is not None
    controller._queue.put(_Stop("crash", requested=False))
    thread.join()
    controller._thread = None


class SpentDeckTaker:
    """The croupier's hands at an in-process simulated shoe: when the controller asks for
    the deck to be taken out, take it out (the simulator's croupier loads the next)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.taken = 0

    def __call__(self, event: ev.ServiceEvent) -> None:
        if not (isinstance(event, ev.PromptEvent) and event.need == "remove_deck"):
            return
        runner = runner_at(self.address)
        if runner is None:
            return
        with runner.locked() as shoe:
            if shoe.deck_present:
                shoe.remove_deck()
                self.taken += 1
