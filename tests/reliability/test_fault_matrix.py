"""The fault matrix of docs/reliability.md, cell by cell: each fault of the simulator at a
point of the round, and the outcome the procedure gives that round.

The expected outcomes are derived from the procedure (docs/procedure.md), not from a run;
each cell deals one round against the in-process simulated shoe with the soak's harness
(the attendant clears every fault) and compares. Card 10 falls in the deal, card 49 is its
last card, cards 50 to 53 are the stub.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from benchmarks.soak import BASE_OPTIONS, SimTable
from shoe_controller.cli.croupier import Script
from shoe_controller.service import events as ev

SCRIPT = Script(wagers=frozenset({2, 4}), attendant="matrix")
#: A cell that stalls says nothing for this long (a silence lasts 1 s of real time).
STALL_AFTER = 2.5


@pytest.mark.parametrize(
    ("faults", "outcome"),
    [
        # Before the first round opens (the shuffle is not yet confirmed): no round is at
        # stake, the deck short of a card comes out, and the next deck deals.
        pytest.param(
            "early_draw@1",
            "dealt",
            marks=[pytest.mark.rule("A3"), pytest.mark.rule("F1")],
            id="early_draw@1",
        ),
        # During the deal.
        pytest.param("misread@10", "void_fault", marks=[pytest.mark.rule("C3")], id="misread@10"),
        pytest.param(
            "double@10", "void_deck_removed", marks=[pytest.mark.rule("D2")], id="double@10"
        ),
        pytest.param(
            "double_detected@10",
            "void_misdeal",
            marks=[pytest.mark.rule("C4")],
            id="double_detected@10",
        ),
        pytest.param(
            "jam@10", "dealt", marks=[pytest.mark.rule("C4"), pytest.mark.rule("F1")], id="jam@10"
        ),
        pytest.param("door@10", "void_fault", marks=[pytest.mark.rule("C4")], id="door@10"),
        pytest.param("disconnect@10", "dealt", marks=[pytest.mark.rule("F2")], id="disconnect@10"),
        pytest.param(
            "reboot@10&persist=0",
            "void_fault",
            marks=[pytest.mark.rule("F2")],
            id="reboot@10&persist=0",
        ),
        pytest.param(
            "reboot@10&persist=1",
            "dealt",
            marks=[pytest.mark.rule("F2")],
            id="reboot@10&persist=1",
        ),
        pytest.param(
            "silent@10&silent_for=1",
            "dealt",
            marks=[pytest.mark.rule("F1")],
            id="silent@10&silent_for=1",
        ),
        pytest.param(
            "silent@10&silent_for=5",
            "dealt",
            marks=[pytest.mark.rule("F2")],
            id="silent@10&silent_for=5",
        ),
        # The deal's last card, and between the deal and the stub.
        pytest.param("misread@49", "void_fault", marks=[pytest.mark.rule("C3")], id="misread@49"),
        pytest.param(
            "door@49",
            "dealt",
            marks=[
                pytest.mark.rule("C4"),
            ],
            id="door@49",
        ),
        pytest.param("disconnect@49", "dealt", marks=[pytest.mark.rule("F2")], id="disconnect@49"),
        pytest.param(
            "silent@49&silent_for=5",
            "dealt",
            marks=[
                pytest.mark.rule("F2"),
            ],
            id="silent@49&silent_for=5",
        ),
        pytest.param(
            "early_draw@50", "void_fault", marks=[pytest.mark.rule("F1")], id="early_draw@50"
        ),
        # The stub: its identities are never shown, only its count matters.
        pytest.param(
            "door@50", "dealt", marks=[pytest.mark.rule("C4"), pytest.mark.rule("D1")], id="door@50"
        ),
        pytest.param("misread@51", "dealt", marks=[pytest.mark.rule("D1")], id="misread@51"),
        # Two stub cards pass as one, unseen: the shoe counts 3 and read 3, every card of the
        # deal read. That reading is a deck of 52, whatever the croupier counts: it leaves
        # the table (D4). Seen by the shoe, the double is a note and the count decides.
        pytest.param(
            "double@51",
            "void_deck_removed",
            marks=[pytest.mark.rule("D2"), pytest.mark.rule("D4")],
            id="double@51",
        ),
        pytest.param(
            "double_detected@51", "dealt", marks=[pytest.mark.rule("D1")], id="double_detected@51"
        ),
        pytest.param("jam@51", "dealt", marks=[pytest.mark.rule("D1")], id="jam@51"),
        pytest.param("disconnect@51", "dealt", marks=[pytest.mark.rule("F2")], id="disconnect@51"),
        pytest.param(
            "reboot@51&persist=0",
            "void_fault",
            marks=[pytest.mark.rule("F2")],
            id="reboot@51&persist=0",
        ),
        pytest.param(
            "reboot@51&persist=1",
            "dealt",
            marks=[pytest.mark.rule("F2")],
            id="reboot@51&persist=1",
        ),
        # The shoe restarts at the stub's last card: its gate locks, it is empty, and the
        # next deck goes in while this round's hands are still in play.
        pytest.param(
            "reboot@53&persist=1",
            "dealt",
            marks=[pytest.mark.rule("F2"), pytest.mark.rule("E2")],
            id="reboot@53&persist=1",
        ),
        pytest.param(
            "silent@51&silent_for=5",
            "dealt",
            marks=[pytest.mark.rule("F2")],
            id="silent@51&silent_for=5",
        ),
    ],
)
def test_the_round_ends_as_the_procedure_says(tmp_path: Path, faults: str, outcome: str) -> None:
    serial = f"M{zlib.crc32(faults.encode()):08x}"
    address = f"sim://?seed=7&{BASE_OPTIONS}&faults={faults}&serial={serial}"
    table = SimTable(address, tmp_path / "journal.sqlite3", SCRIPT)
    table.start()
    try:
        # Two rounds: the fault's round, and the next one, which must open and end too.
        finished = table.deal(2, stall_after=STALL_AFTER)
    finally:
        table.stop()
    ends = [e for e in table.log.events if isinstance(e, ev.RoundEndEvent)]
    assert finished and ends, f"{faults}: the round did not end (phase {table.controller.phase})"
    assert ends[0].outcome == outcome, f"{faults}: {ends[0].outcome}: {ends[0].reason}"
