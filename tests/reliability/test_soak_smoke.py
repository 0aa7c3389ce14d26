"""The soak, short: its invariants hold over a few dozen rounds with the fault mix, and its
checks catch what they are meant to catch. ``python benchmarks/soak.py`` runs the long one
(docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import soak
from firmware_protocol import CardDrawn
from shoe_controller.cli.croupier import Script

#: Every card fault, the shoe's restarts included.
KINDS = tuple(soak.CARD_FAULTS)


@pytest.mark.rule("E3")
@pytest.mark.rule("F1")
@pytest.mark.rule("F2")
def test_a_short_soak_loses_and_duplicates_nothing() -> None:
    tally, line = soak.soak(30, seed=20261129, segment_rounds=15, kinds=KINDS)
    assert line["ok"], line["problems"]
    assert all(line["invariants"].values())
    assert line["rounds_finished"] >= 30
    assert line["lost"] == line["duplicates"] == line["crashes"] == line["stalls"] == 0
    cards = line["cards"]
    assert cards["acknowledged"] == cards["journaled"] > 30 * 49
    assert sum(line["rounds_by_outcome"].values()) == line["rounds_finished"]
    assert sum(tally.faults_planned.values()) >= 2


@pytest.mark.rule("F2")
def test_a_shoe_restart_that_loses_events_voids_the_round_and_is_accounted(
    tmp_path: Path,
) -> None:
    plan = soak.SegmentPlan(
        0, 3, f"seed=3&{soak.BASE_OPTIONS}&faults=reboot@10&persist=0", (2, 4), None
    )
    tally = soak.Tally()
    soak.run_segment(plan, tmp_path, tally)
    assert tally.problems == []
    assert tally.rounds["void_fault"] == 1 and tally.rounds["dealt"] == 2
    # The shoe lost the unacknowledged events of its first round's cards; the journal
    # says so, and they are not counted as lost by the controller.
    assert tally.events_lost_in_shoe > 0 and tally.lost == 0


def test_the_checks_see_a_card_the_journal_does_not_hold(tmp_path: Path) -> None:
    plan = soak.SegmentPlan(1, 1, f"seed=4&{soak.BASE_OPTIONS}", (2,), None)
    journal = tmp_path / "journal.sqlite3"
    table = soak.SimTable(plan.address, journal, Script(wagers=frozenset({2})))
    table.start()
    try:
        assert table.deal(1)
    finally:
        table.stop()
    with table.shoe() as shoe:
        # A card the shoe saw acknowledged that the controller never heard of.
        seq = shoe.last_event_seq + 1
        shoe.events.append((seq, CardDrawn(1, shoe.draws[0].card, shoe.draws[0].gate_mode, 99)))
        shoe._outbox.acknowledged = seq
        tally = soak.Tally()
        soak.check_segment(plan, journal, shoe, tally)
    assert tally.lost == 1
    assert any("not journaled" in problem for problem in tally.problems)


def test_a_stalled_table_is_reported(tmp_path: Path) -> None:
    # No attendant: the first fault blocks the deal for good.
    plan = soak.SegmentPlan(2, 2, f"seed=5&{soak.BASE_OPTIONS}&faults=jam@5", (2,), None)
    table = soak.SimTable(plan.address, tmp_path / "j.sqlite3", Script(wagers=frozenset({2})))
    table.start()
    try:
        assert not table.deal(2, stall_after=0.5)
        assert table.controller.phase.value == "fault"
    finally:
        table.stop()
    assert table.controller.phase.value == "stopped"
