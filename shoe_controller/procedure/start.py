"""The starting position (rule B1): from three dice or from a random number 1..N.

The returned :class:`StartPosition` keeps the method and the raw values for the record.

The controller's own generator, :func:`draw_rng`, draws with :func:`secrets.randbelow`:
the operating system's cryptographic source, which no seed reproduces and no earlier draw
predicts. Tests inject a source of their own (anything with ``randbelow``).
``shoe-diag rng-report`` runs this same function to give a laboratory its frequencies.
"""

from __future__ import annotations

import enum
import secrets
from dataclasses import dataclass
from typing import Protocol

from shoe_controller.procedure import refusals

DIE_FACES = 6


class StartMethod(enum.StrEnum):
    DICE = "dice"
    #: The controller's own generator (the operating system's cryptographic source).
    CONTROLLER_RNG = "controller_rng"
    #: An external approved generator whose number the croupier entered.
    EXTERNAL_RNG = "external_rng"


@dataclass(frozen=True, slots=True)
class StartPosition:
    method: StartMethod
    #: The three dice, or the one number the generator gave.
    raw: tuple[int, ...]
    position: int


class RandomSource(Protocol):
    """Anything with ``randbelow`` like the :mod:`secrets` module (the default)."""

    def randbelow(self, exclusive_upper_bound: int, /) -> int: ...


def start_from_dice(d1: int, d2: int, d3: int, *, positions: int = 7) -> StartPosition:
    """Count the total around the table from the banker as 1: k = ((T - 1) mod N) + 1."""
    dice = (d1, d2, d3)
    for number, value in enumerate(dice, start=1):
        if type(value) is not int or not 1 <= value <= DIE_FACES:
            raise refusals.not_a_die(number, value, DIE_FACES).error()
    total = sum(dice)
    return StartPosition(StartMethod.DICE, dice, (total - 1) % positions + 1)


def start_from_rng(
    number: int, *, positions: int = 7, method: StartMethod = StartMethod.EXTERNAL_RNG
) -> StartPosition:
    """Take a generator's number 1..N as the starting position itself."""
    if method is StartMethod.DICE:
        raise ValueError("start_from_rng takes a generator method, not dice")
    if type(number) is not int or not 1 <= number <= positions:
        raise refusals.not_a_generator_number(number, positions).error()
    return StartPosition(method, (number,), number)


def draw_rng(source: RandomSource | None = None, *, positions: int = 7) -> StartPosition:
    """Draw the starting position from ``source`` (default: :mod:`secrets`, the operating
    system's cryptographic source): ``randbelow(positions) + 1``."""
    value = (source if source is not None else secrets).randbelow(positions) + 1
    return start_from_rng(value, positions=positions, method=StartMethod.CONTROLLER_RNG)
