"""Free text a person gives (a void's reason) is at most MAX_TEXT characters, refused beyond
in one line; what it is at most reaches the floor's records whole, within the floor's
schema (E3, F6)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from floor_protocol import schema
from shoe_controller.cli.croupier import Script
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import Phase
from shoe_controller.procedure.inputs import MAX_TEXT
from shoe_controller.service import Actor, TableController
from shoe_controller.service import events as ev
from shoe_controller.simulator.transport import switch_off
from tests.floor.helpers import public_records
from tests.service.helpers import WAIT, Recorder, start_table

pytestmark = [pytest.mark.rule("E3"), pytest.mark.rule("F6")]

DEVICE = "sim://?seed=9&pace=0"
#: The longest name the users file takes, as a supervisor's.
SUPERVISOR = Actor("s" * 32, "supervisor")
#: A reason of the maximum length, with letters the floor counts as one character each.
REASON = ("Se expuso una carta y el jugador reclamó; " * 10)[:MAX_TEXT]


@pytest.fixture
def open_round(tmp_path: Path) -> Iterator[tuple[TableController, Recorder]]:
    """A table at its round's bets: the bench's croupier waits for wagers it was not given."""
    switch_off(DEVICE)
    controller, rec = start_table(tmp_path, device=DEVICE, script=Script(attendant="att-1"))
    try:
        rec.wait_for(lambda _: controller.phase is Phase.DECK_LOADED)
        yield controller, rec
    finally:
        controller.stop()
        switch_off(DEVICE)


def test_a_reason_of_the_maximum_length_reaches_the_floors_validation_intact(
    tmp_path: Path, open_round: tuple[TableController, Recorder]
) -> None:
    controller, _ = open_round
    assert len(REASON) == MAX_TEXT and not REASON.isascii()
    controller.void_round(REASON, actor=SUPERVISOR).result(WAIT)
    controller.stop()
    [ended] = [
        body
        for _, body in public_records(tmp_path / "journal.sqlite3")
        if body["event"] == "round_end" and body["outcome"] == "void_fault"
    ]
    assert f"{SUPERVISOR.user} ended the round void: {REASON} (Section 10.13)" == ended["reason"]
    schema.validate("Event.round_end", ended)


def test_a_reason_over_the_maximum_is_refused_in_one_line_and_the_round_goes_on(
    tmp_path: Path, open_round: tuple[TableController, Recorder]
) -> None:
    controller, rec = open_round
    flood = "x" * (20 * MAX_TEXT)
    with pytest.raises(ProcedureError) as refused:
        controller.void_round(flood, actor=SUPERVISOR).result(WAIT)
    assert str(refused.value) == (
        f"a void's reason is at most {MAX_TEXT} characters, this one has {len(flood)}: say "
        "it in fewer words (F6)"
    )
    assert controller.phase is Phase.DECK_LOADED
    assert not rec.of(ev.RoundEndEvent)
    controller.stop()
    # Nothing of the flood is journaled: no record holds it.
    conn = sqlite3.connect(f"file:{tmp_path / 'journal.sqlite3'}?mode=ro", uri=True)
    try:
        [(holding,)] = conn.execute(
            "SELECT count(*) FROM records WHERE instr(payload, ?) > 0", (flood[: MAX_TEXT + 1],)
        )
    finally:
        conn.close()
    assert holding == 0
