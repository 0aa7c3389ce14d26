"""Through the service: the clock's synchronisation read at start and again while it runs
(a notice, journaled and published, E3); a profile that wants it synchronised before the
first round; the decks removed with a known defect remembered across a restart (D3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from firmware_protocol import Card
from shoe_controller.errors import ProcedureError
from shoe_controller.journal.records import Kind
from shoe_controller.procedure import TableRules
from shoe_controller.procedure.core import DECK_MEMORY
from shoe_controller.procedure.record import Defect
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.service.controller import CLOCK_CHECK_INTERVAL, TableController
from shoe_controller.service.journaling import carry_from
from shoe_controller.service.provenance import ClockState
from shoe_controller.simulator.transport import switch_off
from tests.journal.helpers import FakeClock, open_journal
from tests.service.helpers import DEALER, WAIT, Recorder

SIM = "sim://?seed=51&pace=0"


class Clocks:
    """A monotonic clock the test moves, and the clock's synchronisation it tells."""

    def __init__(self, *states: bool | None) -> None:
        self.now = 100.0
        self.states = list(states)
        self.reads = 0

    def monotonic(self) -> float:
        return self.now

    def sync(self) -> ClockState:
        state = self.states[min(self.reads, len(self.states) - 1)]
        self.reads += 1
        return ClockState(state, "adjtimex")


def _controller(tmp_path: Path, clocks: Clocks, config: Config | None = None) -> TableController:
    return TableController(
        config or Config(),
        journal_path=tmp_path / "journal.sqlite3",
        device=SIM,
        monotonic=clocks.monotonic,
        clock_sync=clocks.sync,
    )


def _notices(rec: Recorder) -> list[str]:
    return [e.code for e in rec.of(ev.NoticeEvent) if isinstance(e, ev.NoticeEvent)]


@pytest.mark.rule("E3")
def test_a_clock_that_loses_its_synchronisation_is_a_notice(tmp_path: Path) -> None:
    clocks = Clocks(True, False, True)
    controller = _controller(tmp_path, clocks)
    rec = Recorder()
    controller.subscribe(rec)
    controller.start()
    try:
        rec.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
        assert _notices(rec) == []
        clocks.now += CLOCK_CHECK_INTERVAL
        # Any input wakes the loop, which reads the clock once the interval is over.
        controller.record_access("probe", user="t", role=None, accepted=True).result(WAIT)
        rec.wait_for(lambda _: _notices(rec) == ["clock_unsynchronized"])
        clocks.now += CLOCK_CHECK_INTERVAL
        controller.record_access("probe", user="t", role=None, accepted=True).result(WAIT)
        rec.wait_for(lambda _: _notices(rec) == ["clock_unsynchronized", "clock_synchronized"])
    finally:
        controller.stop()
        switch_off(SIM)
    assert clocks.reads == 3


@pytest.mark.rule("E3")
def test_the_profile_may_want_a_synchronised_clock_before_the_first_round(
    tmp_path: Path,
) -> None:
    clocks = Clocks(False, True)
    config = Config(table=TableRules(require_synchronized_clock=True))
    controller = _controller(tmp_path, clocks, config)
    rec = Recorder()
    controller.subscribe(rec)
    controller.start()
    try:
        rec.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
        assert _notices(rec) == ["clock_unsynchronized"]
        with pytest.raises(ProcedureError, match=r"before the first round.*\(E3\)$"):
            controller.confirm_shuffle(actor=DEALER).result(timeout=WAIT)
        clocks.now += CLOCK_CHECK_INTERVAL
        controller.record_access("probe", user="t", role=None, accepted=True).result(WAIT)
        controller.confirm_shuffle(actor=DEALER).result(timeout=WAIT)
        assert controller.phase.value == "deck_loaded"
    finally:
        controller.stop()
        switch_off(SIM)


@pytest.mark.rule("D3")
def test_the_decks_removed_with_a_defect_are_read_back_for_a_day(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    clock = FakeClock()
    with open_journal(path, clock) as journal:
        journal.append(
            Kind.DECK_DEFECT,
            {"cards": {"missing": ["7H"], "duplicated": ["QS"], "foreign": []}, "returned": None},
        )
        at = clock.wall()
        [removed] = carry_from(journal, at + 60).removed_decks
        assert removed.defect == Defect(
            missing=frozenset({Card.parse("7H")}), duplicated=frozenset({Card.parse("QS")})
        )
        assert removed.at is not None and at - 1 < removed.at < at
        assert carry_from(journal, at + DECK_MEMORY + 60).removed_decks == ()


@pytest.mark.rule("D2")
@pytest.mark.rule("D3")
def test_a_deck_put_back_after_it_left_the_table_is_refused(tmp_path: Path) -> None:
    """On the simulator: a deck with a card twice leaves the table at the duplicate; the
    same deck, reshuffled, put back and confirmed by a supervisor as different, is refused
    as the removed deck when its duplicate comes out again."""
    from shoe_controller.cli.croupier import Script
    from shoe_controller.simulator.transport import runner_at
    from tests.service.helpers import start_table

    device = "sim://?seed=5&pace=0&deck=duplicate&autoload=0"
    script = Script(wagers=frozenset({2}), attendant="att-1")
    controller, rec = start_table(tmp_path, device=device, script=script)
    try:
        rec.wait_for(lambda es: any(isinstance(e, ev.FaultEvent) for e in es))
        runner = runner_at(device)
        assert runner is not None
        with runner.locked() as shoe:
            first = [d.card for d in shoe.draws] + list(shoe._cards)
            shoe.remove_deck()
        rec.wait_for(lambda es: any(getattr(e, "need", "") == "remove_deck" for e in es))
        reshuffled = sorted(first, key=lambda card: card.text)
        with runner.locked() as shoe:
            shoe.load_deck(reshuffled)
        rec.wait_for(
            lambda es: len([e for e in es if isinstance(e, ev.FaultEvent)]) >= 2, timeout=WAIT
        )
    finally:
        controller.stop()
        switch_off(device)
    faults = [e.code for e in rec.of(ev.FaultEvent) if isinstance(e, ev.FaultEvent)]
    assert faults[:2] == ["composition", "deck_returned"]
