"""The decks a croupier loads into the simulated shoe."""

from __future__ import annotations

import random

from firmware_protocol import DECK_53, Card
from shoe_controller.simulator.options import DeckVariant


def build_deck(variant: DeckVariant, rng: random.Random) -> list[Card]:
    """A shuffled deck of ``variant``, in the order the cards leave the shoe.

    ``short`` leaves one card out, ``long`` adds a second copy of one card (a second deck's
    card among ours), ``duplicate`` replaces one card with a copy of another; which cards
    is drawn from ``rng`` like the shuffle.
    """
    cards = list(DECK_53)
    if variant is DeckVariant.SHORT:
        cards.remove(rng.choice(cards))
    elif variant is DeckVariant.LONG:
        cards.append(rng.choice(cards))
    elif variant is DeckVariant.DUPLICATE:
        missing, twice = rng.sample(cards, 2)
        cards[cards.index(missing)] = twice
    rng.shuffle(cards)
    return cards
