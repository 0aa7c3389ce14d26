"""The in-process simulator's croupier takes the deck out when the table asks for it on the
shoe's display, and loads the next one: no outcome that asks for the deck's removal strands
a simulated table (F6)."""

from __future__ import annotations

import pytest

from firmware_protocol import GateMode, SetDisplay, encode_frame
from shoe_controller.procedure import prompts
from shoe_controller.simulator.croupier import REMOVAL_REQUESTS
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.shoe import SimulatedShoe

pytestmark = pytest.mark.rule("F6")


def test_the_croupier_reads_what_the_procedure_displays() -> None:
    assert set(REMOVAL_REQUESTS) == {prompts.DISPLAY_REMOVE_DECK, prompts.DISPLAY_TAKE_OUT_STUB}


def _display(shoe: SimulatedShoe, text: str, now: float, seq: int) -> None:
    shoe.receive_data(encode_frame(SetDisplay(text), seq), now)


@pytest.mark.parametrize("request_text", REMOVAL_REQUESTS)
def test_asked_on_the_display_the_croupier_takes_the_deck_out_then_loads_the_next(
    request_text: str,
) -> None:
    shoe = SimulatedShoe(SimOptions(pace=0.0))
    shoe.tick(0.0)
    assert shoe.deck_present and shoe.decks_loaded == 1 and shoe.gate is GateMode.LOCKED
    _display(shoe, request_text, 1.0, 1)
    # Taken out, and the next deck loaded: it stays, though the display still asks.
    assert shoe.deck_present and shoe.decks_loaded == 2
    shoe.tick(2.0)
    shoe.tick(3.0)
    assert shoe.deck_present and shoe.decks_loaded == 2
    removals = [m for _, m in shoe.events if type(m).__name__ == "DeckRemoved"]
    assert len(removals) == 1
    # A new request later is honoured again.
    _display(shoe, "SHUFFLE CHECK", 4.0, 2)
    _display(shoe, request_text, 5.0, 3)
    assert shoe.decks_loaded == 3


def test_without_autoload_the_deck_stays_for_a_person() -> None:
    shoe = SimulatedShoe(SimOptions(pace=0.0, autoload=False))
    shoe.tick(0.0)
    _display(shoe, REMOVAL_REQUESTS[0], 1.0, 1)
    assert shoe.deck_present and shoe.decks_loaded == 1
