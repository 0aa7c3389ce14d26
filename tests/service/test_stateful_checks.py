"""The stateful test's own checks, held to cases made by hand: what they demand of the
journal must be what the link can know when they look (tests/service/stateful_checks.py)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

from firmware_protocol import Button
from shoe_controller.procedure import TableRules
from shoe_controller.service.config import Config
from tests.service.stateful_checks import JournalCheck
from tests.service.stateful_table import StatefulTable
from tests.service.test_stateful import DEALER, TableStateMachine

#: A serial number of its own (MT90001), apart from the stateful test's examples.
EXAMPLE = 90001


@pytest.fixture
def table(tmp_path: Path) -> Iterator[StatefulTable]:
    table = StatefulTable(tmp_path, EXAMPLE, 7, Config(table=TableRules()), line_faults=False)
    try:
        table.start()
        yield table
    finally:
        table.close()


def lose_on_the_line(table: StatefulTable) -> None:
    """What the shoe has put on the wire and the link has not read yet is lost."""
    with table.shoe() as shoe:
        assert shoe.data_to_send(), "nothing was on the wire"


@pytest.mark.rule("F2")
@pytest.mark.rule("E3")
def test_a_loss_is_due_once_the_shoe_has_told_the_link(table: StatefulTable) -> None:
    """F2: "If they are lost (the shoe restarted), the round is void." The shoe restarts
    without keeping an event whose frame the line lost, and the line loses its Hello too:
    the shoe answers the link's commands at once, but only its next Heartbeat, which names
    the oldest event it holds, can tell the link that the event is lost. The check demands
    the loss in the journal from that frame on, not before; and then it does."""
    check = JournalCheck(table)
    assert check.check() == []
    with table.shoe() as shoe:
        shoe.press(Button.CALL_ATTENDANT)
        lost = shoe.last_event_seq
    lose_on_the_line(table)
    table.settle()
    assert check.check() == []
    with table.shoe() as shoe:
        shoe.options = shoe.options.with_changes(persist=False)
        shoe.reboot()
    lose_on_the_line(table)  # its Hello
    table.settle()
    assert table.heard(), "the restarted shoe answers the link"
    assert table.truth.lost == {lost}
    assert check.check() == []
    assert table.told("first") <= lost, "no frame told the link of the loss yet"

    table.time_passes(1.0)  # the shoe's first Heartbeat since it restarted
    assert table.told("first") > lost
    assert check.check() == []
    assert check.reported_lost["first"] == 1, "the link reported the loss, journaled"

    # And a journal without that report breaks F2 once the shoe has told the link.
    check.reported_lost.clear()
    assert check.unreported_losses(check.truths(), "first") == [
        f"F2: shoe first said it no longer holds events [{lost}], never journaled, and the "
        "journal reports 0 lost"
    ]


@pytest.mark.rule("F1")
def test_a_refused_input_is_not_blamed_for_an_event_the_line_delayed() -> None:
    """A refused input changes nothing (the procedure's table of inputs). An event whose
    frame the line lost comes again with time, whenever that is, and may come while an
    input is given and refused: what it changes is the shoe's doing, not the input's."""
    machine = TableStateMachine()
    machine.set_up(seed=7, dice_wager=False, record_unknown=False, line_faults=False, warmup=0)
    try:
        table = machine.table
        with table.shoe() as shoe:
            shoe.remove_deck()
        lose_on_the_line(table)
        table.settle()
        assert machine.problems() == []
        phase = table.controller.phase

        def close_round_meanwhile() -> Future[None]:
            table.time_passes(1.0)  # the shoe sends its event again
            return table.controller.close_round(actor=DEALER)

        assert not machine._input("close_round", close_round_meanwhile)
        assert table.controller.phase is not phase, "the shoe's event came meanwhile"
    finally:
        machine.broken = True  # no round to deal here: the teardown only cleans up
        machine.teardown()
