"""The virtual croupier: the hands at the table that load decks, pull cards, take decks out,
press buttons.

It acts only through the shoe's physical controls (load a deck, pull a card, take the deck
out, close the door, clear a jam, press a button), at ``pace`` seconds per card, and never
faster than the shoe's gate allows, except for a scripted ``early_draw``. Like a croupier
it reads the shoe's display: when the table asks for the deck (or the rest of the stub) to
come out, it takes it out, and then loads the next one (``autoload``).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from firmware_protocol import Button, Card, GateMode
from shoe_controller.simulator.deck import build_deck
from shoe_controller.simulator.faults import CardFault
from shoe_controller.simulator.options import DeckVariant, SimOptions

if TYPE_CHECKING:
    from shoe_controller.simulator.shoe import SimulatedShoe

# A step at pace 0 pulls at most a whole deck and a few other actions; the bound only
# guards against a bug turning into an endless loop.
_MAX_ACTIONS_PER_STEP = 1000
#: What the shoe's display shows when the table asks the hands at the shoe to take the deck
#: out (after a void, a deck that must leave the table) or the rest of the stub (a shoe
#: whose gate locked at the deck's last card with cards still in it).
REMOVAL_REQUESTS = ("REMOVE DECK", "TAKE OUT STUB")


class VirtualCroupier:
    def __init__(self, options: SimOptions, rng: random.Random) -> None:
        self._options = options
        self._rng = rng
        self.decks_loaded = 0
        #: Earliest time of the next card pulled or deck loaded (the pace).
        self._ready_at = 0.0
        #: Scripted presses for the current deck: (time, button), in time order.
        self._presses: list[tuple[float, Button]] = []
        #: The deck was taken out for the request the display shows still: the next deck
        #: that goes in stays until the display asks again.
        self._removed_for_request = False

    def next_deck(self) -> list[Card]:
        first = self.decks_loaded == 0
        variant = (
            self._options.deck if first or self._options.repeat_variant else DeckVariant.STANDARD
        )
        return build_deck(variant, self._rng)

    def step(self, shoe: SimulatedShoe, now: float) -> None:
        for _ in range(_MAX_ACTIONS_PER_STEP):
            if not self._act(shoe, now):
                return
        raise RuntimeError("the virtual croupier did not settle")

    def _act(self, shoe: SimulatedShoe, now: float) -> bool:
        if shoe.stalled:
            return False
        if self._presses and self._presses[0][0] <= now:
            shoe.press(self._presses.pop(0)[1])
            return True
        if shoe.jammed:
            if now >= shoe.jammed_at + self._options.jam_for:
                shoe.clear_jam()
                return True
            return False
        if shoe.door_open:
            if now >= shoe.door_opened_at + self._options.door_for:
                shoe.close_door()
                return True
            return False
        if not self._asked_to_remove(shoe):
            self._removed_for_request = False
        if now < self._ready_at or not self._wants_to_act(shoe):
            return False
        if self._removal_due(shoe):
            shoe.remove_deck()
            self._removed_for_request = True
        elif not shoe.deck_present:
            self._load(shoe, now)
        elif self._early_draw_now(shoe):
            shoe.pull_card(force=True)
        elif not shoe.pull_card() and not shoe.jammed:
            return False
        self._ready_at = now + self._options.pace
        return True

    def _wants_to_act(self, shoe: SimulatedShoe) -> bool:
        if not shoe.deck_present:
            first = self.decks_loaded == 0
            return first or (self._options.autoload and shoe.gate is GateMode.LOCKED)
        return self._early_draw_now(shoe) or shoe.gate_allows or self._removal_due(shoe)

    def _asked_to_remove(self, shoe: SimulatedShoe) -> bool:
        return shoe.display in REMOVAL_REQUESTS

    def _removal_due(self, shoe: SimulatedShoe) -> bool:
        """The display asks for the deck to come out, it is in, and was not taken out for
        this request already (the one loaded since stays); with ``autoload`` only, as the
        croupier who loads the next deck is the one who takes the last one out."""
        return (
            self._options.autoload
            and shoe.deck_present
            and shoe.gate is GateMode.LOCKED
            and self._asked_to_remove(shoe)
            and not self._removed_for_request
        )

    def _early_draw_now(self, shoe: SimulatedShoe) -> bool:
        return shoe.gate is GateMode.LOCKED and shoe.fault_pending(
            CardFault.EARLY_DRAW, shoe.next_card_number
        )

    def _load(self, shoe: SimulatedShoe, now: float) -> None:
        shoe.load_deck(self.next_deck())
        self.decks_loaded += 1
        self._presses = sorted(
            ((now + press.after, press.button) for press in self._options.buttons),
            key=lambda p: p[0],
        )

    def next_deadline(self, shoe: SimulatedShoe) -> float | None:
        if shoe.stalled:
            return None
        times = []
        if self._presses:
            times.append(self._presses[0][0])
        if shoe.jammed:
            times.append(shoe.jammed_at + self._options.jam_for)
        elif shoe.door_open:
            times.append(shoe.door_opened_at + self._options.door_for)
        elif self._wants_to_act(shoe):
            times.append(self._ready_at)
        return min(times, default=None)
