"""Decks shuffled from the seed, and the firmware image the simulated shoe runs."""

from __future__ import annotations

import hashlib
import hmac
import random
import subprocess
import sys
from collections import Counter

import pytest

from firmware_protocol import DECK_53
from shoe_controller.simulator import DeckVariant, firmware
from shoe_controller.simulator.deck import build_deck


def test_standard_deck_is_the_53_cards_shuffled() -> None:
    deck = build_deck(DeckVariant.STANDARD, random.Random(1))
    assert Counter(deck) == Counter(DECK_53)
    assert deck != list(DECK_53)


def test_the_seed_decides_the_order() -> None:
    first = build_deck(DeckVariant.STANDARD, random.Random(7))
    assert build_deck(DeckVariant.STANDARD, random.Random(7)) == first
    assert build_deck(DeckVariant.STANDARD, random.Random(8)) != first


@pytest.mark.parametrize("seed", range(20))
def test_variants(seed: int) -> None:
    short = Counter(build_deck(DeckVariant.SHORT, random.Random(seed)))
    assert len(DECK_53) - short.total() == 1 and set(short) < set(DECK_53)
    assert max(short.values()) == 1

    long = Counter(build_deck(DeckVariant.LONG, random.Random(seed)))
    assert long.total() == 54 and set(long) == set(DECK_53)
    assert sorted(long.values())[-1] == 2

    duplicate = Counter(build_deck(DeckVariant.DUPLICATE, random.Random(seed)))
    assert duplicate.total() == 53 and len(duplicate) == 52
    assert sorted(duplicate.values())[-1] == 2


def test_firmware_image_is_stable_and_digested() -> None:
    assert len(firmware.IMAGE) == 32 * 1024
    assert firmware.IMAGE.startswith(b"ES-SIM firmware 1.0.0\n")
    assert hashlib.sha256(firmware.IMAGE).digest() == firmware.DIGEST
    # The same bytes in another interpreter: an operator's file matches every install.
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "from shoe_controller.simulator import firmware; print(firmware.DIGEST.hex())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert other.stdout.strip() == firmware.DIGEST.hex()


def test_keyed_digest_is_hmac_sha256_of_the_image() -> None:
    seed = bytes(range(16))
    expected = hmac.new(seed, firmware.IMAGE, hashlib.sha256).digest()
    assert firmware.keyed_digest(seed) == expected
    assert firmware.keyed_digest(bytes(16)) != expected
    assert firmware.keyed_digest(seed, b"another image") != expected
