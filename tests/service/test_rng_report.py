"""Rule B1: the controller's start-position generator, its chi-square report and the
p-value the standard library computes."""

from __future__ import annotations

import itertools
import math

import pytest

from shoe_controller.errors import ConfigError
from shoe_controller.procedure import StartMethod, StartPositionSet, TableRules, draw_rng
from shoe_controller.procedure import start as start_module
from shoe_controller.procedure.authority import Person, Role
from shoe_controller.service.rng_report import (
    ALPHA,
    chi_square_p_value,
    chi_square_statistic,
    rng_report,
)
from tests.procedure.table_driver import Table, of_type

pytestmark = pytest.mark.rule("B1")

# Critical values of the chi-square distribution (any statistics table): for each degrees
# of freedom, the statistic whose upper tail is 0.05, 0.01 and 0.001.
CRITICAL = {
    1: (3.841, 6.635, 10.828),
    2: (5.991, 9.210, 13.816),
    3: (7.815, 11.345, 16.266),
    4: (9.488, 13.277, 18.467),
    5: (11.070, 15.086, 20.515),
    6: (12.592, 16.812, 22.458),
    7: (14.067, 18.475, 24.322),
    8: (15.507, 20.090, 26.124),
    9: (16.919, 21.666, 27.877),
}


class Cycle:
    """A source that gives 0, 1, ..., n-1 in turn: exactly uniform counts."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def randbelow(self, bound: int, /) -> int:
        self.calls.append(bound)
        return (len(self.calls) - 1) % bound


class Biased:
    """A generator that favours one position a little: 1 draw in ``every`` gives it."""

    def __init__(self, favourite: int, every: int) -> None:
        self.favourite = favourite
        self.every = every
        self._n = itertools.count()

    def randbelow(self, bound: int, /) -> int:
        n = next(self._n)
        if n % self.every == 0:
            return self.favourite
        return n % bound


def _tail_by_integration(x: float, df: int) -> float:
    """P(X >= x) by integrating the chi-square density numerically: independent of the
    closed form under test."""
    k = df / 2.0

    def density(t: float) -> float:
        if t <= 0.0:
            return 0.0
        return math.exp((k - 1) * math.log(t) - t / 2 - k * math.log(2) - math.lgamma(k))

    upper, steps = x + 400.0, 200_000  # even number of steps for Simpson's rule
    h = (upper - x) / steps
    total = density(x) + density(upper)
    for i in range(1, steps):
        total += (4 if i % 2 else 2) * density(x + i * h)
    return total * h / 3


@pytest.mark.parametrize("df", sorted(CRITICAL))
def test_the_p_value_of_the_tables_critical_values(df: int) -> None:
    for value, tail in zip(CRITICAL[df], (0.05, 0.01, 0.001), strict=True):
        assert chi_square_p_value(value, df) == pytest.approx(tail, rel=2e-3)


@pytest.mark.parametrize("df", [1, 2, 3, 6, 7])
@pytest.mark.parametrize("x", [0.4, 2.0, 6.5, 15.0, 40.0])
def test_the_closed_form_agrees_with_the_density_integrated(df: int, x: float) -> None:
    assert chi_square_p_value(x, df) == pytest.approx(_tail_by_integration(x, df), rel=1e-6)


def test_six_degrees_of_freedom_is_the_short_formula() -> None:
    for x in (0.1, 3.0, 12.592, 50.0):
        y = x / 2
        assert chi_square_p_value(x, 6) == pytest.approx(math.exp(-y) * (1 + y + y * y / 2))


def test_the_p_value_at_the_ends() -> None:
    assert chi_square_p_value(0.0, 6) == 1.0
    assert chi_square_p_value(1e9, 6) == 0.0  # no overflow, no error
    assert chi_square_p_value(1e9, 7) == 0.0
    with pytest.raises(ValueError):
        chi_square_p_value(1.0, 0)
    with pytest.raises(ValueError):
        chi_square_p_value(float("nan"), 6)


def test_the_statistic() -> None:
    assert chi_square_statistic([10, 10, 10]) == 0.0
    # Expected 10 each: (5^2 + 5^2 + 0) / 10.
    assert chi_square_statistic([15, 5, 10]) == pytest.approx(5.0)


def test_exactly_uniform_draws_pass_with_p_one() -> None:
    source = Cycle()
    report = rng_report(7_000, source=source)
    assert report.counts == (1000,) * 7
    assert report.chi_square == 0.0 and report.p_value == 1.0 and report.passed
    # Every draw is one call of the source for a number below the table's 7 positions.
    assert source.calls == [7] * 7_000


def test_a_biased_generator_fails() -> None:
    # Position 3 comes up one draw in 20 more often than the others: 5% of the draws.
    report = rng_report(70_000, source=Biased(favourite=2, every=20))
    assert report.counts[2] > max(c for i, c in enumerate(report.counts) if i != 2)
    assert report.p_value < ALPHA
    assert not report.passed


def test_a_generator_stuck_on_one_position_fails() -> None:
    class Stuck:
        def randbelow(self, bound: int, /) -> int:
            return 0

    report = rng_report(35, source=Stuck())
    assert report.counts == (35, 0, 0, 0, 0, 0, 0)
    assert report.p_value < 1e-20 and not report.passed


def test_the_report_draws_with_the_procedures_own_function() -> None:
    """What the report counts is what a round's start by the controller's generator gives."""

    class Fixed:
        def __init__(self, value: int) -> None:
            self.value = value

        def randbelow(self, bound: int, /) -> int:
            return self.value

    for value in range(7):
        report = rng_report(35, source=Fixed(value))
        # A table without the dice wager, which only the dice may start (B2).
        table = Table(TableRules(), seed=3)
        table.approve()
        table.load()
        table.procedure.no_more_bets([2], by=Person("ana", Role.DEALER))
        [started] = of_type(
            table.procedure.start_by_rng(Fixed(value), by=Person("ana", Role.DEALER)),
            StartPositionSet,
        )
        assert started.start == draw_rng(Fixed(value))
        assert started.start.method is StartMethod.CONTROLLER_RNG
        assert report.counts[started.start.position - 1] == 35


def test_the_default_source_is_the_secrets_module(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    class FakeSecrets:
        @staticmethod
        def randbelow(bound: int) -> int:
            calls.append(bound)
            return 6

    monkeypatch.setattr(start_module, "secrets", FakeSecrets)
    report = rng_report(35)
    assert calls == [7] * 35 and report.counts[6] == 35


def test_the_real_generator_gives_every_position() -> None:
    # Not a statistical judgement (that would fail one run in a thousand): the real source
    # is reached and gives positions 1..7 only.
    report = rng_report(700)
    assert sum(report.counts) == 700 and len(report.counts) == 7
    assert 0.0 <= report.p_value <= 1.0


def test_progress_is_reported_each_hundredth() -> None:
    seen: list[tuple[int, int]] = []
    rng_report(700, source=Cycle(), progress=lambda done, total: seen.append((done, total)))
    assert len(seen) == 100 and seen[-1] == (700, 700)


@pytest.mark.parametrize("draws", [0, 34, 100_000_001])
def test_a_number_of_draws_the_test_cannot_judge_is_refused(draws: int) -> None:
    with pytest.raises(ConfigError, match="35 to 100000000"):
        rng_report(draws)


def test_an_alpha_that_is_no_probability_is_refused() -> None:
    with pytest.raises(ConfigError, match="probability"):
        rng_report(70, alpha=1.5)
