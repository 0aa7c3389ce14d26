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
from shoe_controller.service.controller import TableController
from shoe_controller.service.events import ButtonPressed, Prompt, ServiceEvent

ALL_PLAYER_POSITIONS = frozenset(range(2, 8))


@dataclass(frozen=True)
class Script:
    """Scripted croupier inputs for automation (the demo and `run` with options)."""

    wagers: frozenset[int] | None = None  # None: every player position wagers
    dice: tuple[int, int, int] | None = None  # None: the controller's RNG
    on_review: str | None = None  # "misdeal" or "no-misdeal"; None: follow the proposal
    #: For bench automation only: this attendant id clears every fault. None: faults wait
    #: for a person, as rule F1 requires at a live table.
    attendant: str | None = None


class ScriptedCroupier:
    """Answers every prompt from a script; used by the demo and by scripted runs."""

    def __init__(
        self,
        controller: TableController,
        script: Script,
        on_error: Callable[[ShoeControllerError], None],
    ) -> None:
        self.controller = controller
        self.script = script
        self.on_error = on_error

    def __call__(self, event: ServiceEvent) -> None:
        if isinstance(event, Prompt):
            self.answer(event)

    def answer(self, prompt: Prompt) -> None:
        c = self.controller
        s = self.script
        if prompt.need == "no_more_bets":
            c.no_more_bets(s.wagers if s.wagers is not None else ALL_PLAYER_POSITIONS)
        elif prompt.need == "start_position":
            if s.dice is not None:
                c.start_by_dice(*s.dice)
            else:
                c.start_by_rng()
        elif prompt.need == "wager_settled":
            c.wager_settled()
        elif prompt.need == "misdeal_determination":
            if s.on_review is not None:
                c.misdeal_determination(s.on_review == "misdeal")
            elif prompt.proposal is not None:
                c.misdeal_determination(prompt.proposal == "misdeal")
            else:
                self.on_error(
                    ShoeControllerError(
                        "the croupier must decide whether the cards were misdealt and no "
                        "--on-review answer was given: pass --on-review misdeal|no-misdeal"
                    )
                )
        elif prompt.need == "close_round":
            c.close_round()
        elif prompt.need == "new_deck":
            # A deck arrived after the last one left the table: the script's operator
            # vouches that it is a different deck.
            c.confirm_new_deck()
        elif prompt.need == "attendant_clear" and s.attendant is not None:
            c.clear_fault(s.attendant)


class ButtonCroupier:
    """Without a terminal and without a script: the shoe's buttons give the inputs.

    "No more bets" closes the bets with every position wagered unless told otherwise; the
    starting position comes from the controller's RNG; "confirm" accepts what the controller
    proposes (wager settled, the misdeal determination it proposes, closing the round).
    """

    def __init__(self, controller: TableController, wagers: frozenset[int] | None) -> None:
        self.controller = controller
        self.wagers = wagers if wagers is not None else ALL_PLAYER_POSITIONS
        self._pending: Prompt | None = None

    def __call__(self, event: ServiceEvent) -> None:
        if isinstance(event, Prompt):
            self._pending = event
            if event.need == "start_position":
                self.controller.start_by_rng()
        elif isinstance(event, ButtonPressed):
            self.pressed(event.button)

    def pressed(self, button: str) -> None:
        pending = self._pending
        if button == "no_more_bets" and pending and pending.need == "no_more_bets":
            self.controller.no_more_bets(self.wagers)
        elif button == "confirm" and pending is not None:
            if pending.need == "wager_settled":
                self.controller.wager_settled()
            elif pending.need == "misdeal_determination" and pending.proposal is not None:
                self.controller.misdeal_determination(pending.proposal == "misdeal")
            elif pending.need == "close_round":
                self.controller.close_round()
            elif pending.need == "new_deck":
                self.controller.confirm_new_deck()


class TerminalCroupier:
    """Asks the croupier at the terminal. Prompts are queued by the loop thread and
    answered on the main thread, which owns standard input."""

    def __init__(self, controller: TableController, ask: Callable[[str], str]) -> None:
        self.controller = controller
        self.ask = ask
        self.prompts: queue.Queue[Prompt] = queue.Queue()

    def __call__(self, event: ServiceEvent) -> None:
        if isinstance(event, Prompt):
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

    def _answer(self, prompt: Prompt) -> None:
        c = self.controller
        if prompt.need == "no_more_bets":
            text = self._ask("No more bets. Wagered positions (e.g. 2,4,5; empty: all): ")
            c.no_more_bets(parse_positions(text) if text.strip() else ALL_PLAYER_POSITIONS)
        elif prompt.need == "start_position":
            text = self._ask("Starting position: three dice (e.g. 3,4,5) or empty for RNG: ")
            if text.strip():
                c.start_by_dice(*parse_dice(text))
            else:
                c.start_by_rng()
        elif prompt.need == "wager_settled":
            self._ask("Settle the dice wagers, then press Enter: ")
            c.wager_settled()
        elif prompt.need == "misdeal_determination":
            hint = f" [proposed: {prompt.proposal}]" if prompt.proposal else ""
            text = self._ask(f"{prompt.message} Misdealt? (y/n){hint}: ").strip().lower()
            if not text and prompt.proposal:
                text = "y" if prompt.proposal == "misdeal" else "n"
            if text not in ("y", "n", "yes", "no"):
                raise ValueError("answer y or n")
            c.misdeal_determination(text.startswith("y"))
        elif prompt.need == "close_round":
            self._ask("Settle the wagers, then press Enter to close the round: ")
            c.close_round()
        elif prompt.need == "new_deck":
            text = self._ask(f"{prompt.message} Is it a different deck? (y/n): ")
            if text.strip().lower().startswith("y"):
                c.confirm_new_deck()
            else:
                raise ValueError("remove that deck and load a different one")
        elif prompt.need == "attendant_clear":
            name = self._ask(f"{prompt.message} Attendant, your id to clear the fault: ")
            if not name.strip():
                raise ValueError("an attendant id is required to clear a fault")
            c.clear_fault(name.strip())


def parse_positions(text: str) -> frozenset[int]:
    try:
        positions = frozenset(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a list of positions like 2,4,5") from None
    bad = sorted(p for p in positions if not 2 <= p <= 7)
    if bad:
        raise ValueError(f"position {bad[0]} cannot wager: player positions are 2..7")
    return positions


def parse_dice(text: str) -> tuple[int, int, int]:
    try:
        dice = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise ValueError(f"{text!r} is not three dice like 3,4,5") from None
    if len(dice) != 3 or not all(1 <= d <= 6 for d in dice):
        raise ValueError(f"{text!r} is not three dice, each 1..6 (e.g. 3,4,5)")
    return dice[0], dice[1], dice[2]
