"""The virtual croupier: decks loaded, the pace of the cards, buttons pressed."""

from __future__ import annotations

from collections import Counter

from firmware_protocol import (
    DECK_53,
    AckEvents,
    Button,
    ButtonPressed,
    CardDrawn,
    DeckLoaded,
    GateMode,
    SetGate,
)
from tests.simulator.bench import Bench, messages

QUIET = "heartbeat=1000"


def empty_and_lock(bench: Bench, seq: int) -> None:
    bench.send(SetGate(GateMode.DEAL, 0), seq=seq)
    bench.send(SetGate(GateMode.LOCKED), seq=seq + 1)


def test_the_next_deck_is_loaded_when_the_shoe_is_empty_and_locked() -> None:
    bench = Bench(QUIET)
    bench.send(SetGate(GateMode.DEAL, 0), seq=2)
    assert bench.shoe.cards_left == 0 and bench.shoe.decks_loaded == 1
    bench.advance(1)
    assert bench.shoe.decks_loaded == 1  # the gate is still open
    bench.send(SetGate(GateMode.LOCKED), seq=3)
    assert bench.shoe.decks_loaded == 2 and bench.shoe.cards_left == 53
    assert [m for _, m in bench.shoe.events].count(DeckLoaded()) == 2
    assert bench.shoe.deck_number == 2 and bench.shoe.draw_index == 0


def test_autoload_off_leaves_the_shoe_empty() -> None:
    bench = Bench(f"autoload=0&{QUIET}")
    empty_and_lock(bench, 2)
    bench.advance(10)
    assert bench.shoe.decks_loaded == 1 and not bench.shoe.deck_present


def test_the_variant_applies_to_the_first_deck_only() -> None:
    bench = Bench(f"deck=short&{QUIET}")
    empty_and_lock(bench, 2)
    empty_and_lock(bench, 4)
    by_deck = Counter(d.deck for d in bench.shoe.draws)
    assert by_deck == {1: 52, 2: 53}
    second = [d.card for d in bench.shoe.draws if d.deck == 2]
    assert Counter(second) == Counter(DECK_53)


def test_repeat_variant_applies_it_to_every_deck() -> None:
    bench = Bench(f"deck=long&repeat_variant=1&{QUIET}")
    empty_and_lock(bench, 2)
    empty_and_lock(bench, 4)
    assert Counter(d.deck for d in bench.shoe.draws) == {1: 54, 2: 54}


def test_decks_differ_but_follow_the_seed() -> None:
    def two_decks(seed: int) -> list[list[str]]:
        bench = Bench(f"seed={seed}&{QUIET}")
        empty_and_lock(bench, 2)
        empty_and_lock(bench, 4)
        return [[d.card.text for d in bench.shoe.draws if d.deck == n] for n in (1, 2)]

    first, second = two_decks(9)
    assert first != second
    assert two_decks(9) == [first, second]


def test_pace_spaces_the_cards() -> None:
    bench = Bench(f"pace=0.5&{QUIET}")
    bench.send(AckEvents(1), seq=0)
    bench.advance(2)  # loading the deck took the croupier one pace
    start = bench.now
    bench.send(SetGate(GateMode.DEAL, 3), seq=2)
    times = [0.0]
    assert bench.shoe.draw_index == 1
    for _ in range(8):
        before = bench.shoe.draw_index
        bench.advance(0.125)
        if bench.shoe.draw_index > before:
            times.append(bench.now - start)
    assert times == [0.0, 0.5, 1.0]


def test_scripted_buttons_are_pressed_after_each_deck() -> None:
    bench = Bench(f"buttons=no_more_bets@0,confirm@0.5&{QUIET}")
    assert messages(bench.take(), ButtonPressed) == [ButtonPressed(Button.NO_MORE_BETS)]
    bench.send(AckEvents(2), seq=0)
    assert bench.shoe.next_deadline() == bench.now + 0.5
    bench.advance(0.5)
    assert messages(bench.take(), ButtonPressed) == [ButtonPressed(Button.CONFIRM)]
    empty_and_lock(bench, 2)
    bench.advance(0.5)
    presses = [m for _, m in bench.shoe.events if isinstance(m, ButtonPressed)]
    assert presses == [ButtonPressed(b) for b in [Button.NO_MORE_BETS, Button.CONFIRM] * 2]


def test_press_is_a_button_event() -> None:
    bench = Bench(QUIET)
    bench.take()
    bench.shoe.press(Button.CALL_ATTENDANT)
    (packet,) = bench.advance(0)
    assert packet.message == ButtonPressed(Button.CALL_ATTENDANT)
    assert not isinstance(packet.message, CardDrawn)
