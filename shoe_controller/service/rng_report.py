"""The start-position generator's evidence for a laboratory (rule B1).

:func:`rng_report` draws the starting position ``draws`` times with
:func:`shoe_controller.procedure.start.draw_rng`, the very function the procedure calls for
a start by the controller's own generator, counts each position, and tests the counts for
uniformity with Pearson's chi-square goodness-of-fit test: with k positions and n draws,
each expected n / k times,

    X^2 = sum over positions of (observed - n / k)^2 / (n / k),   k - 1 degrees of freedom.

The p-value is the chi-square distribution's upper tail P(X^2 >= x), the regularized upper
incomplete gamma function Q(df / 2, x / 2). Its first argument is a whole or half-whole
number, for which Q has a closed form, so the standard library computes it (no SciPy on
the box); with y = x / 2:

    df = 2s:      Q(s, y)       = e^-y * sum_{i=0}^{s-1} y^i / i!
    df = 2s + 1:  Q(s + 1/2, y) = erfc(sqrt y) + e^-y * sum_{i=1}^{s} y^(i-1/2) / Gamma(i + 1/2)

For the 7 positions of Pai Gow Poker, df = 6: p = e^-y (1 + y + y^2 / 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from shoe_controller.errors import ConfigError
from shoe_controller.procedure.start import RandomSource, draw_rng

#: Below this p-value the counts are evidence against a uniform generator. A sound generator
#: falls below it in one run of a thousand: a report that fails is run again, and a
#: generator that fails again is not uniform.
ALPHA: Final = 0.001
#: Draws a report makes unless told otherwise: ten thousand expected for each of 7 positions.
DEFAULT_DRAWS: Final = 70_000
#: The chi-square approximation holds when every position is expected at least this often.
MIN_EXPECTED: Final = 5
#: More draws than any laboratory asks for (hours of work): refused as a typing slip.
MAX_DRAWS: Final = 100_000_000

#: What the procedure's generator draws from when no source is injected.
GENERATOR: Final = (
    "shoe_controller.procedure.start.draw_rng over secrets.randbelow "
    "(the operating system's cryptographic source)"
)


@dataclass(frozen=True, slots=True)
class RngReport:
    """The counts of ``draws`` starting positions and their chi-square test."""

    draws: int
    #: How many times each position 1..k was drawn (index 0 is position 1).
    counts: tuple[int, ...]
    chi_square: float
    p_value: float
    alpha: float

    @property
    def positions(self) -> int:
        return len(self.counts)

    @property
    def degrees_of_freedom(self) -> int:
        return self.positions - 1

    @property
    def expected(self) -> float:
        return self.draws / self.positions

    @property
    def passed(self) -> bool:
        """No evidence against uniformity at ``alpha``."""
        return self.p_value >= self.alpha


def chi_square_statistic(counts: tuple[int, ...] | list[int]) -> float:
    """Pearson's X^2 of ``counts`` against equal expected counts."""
    total = sum(counts)
    if not counts or total <= 0:
        raise ValueError("the chi-square statistic needs at least one draw")
    expected = total / len(counts)
    return sum((observed - expected) ** 2 for observed in counts) / expected


def chi_square_p_value(statistic: float, degrees_of_freedom: int) -> float:
    """P(X^2 >= ``statistic``) for the chi-square distribution with ``degrees_of_freedom``
    (a whole number from 1), by the closed forms of the module's docstring."""
    if type(degrees_of_freedom) is not int or degrees_of_freedom < 1:
        raise ValueError(
            f"degrees of freedom must be a whole number from 1, not {degrees_of_freedom!r}"
        )
    if math.isnan(statistic):
        raise ValueError("the chi-square statistic is not a number")
    if statistic <= 0.0:
        return 1.0
    y = statistic / 2.0
    half, odd = divmod(degrees_of_freedom, 2)
    if odd:
        tail = math.erfc(math.sqrt(y))
        # Each term in logarithms, so that a large statistic neither overflows y^i nor
        # underflows e^-y before the product is taken.
        terms = (
            math.exp((i - 0.5) * math.log(y) - y - math.lgamma(i + 0.5)) for i in range(1, half + 1)
        )
    else:
        tail = 0.0
        terms = (math.exp(i * math.log(y) - y - math.lgamma(i + 1)) for i in range(half))
    return min(1.0, max(0.0, tail + math.fsum(terms)))


def rng_report(
    draws: int = DEFAULT_DRAWS,
    *,
    positions: int = 7,
    source: RandomSource | None = None,
    alpha: float = ALPHA,
    progress: Callable[[int, int], None] | None = None,
) -> RngReport:
    """Draw the starting position ``draws`` times as the procedure does (``source``: the
    generator's random source, the operating system's cryptographic source by default;
    tests inject theirs) and test the counts. ``progress(done, draws)`` is told about every
    hundredth of the way. A number of draws too small for the test, or absurdly large, is
    a ConfigError saying what to give."""
    least = MIN_EXPECTED * positions
    if type(draws) is not int or not least <= draws <= MAX_DRAWS:
        raise ConfigError(
            f"--draws {draws!r} is not a number of draws the test can judge: give {least} to "
            f"{MAX_DRAWS} (each of the {positions} positions is expected at least "
            f"{MIN_EXPECTED} times; {DEFAULT_DRAWS} is the default)"
        )
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"--alpha {alpha!r} is not a probability between 0 and 1")
    counts = [0] * positions
    step = max(draws // 100, 1)
    for done in range(1, draws + 1):
        counts[draw_rng(source, positions=positions).position - 1] += 1
        if progress is not None and done % step == 0:
            progress(done, draws)
    statistic = chi_square_statistic(counts)
    return RngReport(
        draws=draws,
        counts=tuple(counts),
        chi_square=statistic,
        p_value=chi_square_p_value(statistic, positions - 1),
        alpha=alpha,
    )
