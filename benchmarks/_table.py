"""A table controller with a scripted croupier, as the benchmarks run it.

The controller is the product's own (:class:`TableController`, its link driver, a journal
on a real file with durable commits); only the croupier is scripted: every prompt is
answered at once, so that the shoe and the controller set the pace.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from shoe_controller.cli.croupier import Script, ScriptedCroupier
from shoe_controller.errors import ShoeControllerError
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config, parse_config
from shoe_controller.service.controller import TableController
from shoe_controller.simulator import firmware

#: Three positions wager, so that every round also collects unwagered hands unseen.
SCRIPT = Script(wagers=frozenset({2, 4, 5}), dice=(6, 6, 6))
#: Every round deals this many cards: 49 to the positions and the 4 of the stub.
CARDS_PER_ROUND = 53


def log_errors_only() -> None:
    """Keep stderr for errors: a stop's "link lost" warning is expected in every run."""
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")


def bench_config() -> Config:
    """The defaults, with the simulated shoe on the approved list (as on a bench)."""
    return parse_config(
        {
            "approved_shoes": [
                {
                    "model": firmware.MODEL,
                    "firmware_version": firmware.FIRMWARE_VERSION,
                    "firmware_digest": firmware.DIGEST.hex(),
                }
            ]
        }
    )


class RoundCounter:
    """Counts what the controller publishes: cards dealt, stub cards, finished rounds.

    ``on_round(n)`` is called on the controller's loop thread when round ``n`` finishes;
    the scripted croupier stops answering once ``target`` rounds are done, so that the
    table then stands still."""

    def __init__(
        self, target: int | None = None, on_round: Callable[[int], None] | None = None
    ) -> None:
        self.target = target
        self.on_round = on_round
        self.rounds = 0
        self.cards = 0
        self.outcomes: dict[str, int] = {}
        self.connected: ev.ConnectedEvent | None = None
        #: What the controller last asked of a person (a Prompt's ``need``).
        self.last_prompt: str | None = None
        self.error: ShoeControllerError | None = None
        self._cond = threading.Condition()

    @property
    def played(self) -> dict[str, int]:
        """The outcomes but ``not_played``: the round a stop closes before its gate opened."""
        return {o: n for o, n in self.outcomes.items() if o != "not_played"}

    @property
    def answering(self) -> bool:
        return self.target is None or self.rounds < self.target

    def __call__(self, event: ev.ServiceEvent) -> None:
        with self._cond:
            if isinstance(event, ev.CardEvent):
                self.cards += 1
            elif isinstance(event, ev.StubEvent) and event.source == "shoe":
                # The croupier then confirms the count (D1): the cards are the shoe's.
                self.cards += event.count
            elif isinstance(event, ev.ConnectedEvent):
                self.connected = event
            elif isinstance(event, ev.PromptEvent):
                self.last_prompt = event.need
            elif isinstance(event, ev.RoundEndEvent):
                self.outcomes[event.outcome] = self.outcomes.get(event.outcome, 0) + 1
            finished = isinstance(event, ev.RoundClosedEvent) or (
                isinstance(event, ev.RoundEndEvent) and event.outcome != "dealt"
            )
            if finished:
                self.rounds += 1
            self._cond.notify_all()
        if finished and self.on_round is not None:
            self.on_round(self.rounds)

    def fail(self, error: ShoeControllerError) -> None:
        with self._cond:
            self.error = error
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[RoundCounter], bool], timeout: float) -> None:
        """Wait until ``predicate(self)`` holds; RuntimeError after ``timeout`` seconds."""
        with self._cond:
            met = self._cond.wait_for(lambda: predicate(self) or self.error is not None, timeout)
            if self.error is not None:
                raise RuntimeError(f"the scripted croupier failed: {self.error}")
            if not met:
                raise RuntimeError(
                    f"the table did not get there within {timeout:g} s: {self.rounds} rounds "
                    f"finished, outcomes {self.outcomes}"
                )

    def wait_rounds(self, rounds: int, timeout: float) -> None:
        self.wait_for(lambda c: c.rounds >= rounds, timeout)


def start_table(
    device: str,
    journal: Path,
    counter: RoundCounter,
    *,
    croupier: bool = True,
) -> TableController:
    """Start a controller on ``device``, journaling to ``journal``; ``counter`` sees its
    events. Without ``croupier`` nobody answers its prompts: the table stays idle."""
    # A bench: its automatic croupier gives the inputs (E4).
    controller = TableController(bench_config(), journal_path=journal, device=device, bench=True)
    controller.subscribe(counter)
    if croupier:
        scripted = ScriptedCroupier(controller, SCRIPT, counter.fail)

        def answer(event: ev.ServiceEvent) -> None:
            if counter.answering:
                scripted(event)

        controller.subscribe(answer)
    controller.start()
    return controller
