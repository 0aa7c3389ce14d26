"""Rule B1: the starting position from three dice or from a random number generator."""

from __future__ import annotations

import itertools
import secrets

import pytest

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import (
    Phase,
    StartMethod,
    StartPositionSet,
    draw_rng,
    start_from_dice,
    start_from_rng,
)
from tests.procedure.people import DEALER

from .table_driver import Table, of_type

pytestmark = pytest.mark.rule("B1")

ALL_DICE = list(itertools.product(range(1, 7), repeat=3))

# The regulation's own examples: 8 and 15 give the banker, 14 gives position 7.
TOTAL_TO_POSITION = [
    (3, 3),
    (4, 4),
    (5, 5),
    (6, 6),
    (7, 7),
    (8, 1),
    (9, 2),
    (10, 3),
    (11, 4),
    (12, 5),
    (13, 6),
    (14, 7),
    (15, 1),
    (16, 2),
    (17, 3),
    (18, 4),
]


@pytest.mark.parametrize(("total", "position"), TOTAL_TO_POSITION)
def test_every_throw_of_a_total_counts_to_its_position(total: int, position: int) -> None:
    throws = [dice for dice in ALL_DICE if sum(dice) == total]
    assert throws
    for dice in throws:
        start = start_from_dice(*dice)
        assert start.position == position
        assert start.raw == dice
        assert start.method is StartMethod.DICE


def test_the_table_covers_every_total_of_three_dice() -> None:
    assert sorted(total for total, _ in TOTAL_TO_POSITION) == sorted({sum(d) for d in ALL_DICE})


@pytest.mark.parametrize(
    ("positions", "total", "position"), [(6, 7, 1), (6, 12, 6), (5, 18, 3), (4, 3, 3)]
)
def test_dice_count_round_a_smaller_table(positions: int, total: int, position: int) -> None:
    dice = next(d for d in ALL_DICE if sum(d) == total)
    assert start_from_dice(*dice, positions=positions).position == position


@pytest.mark.parametrize(
    "dice",
    [(0, 1, 1), (1, 7, 1), (1, 1, -3), (True, 1, 1), (1, 2.0, 1), (1, 1, "6")],
)
def test_a_die_that_is_not_one_to_six_is_rejected(dice: tuple[object, ...]) -> None:
    bad = next(i for i, v in enumerate(dice, start=1) if type(v) is not int or not 1 <= v <= 6)
    with pytest.raises(ProcedureError, match=rf"^die {bad} shows .*1 to 6.*\(B1\)$"):
        start_from_dice(*dice)  # type: ignore[arg-type]


@pytest.mark.parametrize("number", range(1, 8))
def test_a_generator_number_is_the_position(number: int) -> None:
    start = start_from_rng(number)
    assert (start.position, start.raw, start.method) == (
        number,
        (number,),
        StartMethod.EXTERNAL_RNG,
    )


@pytest.mark.parametrize("number", [0, 8, -1, 70, True, 2.5, "3"])
def test_a_generator_number_outside_one_to_seven_is_rejected(number: object) -> None:
    with pytest.raises(ProcedureError, match=r"1 to 7 \(B1\)$"):
        start_from_rng(number)  # type: ignore[arg-type]


class RecordingSource:
    def __init__(self, values: list[int]) -> None:
        self.values = values
        self.bounds: list[int] = []

    def randbelow(self, exclusive_upper_bound: int, /) -> int:
        self.bounds.append(exclusive_upper_bound)
        return self.values.pop(0)


@pytest.mark.parametrize("value", range(7))
def test_the_controller_generator_maps_its_draw_to_a_position(value: int) -> None:
    source = RecordingSource([value])
    start = draw_rng(source)
    assert source.bounds == [7]
    assert (start.position, start.raw, start.method) == (
        value + 1,
        (value + 1,),
        StartMethod.CONTROLLER_RNG,
    )


@pytest.mark.parametrize("value", [-1, 7, 100])
def test_a_source_giving_a_value_out_of_range_is_refused(value: int) -> None:
    with pytest.raises(ProcedureError):
        draw_rng(RecordingSource([value]))


def test_the_default_generator_is_the_operating_system_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []

    def randbelow(bound: int) -> int:
        calls.append(bound)
        return 3

    monkeypatch.setattr(secrets, "randbelow", randbelow)
    assert draw_rng().position == 4
    assert calls == [7]


def _to_bets_closed() -> Table:
    table = Table()
    table.approve()
    table.load()
    table.record(table.procedure.no_more_bets([2], by=DEALER))
    return table


def test_the_procedure_records_the_method_and_raw_values() -> None:
    for set_start, method, raw in [
        (lambda t: t.procedure.start_by_dice(6, 5, 4, by=DEALER), StartMethod.DICE, (6, 5, 4)),
        (lambda t: t.procedure.start_by_external_rng(6, by=DEALER), StartMethod.EXTERNAL_RNG, (6,)),
        (
            lambda t: t.procedure.start_by_rng(RecordingSource([1]), by=DEALER),
            StartMethod.CONTROLLER_RNG,
            (2,),
        ),
    ]:
        table = _to_bets_closed()
        [recorded] = of_type(set_start(table), StartPositionSet)
        assert (recorded.start.method, recorded.start.raw) == (method, raw)
        assert table.phase is Phase.DEALING


def test_a_second_starting_position_is_refused_and_changes_nothing() -> None:
    table = _to_bets_closed()
    table.procedure.start_by_dice(1, 2, 3, by=DEALER)
    table.deal(3)
    with pytest.raises(ProcedureError, match=r"already set; it cannot be set twice \(B1\)"):
        table.procedure.start_by_external_rng(2, by=DEALER)
    source = RecordingSource([0])
    with pytest.raises(ProcedureError, match=r"\(B1\)"):
        table.procedure.start_by_rng(source, by=DEALER)
    assert source.bounds == []  # refused before drawing
    assert table.phase is Phase.DEALING
    assert table.procedure.cards_dealt == 3


def test_a_start_position_for_a_larger_table_is_refused() -> None:
    table = _to_bets_closed()
    big = start_from_rng(9, positions=9)
    with pytest.raises(ProcedureError, match=r"not a position of this table"):
        table.procedure.set_start(big, by=DEALER)
    assert table.phase is Phase.BETS_CLOSED
