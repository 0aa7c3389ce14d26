"""Human output of ``shoe-controller``: each step explained in one sentence, a progress bar
while dealing, a summary per round. It sees only public events, so it cannot show a card
identity while a round is open (rule E1)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Final

from shoe_controller.cli.output import Output
from shoe_controller.service import events as ev

#: While no shoe can be opened the link retries every few seconds: say so once, then at most
#: this often (seconds), so that a box waiting for its shoe does not fill its log.
WAITING_REPEAT: Final = 60.0

_STATES = {
    "idle": "The shoe is ready and waiting for a deck.",
    "deck_loaded": "A shuffled deck is in the shoe with its door closed; bets are open (A2).",
    "bets_closed": "No more bets: the wagered positions are frozen (A3).",
    "start_set": "Starting position set; the dice wagers are settled before any card (B2).",
    "dealing": "The gate is open for the deal: 7 cards to each of the 7 positions (C1).",
    "stub_count": "49 cards dealt, gate switched to stub mode: the shoe counts the stub (D1).",
    "misdeal_review": "The stub is not 4: the croupier determines whether it was misdealt (D2).",
    "dealt": "Stub of 4: the stub and the unwagered hands go to the discard rack unseen (D1).",
    "closed": "The croupier closed the round; the round record is published (E2).",
    "void_misdeal": "All hands are void (Section 10.13).",
    "void_fault": "The round is void because of a fault (Section 10.13).",
    "deck_removed": "The deck must leave the table; only a different deck may be loaded (D2).",
    "fault": "Dealing is blocked until an attendant clears the fault (F1).",
    "no_shoe": "No approved shoe: nothing may be dealt (A1).",
}


def _positions(values: tuple[int, ...] | list[int]) -> str:
    return ", ".join(str(v) for v in values) or "none"


class Narrator:
    def __init__(self, out: Output, clock: Callable[[], float] = time.monotonic) -> None:
        self.out = out
        self.outcomes: Counter[str] = Counter()
        self.cards = 0
        self.total = 49
        self._clock = clock
        #: When the shoe was last said to be unreachable; None while it is connected.
        self._waiting_said: float | None = None

    def waiting_announced(self) -> None:
        """The wait for the shoe was just announced elsewhere: count it as said."""
        self._waiting_said = self._clock()

    def _say_waiting(self) -> bool:
        now = self._clock()
        if self._waiting_said is not None and now - self._waiting_said < WAITING_REPEAT:
            return False
        self._waiting_said = now
        return True

    def tell(self, event: ev.ServiceEvent) -> None:
        out = self.out
        if isinstance(event, ev.Connected):
            self._waiting_said = None
            verdict = "approved" if event.approved else "NOT approved"
            out.line(
                f"Shoe connected at {event.device}: {event.model} serial {event.serial}, "
                f"firmware {event.firmware}; {verdict} ({event.reason}).",
                "green" if event.approved else "red",
            )
        elif isinstance(event, ev.StateChanged):
            text = _STATES.get(event.state)
            if text:
                out.line(f"[{event.state}] {text}", "dim")
        elif isinstance(event, ev.StartPosition):
            how = (
                f"dice {'+'.join(map(str, event.dice or ()))}"
                if event.method == "dice"
                else f"RNG number {event.value}"
            )
            out.line(f"Starting position {event.position} by {how} (B1).")
        elif isinstance(event, ev.CardDealt):
            self.cards = event.index
            out.progress(event.index, self.total, f"card to position {event.position}")
        elif isinstance(event, ev.StubCounted):
            out.line(f"Stub counted: {event.count} cards.")
        elif isinstance(event, ev.FaultRaised):
            out.line(f"Fault {event.code}: {event.message}", "red")
        elif isinstance(event, ev.FaultCleared):
            out.line(f"Fault cleared by {event.by}.")
        elif isinstance(event, ev.LinkChanged):
            if event.status != "reconnecting" or self._say_waiting():
                out.line(f"Link {event.status}: {event.message}", "yellow")
        elif isinstance(event, ev.Prompt) and event.need in (
            "attendant_clear",
            "remove_deck",
            "new_deck",
        ):
            out.line(event.message, "yellow")
        elif isinstance(event, ev.RoundEnded):
            self.outcomes[event.outcome] += 1
            out.line(
                f"Round {event.round}: {event.outcome} ({event.reason}); start position "
                f"{event.start_position}, cards per position "
                f"{'/'.join(str(event.cards_per_position.get(str(p), 0)) for p in range(1, 8))}"
                f", wagered {_positions(event.wagered)}, collected unseen "
                f"{_positions(event.collected_unseen)}.",
                "bold",
            )
        elif isinstance(event, ev.RoundClosed):
            positions = ", ".join(sorted(event.hands, key=int))
            out.line(f"Round {event.round} closed: hands recorded for positions {positions}.")

    def totals(self) -> str:
        if not self.outcomes:
            return "No round was completed."
        parts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(self.outcomes.items()))
        return f"Rounds: {sum(self.outcomes.values())} ({parts})."
