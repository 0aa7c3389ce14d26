"""Human output of ``shoe-controller``: each step explained in one sentence, a progress bar
while dealing, a summary per round. It sees only public events, so it cannot show a card
identity while a round is open (rule E1)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

from shoe_controller.cli.output import Output
from shoe_controller.service import events as ev

#: While no shoe can be opened the link retries every few seconds: say so once, then at most
#: this often (seconds), so that a box waiting for its shoe does not fill its log.
WAITING_REPEAT: Final = 60.0

_STATES = {
    "idle": "The shoe is ready and waiting for a deck.",
    "shuffle_check": "A deck is in the shoe: the croupier confirms its shuffle and cut (A2).",
    "deck_loaded": "The round is open and bets are open (A2).",
    "bets_closed": "No more bets: the wagered positions are frozen (A3).",
    "start_set": "Starting position set; the dice wagers are settled before any card (B2).",
    "dealing": "The gate is open for the deal, one card at a time (C1, F5).",
    "stub_count": "The deal is complete; the stub passes the shoe's reader (D1).",
    "stub_confirm": "The shoe finished the stub: the croupier counts it (D1).",
    "stub_dispute": "The figures disagree with the croupier's count: a supervisor decides (D1).",
    "misdeal_review": "The stub is not 4: the croupier determines whether it was misdealt (D2).",
    "dealt": "Stub of 4: the stub and the unwagered hands go to the discard rack unseen (D1).",
    "closed": "The croupier closed the round; the round record is published (E2).",
    "void_misdeal": "All hands are void (Section 10.13).",
    "void_fault": "The round is void because of a fault (Section 10.13).",
    "deck_removed": "The deck must leave the table; only a different deck may be loaded (D2).",
    "fault": "Dealing is blocked until an attendant clears the fault (F1).",
    "no_shoe": "No approved shoe: nothing may be dealt (A1).",
    "stopped": "The table controller stopped; the gate is locked (F4).",
}
#: Prompts worth a line of their own: those that wait on a person's action at the table.
_SPOKEN_PROMPTS = (
    "attendant_clear",
    "wait_shoe",
    "remove_deck",
    "new_deck",
    "wagers",
    "accept_stub_count",
)


def _positions(values: tuple[int, ...] | list[int]) -> str:
    return ", ".join(str(v) for v in values) or "none"


class Narrator:
    def __init__(
        self, out: Output, clock: Callable[[], float] = time.monotonic, *, deal_size: int
    ) -> None:
        self.out = out
        self.outcomes: Counter[str] = Counter()
        self.cards = 0
        self.total = deal_size
        self._clock = clock
        #: When the shoe was last said to be unreachable; None while it is connected.
        self._waiting_said: float | None = None
        self._tellers: dict[type[ev.ServiceEvent], Callable[[Any], None]] = {
            ev.ConnectedEvent: self._connected,
            ev.StateEvent: self._state,
            ev.StartPositionEvent: self._start,
            ev.CardEvent: self._card,
            ev.StubEvent: self._stub,
            ev.StubAcceptedEvent: self._stub_accepted,
            ev.FaultEvent: self._fault,
            ev.FaultClearedEvent: self._fault_cleared,
            ev.NoticeEvent: self._notice,
            ev.LinkStatusEvent: self._link,
            ev.PromptEvent: self._prompt,
            ev.RoundEndEvent: self._round_end,
            ev.RoundClosedEvent: self._round_closed,
        }

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
        teller = self._tellers.get(type(event))
        if teller is not None:
            teller(event)

    def say(self, text: str) -> None:
        self.out.line(text, "yellow")

    def _connected(self, event: ev.ConnectedEvent) -> None:
        self._waiting_said = None
        verdict = "approved" if event.approved else "NOT approved"
        self.out.line(
            f"Shoe connected at {event.device}: {event.model} serial {event.serial}, "
            f"firmware {event.firmware}; {verdict} ({event.reason}).",
            "green" if event.approved else "red",
        )

    def _state(self, event: ev.StateEvent) -> None:
        text = _STATES.get(event.state)
        if text:
            self.out.line(f"[{event.state}] {text}", "dim")

    def _start(self, event: ev.StartPositionEvent) -> None:
        if event.method == "dice":
            how = f"dice {'+'.join(map(str, event.dice or ()))}"
        else:
            how = f"RNG number {event.value}"
        self.out.line(f"Starting position {event.position} by {how} (B1).")

    def _card(self, event: ev.CardEvent) -> None:
        self.cards = event.index
        self.out.progress(event.index, self.total, f"card to position {event.position}")

    def _stub(self, event: ev.StubEvent) -> None:
        if event.source == "shoe":
            self.out.line(f"Stub counted by the shoe: {event.count} cards.")
            return
        figures = event.figures or {}
        shown = ", ".join(
            f"{name} {'-' if figures.get(key) is None else figures.get(key)}"
            for key, name in (("shoe", "shoe"), ("read", "read"), ("deal", "by the deal"))
        )
        verdict = "they agree" if event.agrees else "a supervisor must accept it"
        if event.contradicts:
            verdict += "; it contradicts the shoe's reading of every card (D4)"
        self.out.line(f"Stub counted by the croupier: {event.count} cards ({shown}: {verdict}).")

    def _stub_accepted(self, event: ev.StubAcceptedEvent) -> None:
        if event.contradicts:
            self.out.line(
                f"{event.by} accepted the croupier's count of {event.count}, against the "
                "shoe's reading of every card, which decides the stub (D4)."
            )
            return
        self.out.line(f"{event.by} accepted the croupier's count of {event.count} (D1).")

    def _fault(self, event: ev.FaultEvent) -> None:
        rule = f" ({event.rule})" if event.rule else ""
        self.out.line(f"Fault {event.code}: {event.message}{rule}", "red")

    def _fault_cleared(self, event: ev.FaultClearedEvent) -> None:
        self.out.line(f"Fault cleared by {event.by}.")

    def _notice(self, event: ev.NoticeEvent) -> None:
        self.out.line(f"Notice {event.code}: {event.message}", "yellow")

    def _link(self, event: ev.LinkStatusEvent) -> None:
        if event.status != "reconnecting" or self._say_waiting():
            self.out.line(f"Link {event.status}: {event.message}", "yellow")

    def _prompt(self, event: ev.PromptEvent) -> None:
        evidence = event.evidence or {}
        unusual_stub = event.need == "stub_count" and evidence.get("shoe_count") != evidence.get(
            "expected"
        )
        if event.need in _SPOKEN_PROMPTS or unusual_stub:
            self.out.line(event.message, "yellow")

    def _round_end(self, event: ev.RoundEndEvent) -> None:
        self.outcomes[event.outcome] += 1
        start = event.start_position if event.start_position is not None else "not set"
        counts = "/".join(
            str(event.cards_per_position.get(str(p), 0))
            for p in range(1, len(event.cards_per_position) + 1)
        )
        self.out.line(
            f"Round {event.round}: {event.outcome} ({event.reason}); start position "
            f"{start}, cards per position {counts or 'none'}, wagered "
            f"{_positions(event.wagered)}, collected unseen "
            f"{_positions(event.collected_unseen)}.",
            "bold",
        )

    def _round_closed(self, event: ev.RoundClosedEvent) -> None:
        positions = ", ".join(sorted(event.hands, key=int))
        self.out.line(f"Round {event.round} closed: hands recorded for positions {positions}.")

    def totals(self) -> str:
        if not self.outcomes:
            return "No round was completed."
        parts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(self.outcomes.items()))
        return f"Rounds: {sum(self.outcomes.values())} ({parts})."
