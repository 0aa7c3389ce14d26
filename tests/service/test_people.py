"""Rule E4 through the service: every input is journaled with the person who gave it; the
procedure's one table of who decides holds on every channel; the shoe's buttons act for the
dealer signed in at the table's console, as a dealer, and are refused (journaled) when no
dealer is (tests/service/test_buttons.py follows the console's sessions); an automatic
croupier gives inputs on a test bench only."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from firmware_protocol import Button
from shoe_controller.errors import ProcedureError
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.service.controller import BENCH, Actor, TableController
from shoe_controller.simulator.transport import live_addresses, runner_at, switch_off
from tests.service.helpers import DEALER, SUPERVISOR, WAIT, Recorder, start_table

pytestmark = pytest.mark.rule("E4")


def _inputs(journal: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT payload FROM records WHERE kind = 'input' ORDER BY seq")
        return [json.loads(payload) for (payload,) in rows]
    finally:
        conn.close()


@pytest.fixture
def table(tmp_path: Path) -> Iterator[tuple[TableController, Recorder, str]]:
    device = "sim://?seed=41&pace=0"
    controller, rec = start_table(tmp_path, device=device, script=None)
    rec.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
    yield controller, rec, device
    controller.stop()
    for address in live_addresses():
        switch_off(address)


def _press(device: str, button: Button) -> None:
    runner = runner_at(device)
    assert runner is not None
    with runner.locked() as shoe:
        shoe.press(button)


def _at_console(controller: TableController, user: str) -> None:
    """``user`` signs in as a dealer at the table's console (session ``d1``)."""
    for action in ("sign_in", "at_console"):
        session = "d1" if action == "at_console" else None
        controller.record_access(
            action, user=user, role="dealer", accepted=True, detail="127.0.0.1", session=session
        ).result(WAIT)


def _wait_inputs(controller: TableController, count: int) -> list[dict[str, Any]]:
    """The journal's input records, once there are ``count`` (read after a barrier)."""
    # An access record goes through the same queue: once it is journaled, so is all before.
    controller.record_access("probe", user="t", role=None, accepted=True).result(timeout=WAIT)
    inputs = _inputs(Path(controller.journal_path))
    assert len(inputs) >= count, inputs
    return inputs


def test_an_input_without_a_signed_in_person_is_refused_and_journaled(
    table: tuple[TableController, Recorder, str],
) -> None:
    controller, _, _ = table
    with pytest.raises(ProcedureError, match=r"needs the signed-in person who gives it: .*\(E4\)$"):
        controller.confirm_shuffle().result(timeout=WAIT)
    with pytest.raises(ProcedureError, match=r"technician, who gives no input at the table"):
        controller.confirm_shuffle(actor=Actor("tec", "technician")).result(timeout=WAIT)
    assert controller.phase.value == "shuffle_check"
    refused = _wait_inputs(controller, 2)[-2:]
    assert [(i["by"], i["role"], i["accepted"]) for i in refused] == [
        (None, None, False),
        ("tec", "technician", False),
    ]


def test_every_input_is_journaled_with_who_gave_it(
    table: tuple[TableController, Recorder, str],
) -> None:
    controller, _, _ = table
    controller.confirm_shuffle(actor=DEALER).result(timeout=WAIT)
    controller.no_more_bets([2], actor=DEALER).result(timeout=WAIT)
    controller.start_by_dice(2, 3, 4, actor=SUPERVISOR).result(timeout=WAIT)
    given = _wait_inputs(controller, 3)[-3:]
    assert [(i["name"], i["by"], i["role"]) for i in given] == [
        ("confirm_shuffle", "dana", "dealer"),
        ("no_more_bets", "dana", "dealer"),
        ("start_position", "sam", "supervisor"),
    ]
    # The dice's values are journaled with who typed them (B1).
    assert given[-1]["dice"] == [2, 3, 4]
    conn = sqlite3.connect(f"file:{controller.journal_path}?mode=ro", uri=True)
    try:
        [(payload,)] = conn.execute("SELECT payload FROM records WHERE kind = 'start_position'")
    finally:
        conn.close()
    assert json.loads(payload)["by"] == "sam"


def test_an_automatic_croupier_gives_no_input_at_a_table(tmp_path: Path) -> None:
    controller = TableController(
        Config(), journal_path=tmp_path / "j.sqlite3", device="sim://?seed=42&pace=0"
    )
    controller.bench = False  # as a table would be: the bench is not what this tests
    rec = Recorder()
    controller.subscribe(rec)
    controller.start()
    try:
        rec.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
        with pytest.raises(ProcedureError, match=r"automatic croupier, .* on a test bench only"):
            controller.confirm_shuffle(actor=Actor("script", BENCH)).result(timeout=WAIT)
    finally:
        controller.stop()


def test_the_shoes_buttons_without_anyone_signed_in_are_refused_and_journaled(
    table: tuple[TableController, Recorder, str],
) -> None:
    controller, rec, device = table
    _press(device, Button.CONFIRM)
    rec.wait_for(lambda es: any(isinstance(e, ev.ButtonEvent) for e in es))
    [pressed] = [i for i in _wait_inputs(controller, 1) if i["name"] == "button_confirm"]
    assert (pressed["by"], pressed["accepted"], pressed["channel"]) == (None, False, "shoe")
    assert "no dealer is signed in at the table's console" in pressed["refused"]
    assert controller.phase.value == "shuffle_check"


def test_the_shoes_buttons_act_for_the_dealer_signed_in_at_the_console(
    table: tuple[TableController, Recorder, str],
) -> None:
    controller, rec, device = table
    _at_console(controller, "dana")
    _press(device, Button.CONFIRM)
    rec.wait_for(
        lambda es: any(isinstance(e, ev.StateEvent) and e.state == "deck_loaded" for e in es)
    )
    controller.set_wagers([2, 5], actor=DEALER).result(timeout=WAIT)
    _press(device, Button.NO_MORE_BETS)
    rec.wait_for(lambda es: any(isinstance(e, ev.BetsClosedEvent) for e in es))
    pressed = [i for i in _wait_inputs(controller, 3) if i["name"].startswith("button_")]
    assert [(i["name"], i["by"], i["role"], i["accepted"]) for i in pressed] == [
        ("button_confirm", "dana", "dealer", True),
        ("button_no_more_bets", "dana", "dealer", True),
    ]
    # Signed out: the buttons act for nobody.
    controller.record_access(
        "left_console", user="dana", role="dealer", accepted=True, detail="sign_out", session="d1"
    ).result(WAIT)
    _press(device, Button.CONFIRM)
    rec.wait_for(lambda es: len([e for e in es if isinstance(e, ev.ButtonEvent)]) == 3)
    last = [i for i in _wait_inputs(controller, 4) if i["name"] == "button_confirm"][-1]
    assert (last["by"], last["accepted"]) == (None, False)


def test_the_shoes_button_never_gives_what_a_supervisor_gives(tmp_path: Path) -> None:
    """A supervisor acts at the table while the dealer is signed in at the console: the
    button still acts for the dealer, as a dealer, so it cannot clear a fault."""
    device = "sim://?seed=43&pace=0&faults=jam@3&jam_for=0"
    controller, rec = start_table(tmp_path, device=device, script=None)
    try:
        rec.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
        _at_console(controller, "dana")
        controller.record_access("sign_in", user="sam", role="supervisor", accepted=True).result(
            WAIT
        )
        controller.confirm_shuffle(actor=SUPERVISOR).result(timeout=WAIT)
        controller.no_more_bets([2], actor=SUPERVISOR).result(timeout=WAIT)
        controller.start_by_dice(1, 1, 1, actor=SUPERVISOR).result(timeout=WAIT)
        rec.wait_for(lambda es: any(isinstance(e, ev.FaultEvent) for e in es))
        _press(device, Button.CONFIRM)
        rec.wait_for(lambda es: any(isinstance(e, ev.ButtonEvent) for e in es))
        [pressed] = [i for i in _wait_inputs(controller, 4) if i["name"] == "button_confirm"]
        assert (pressed["by"], pressed["role"], pressed["accepted"]) == ("dana", "dealer", False)
        assert controller.phase.value == "fault"
    finally:
        controller.stop()
