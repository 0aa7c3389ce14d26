"""Who answers the controller's prompts: a script, the croupier at a terminal, or the
shoe's buttons.

The controller publishes a Prompt event when it needs a person's input; a croupier object
answers it through the controller's input methods. Answers are queued to the controller's
loop thread, so answering from a subscriber callback never blocks the loop.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from shoe_controller.cli.output import printable
from shoe_controller.errors import ShoeControllerError
from shoe_controller.procedure.table import TableRules
from shoe_controller.service.controller import TableController
from shoe_controller.service.events import ButtonEvent, PromptEvent, ServiceEvent


@dataclass(frozen=True)
class Script:
    """Scripted croupier inputs for automation (the demo and `run` with options)."""

    wagers: frozenset[int] | None = None  # None: every player position wagers
    dice: tuple[int, int, int] | None = None  # None: the controller's RNG
    on_review: str | None = None  # "misdeal" or "no-misdeal"; None: follow the proposal
    #: For bench automation only: this attendant id clears every fault. None: faults wait
    #: for a person, as rule F1 requires at a live table.
    attendant: str | None = None
    #: The croupier's count of the stub by hand, when the shoe's count is not 4 (D2).
    stub_count: int | None = None


class ScriptedCroupier:
    """Answers every prompt from a script; used by the demo and by scripted runs. What a
    script cannot do (clear a fault without an attendant id, take a deck out of the shoe)
    it says once through ``on_wait``, with how to go on."""

    def __init__(
        self,
        controller: TableController,
        script: Script,
        on_error: Callable[[ShoeControllerError], None],
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.controller = controller
        self.script = script
        self.on_error = on_error
        self.on_wait = on_wait or (lambda text: None)

    def __call__(self, event: ServiceEvent) -> None:
        if isinstance(event, PromptEvent):
            self.answer(event)

    def answer(self, prompt: PromptEvent) -> None:
        c = self.controller
        s = self.script
        need = prompt.need
        if need == "confirm_shuffle":
            c.confirm_shuffle()
        elif need in ("no_more_bets", "wagers"):
            c.no_more_bets(s.wagers if s.wagers is not None else c.rules.betting_positions)
        elif need == "start_position":
            if s.dice is not None:
                c.start_by_dice(*s.dice)
            else:
                c.start_by_rng()
        elif need == "wager_settled":
            c.wager_settled()
        elif need == "stub_count":
            if s.stub_count is None:
                self.on_error(
                    ShoeControllerError(
                        f"{prompt.message} A scripted croupier cannot count it: pass "
                        "--stub-count N with the count"
                    )
                )
            else:
                c.stub_counted(s.stub_count)
        elif need == "misdeal_determination":
            self._determine(prompt)
        elif need == "close_round":
            c.close_round()
        elif need == "new_deck":
            # A deck arrived after the last one left the table: the script's operator
            # vouches that it is a different deck.
            c.confirm_new_deck()
        elif need == "attendant_clear":
            if s.attendant is not None:
                c.clear_fault(s.attendant)
            else:
                self.on_wait(
                    f"{prompt.message} Waiting for an attendant: clear it from the console "
                    "(or, on a bench only, run again with --attendant ID)."
                )
        elif need == "remove_deck":
            self.on_wait(f"{prompt.message} Waiting for the deck to be changed at the shoe.")

    def _determine(self, prompt: PromptEvent) -> None:
        s = self.script
        if s.on_review is not None:
            self.controller.misdeal_determination(s.on_review == "misdeal")
        elif prompt.proposal is not None:
            self.controller.misdeal_determination(prompt.proposal == "void_misdeal")
        else:
            self.on_error(
                ShoeControllerError(
                    "the croupier must decide whether the cards were misdealt and no "
                    "--on-review answer was given: pass --on-review misdeal|no-misdeal"
                )
            )


class ButtonCroupier:
    """Without a terminal, a console or a script: the shoe's buttons give the inputs.

    "No more bets" is the service's own: it closes the bets with the wagers entered and
    asks for them when none were. With ``wagers`` (``--wagers``) those are entered when bets
    open. The starting position comes from the controller's RNG; "confirm" accepts what
    the controller asks for (the shuffle, the dice wager settled, the misdeal
    determination it proposes, closing the round, a new deck).
    """

    def __init__(self, controller: TableController, wagers: frozenset[int] | None) -> None:
        self.controller = controller
        self.wagers = wagers
        self._pending: PromptEvent | None = None

    def __call__(self, event: ServiceEvent) -> None:
        if isinstance(event, PromptEvent):
            self._pending = event
            if event.need == "start_position":
                self.controller.start_by_rng()
            elif event.need in ("no_more_bets", "wagers") and self.wagers is not None:
                self.controller.set_wagers(self.wagers)
        elif isinstance(event, ButtonEvent) and event.button == "confirm":
            self.confirm()

    def confirm(self) -> None:
        pending = self._pending
        if pending is None:
            return
        c = self.controller
        if pending.need == "confirm_shuffle":
            c.confirm_shuffle()
        elif pending.need == "wager_settled":
            c.wager_settled()
        elif pending.need == "misdeal_determination" and pending.proposal is not None:
            c.misdeal_determination(pending.proposal == "void_misdeal")
        elif pending.need == "close_round":
            c.close_round()
        elif pending.need == "new_deck":
            c.confirm_new_deck()


class TerminalCroupier:
    """Asks the croupier at the terminal. Prompts are queued by the loop thread and
    answered on the main thread, which owns standard input."""

    def __init__(self, controller: TableController, ask: Callable[[str], str]) -> None:
        self.controller = controller
        self.ask = ask
        self.prompts: queue.Queue[PromptEvent] = queue.Queue()
        #: One question, and its check, for each need the croupier answers here.
        self._handlers: dict[str, Callable[[PromptEvent], None]] = {
            "confirm_shuffle": self._confirm_shuffle,
            "no_more_bets": self._no_more_bets,
            "wagers": self._no_more_bets,
            "stub_count": self._stub_count,
            "start_position": self._start_position,
            "wager_settled": self._wager_settled,
            "misdeal_determination": self._misdeal_determination,
            "close_round": self._close_round,
            "new_deck": self._new_deck,
            "attendant_clear": self._attendant_clear,
        }

    def __call__(self, event: ServiceEvent) -> None:
        if isinstance(event, PromptEvent):
            self.prompts.put(event)

    def serve(self, stop: threading.Event, say: Callable[[str], None]) -> None:
        while not stop.is_set():
            try:
                prompt = self.prompts.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self._answer(prompt)
            except (ValueError, ShoeControllerError) as exc:
                say(f"not accepted: {exc}")
                self.prompts.put(prompt)

    def _ask(self, question: str) -> str:
        # The question may quote what the shoe reported: escaped like every human line.
        return self.ask(printable(question))

    def _answer(self, prompt: PromptEvent) -> None:
        # A need the terminal has no question for (the deck to be changed at the shoe)
        # is left to the narration, which already says what to do.
        handler = self._handlers.get(prompt.need)
        if handler is not None:
            handler(prompt)

    def _confirm_shuffle(self, prompt: PromptEvent) -> None:
        text = self._ask("Was the deck in the shoe shuffled and cut? (y/n): ")
        if not text.strip().lower().startswith("y"):
            raise ValueError("shuffle and cut the deck (Section 10.4), load it, then answer y")
        self.controller.confirm_shuffle()

    def _no_more_bets(self, prompt: PromptEvent) -> None:
        text = self._ask("No more bets. Wagered positions (e.g. 2,4,5; - for none): ")
        if not text.strip():
            # An empty line is more likely a slip than "nobody wagered": ask for "-".
            raise ValueError("enter the wagered positions, or - when no position wagers")
        wagers = frozenset() if text.strip() == "-" else parse_positions(text)
        self.controller.no_more_bets(check_positions(wagers, self.controller.rules))

    def _stub_count(self, prompt: PromptEvent) -> None:
        text = self._ask(f"{prompt.message} Cards in the stub: ")
        try:
            count = int(text)
        except ValueError:
            raise ValueError("enter the number of cards counted") from None
        self.controller.stub_counted(count)

    def _start_position(self, prompt: PromptEvent) -> None:
        text = self._ask("Starting position: three dice (e.g. 3,4,5) or empty for RNG: ")
        if text.strip():
            self.controller.start_by_dice(*parse_dice(text))
        else:
            self.controller.start_by_rng()

    def _wager_settled(self, prompt: PromptEvent) -> None:
        # Enter only says "done": whatever was typed is not an answer.
        self._ask("Settle the dice wagers, then press Enter: ")
        self.controller.wager_settled()

    def _misdeal_determination(self, prompt: PromptEvent) -> None:
        hint = f" [proposed: {prompt.proposal}]" if prompt.proposal else ""
        text = self._ask(f"{prompt.message} Misdealt? (y/n){hint}: ").strip().lower()
        if not text and prompt.proposal:
            # An empty answer accepts the controller's proposal, as the hint shows.
            text = "y" if prompt.proposal == "void_misdeal" else "n"
        if text not in ("y", "n", "yes", "no"):
            raise ValueError("answer y or n")
        self.controller.misdeal_determination(text.startswith("y"))

    def _close_round(self, prompt: PromptEvent) -> None:
        self._ask("Settle the wagers, then press Enter to close the round: ")
        self.controller.close_round()

    def _new_deck(self, prompt: PromptEvent) -> None:
        text = self._ask(f"{prompt.message} Is it a different deck? (y/n): ")
        if not text.strip().lower().startswith("y"):
            raise ValueError("remove that deck and load a different one")
        self.controller.confirm_new_deck()

    def _attendant_clear(self, prompt: PromptEvent) -> None:
        name = self._ask(f"{prompt.message} Attendant, your id to clear the fault: ")
        if not name.strip():
            raise ValueError("an attendant id is required to clear a fault")
        self.controller.clear_fault(name.strip())


def parse_positions(text: str) -> frozenset[int]:
    """Positions written like ``2,4,5`` (which of them may wager is the table's rules')."""
    try:
        return frozenset(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a list of positions like 2,4,5") from None


def check_positions(positions: frozenset[int], rules: TableRules) -> frozenset[int]:
    """``positions``, each a betting position of the table (the banker is always in play)."""
    betting = rules.betting_positions
    bad = sorted(p for p in positions if p not in betting)
    if bad:
        raise ValueError(
            f"position {bad[0]} cannot wager: player positions are {betting[0]}..{betting[-1]}"
        )
    return positions


def parse_dice(text: str) -> tuple[int, int, int]:
    try:
        dice = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise ValueError(f"{text!r} is not three dice like 3,4,5") from None
    if len(dice) != 3 or not all(1 <= d <= 6 for d in dice):
        raise ValueError(f"{text!r} is not three dice, each 1..6 (e.g. 3,4,5)")
    return dice[0], dice[1], dice[2]
