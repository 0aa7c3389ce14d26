"""Rule E4 at the shoe's buttons: "the shoe's buttons act for the dealer signed in at the
table and never for a supervisor".

The controller follows the access records the API journals (docs/api.md, "The table's
console"): a dealer's session at the table's console (``at_console``), and every end of
it (``left_console``, ``session_ended``). A supervisor's sign-in or sign-out, wherever it
comes from, never moves the buttons; a session that is over never keeps them; and the
journal alone says, at every press, whom the buttons acted for."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from firmware_protocol import Button
from shoe_controller.api.auth import Authenticator
from shoe_controller.api.roles import Role
from shoe_controller.api.users import UsersFile
from shoe_controller.cli.croupier import TerminalCroupier
from shoe_controller.service import events as ev
from shoe_controller.service.controller import TableController
from shoe_controller.service.table_console import TableConsole
from shoe_controller.simulator.transport import live_addresses, runner_at, switch_off
from tests.api.conftest import cheap_hasher
from tests.service.helpers import WAIT, Recorder, crash, start_table

pytestmark = pytest.mark.rule("E4")

DEVICE = "sim://?seed=5&pace=0"
NOBODY = "no dealer is signed in at the table's console"


@pytest.fixture
def table(tmp_path: Path) -> Iterator[tuple[TableController, Recorder]]:
    controller, rec = start_table(tmp_path, device=DEVICE, script=None)
    rec.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
    yield controller, rec
    controller.stop()
    for address in live_addresses():
        switch_off(address)


def access(
    controller: TableController,
    action: str,
    user: str,
    role: str,
    *,
    session: str | None = None,
    detail: str = "",
) -> None:
    """One access record, as the API hands it to the controller; waited for."""
    controller.record_access(
        action, user=user, role=role, accepted=True, detail=detail, session=session
    ).result(timeout=WAIT)


def console_sign_in(controller: TableController, user: str, session: str) -> None:
    """A dealer signs in on the table's console: the sign-in, then the console's session."""
    access(controller, "sign_in", user, "dealer", detail="127.0.0.1")
    access(controller, "at_console", user, "dealer", session=session, detail="127.0.0.1")


def press(controller: TableController, rec: Recorder, button: Button) -> dict[str, Any]:
    """Press ``button`` on the shoe; the input record the controller journaled for it."""
    pressed = len(rec.of(ev.ButtonEvent))
    runner = runner_at(DEVICE)
    assert runner is not None
    with runner.locked() as shoe:
        shoe.press(button)
    rec.wait_for(lambda es: len([e for e in es if isinstance(e, ev.ButtonEvent)]) > pressed)
    # An access record goes through the same queue: once it is journaled, so is the press.
    controller.record_access("probe", user="t", role=None, accepted=True).result(timeout=WAIT)
    return [p for p in payloads(Path(controller.journal_path), "input") if "channel" in p][-1]


def payloads(journal: Path, *kinds: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        marks = ",".join("?" * len(kinds))
        rows = conn.execute(
            f"SELECT kind, payload FROM records WHERE kind IN ({marks}) ORDER BY seq", kinds
        ).fetchall()
    finally:
        conn.close()
    return [{"kind": kind, **json.loads(payload)} for kind, payload in rows]


def acted_for(record: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    return record["by"], record["role"], record["accepted"]


def test_a_supervisor_who_signs_in_and_out_leaves_the_buttons_to_the_dealer(
    table: tuple[TableController, Recorder],
) -> None:
    """The dealer is signed in at the console; a supervisor signs in, acts, signs out:
    the buttons still act for the dealer."""
    controller, rec = table
    console_sign_in(controller, "dana", "d1")
    access(controller, "sign_in", "marta", "supervisor", detail="127.0.0.1")
    access(controller, "sign_out", "marta", "supervisor", detail="127.0.0.1")
    confirmed = press(controller, rec, Button.CONFIRM)
    assert acted_for(confirmed) == ("dana", "dealer", True)
    assert controller.phase.value != "shuffle_check"


def test_a_supervisor_signed_in_anywhere_never_takes_the_buttons(
    table: tuple[TableController, Recorder],
) -> None:
    """A supervisor's sign-in, even after the dealer's, leaves the buttons with the dealer;
    with no dealer at the console, a supervisor's sign-in gives them to nobody."""
    controller, rec = table
    console_sign_in(controller, "dana", "d1")
    access(controller, "sign_in", "marta", "supervisor", detail="192.0.2.9")
    assert acted_for(press(controller, rec, Button.CONFIRM)) == ("dana", "dealer", True)
    access(controller, "left_console", "dana", "dealer", session="d1", detail="sign_out")
    access(controller, "sign_out", "dana", "dealer", detail="127.0.0.1")
    access(controller, "sign_in", "marta", "supervisor", detail="127.0.0.1")
    refused = press(controller, rec, Button.NO_MORE_BETS)
    assert acted_for(refused) == (None, None, False)
    assert NOBODY in refused["refused"]


def test_a_supervisors_session_at_the_console_is_not_a_dealers(
    table: tuple[TableController, Recorder],
) -> None:
    """Only a dealer's session is the console's for the buttons, whatever a record says."""
    controller, rec = table
    access(controller, "at_console", "marta", "supervisor", session="s1")
    refused = press(controller, rec, Button.CONFIRM)
    assert acted_for(refused) == (None, None, False)
    assert controller.phase.value == "shuffle_check"


@pytest.mark.parametrize(
    ("action", "detail"),
    [
        ("session_ended", "idle"),
        ("session_ended", "expired"),
        ("left_console", "closed"),
        ("left_console", "user_changed"),
        ("left_console", "replaced"),
    ],
)
def test_the_buttons_act_for_the_dealer_only_while_her_session_is_at_the_console(
    table: tuple[TableController, Recorder], action: str, detail: str
) -> None:
    """An ended session keeps nothing: idle, expired, its connection closed, its user
    changed, another person signed in on the console."""
    controller, rec = table
    console_sign_in(controller, "dana", "d1")
    access(controller, action, "dana", "dealer", session="d1", detail=detail)
    refused = press(controller, rec, Button.CONFIRM)
    assert acted_for(refused) == (None, None, False)
    assert NOBODY in refused["refused"]


def test_another_session_of_the_dealer_ending_leaves_her_console_session(
    table: tuple[TableController, Recorder],
) -> None:
    """The console's session is followed by its id: another session of the same dealer
    (over HTTP, say) that ends, or signs out, does not take the buttons from her."""
    controller, rec = table
    console_sign_in(controller, "dana", "d1")
    access(controller, "session_ended", "dana", "dealer", session="h7", detail="idle")
    access(controller, "sign_out", "dana", "dealer", detail="192.0.2.9")
    assert acted_for(press(controller, rec, Button.CONFIRM)) == ("dana", "dealer", True)


def test_the_latest_dealer_at_the_console_has_the_buttons_until_she_leaves(
    table: tuple[TableController, Recorder],
) -> None:
    controller, rec = table
    console_sign_in(controller, "dana", "d1")
    console_sign_in(controller, "ana", "a1")
    assert acted_for(press(controller, rec, Button.CONFIRM)) == ("ana", "dealer", True)
    access(controller, "left_console", "ana", "dealer", session="a1", detail="closed")
    assert acted_for(press(controller, rec, Button.CONFIRM))[:2] == ("dana", "dealer")


def test_a_restart_ends_every_session_and_the_journal_says_whom_each_press_was_for(
    tmp_path: Path,
) -> None:
    """Sessions live in the API's memory only: after a restart the buttons act for nobody
    until a dealer signs in at the console again. Folding the journal's access records in
    order gives, at every press, the person the controller acted for."""
    controller, rec = start_table(tmp_path, device=DEVICE, script=None)
    try:
        rec.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
        console_sign_in(controller, "dana", "d1")
        assert acted_for(press(controller, rec, Button.CONFIRM)) == ("dana", "dealer", True)
    finally:
        crash(controller)
    journal = Path(controller.journal_path)
    controller, rec = start_table(tmp_path, device=DEVICE, script=None, journal=journal)
    try:
        rec.wait_for(lambda es: any(isinstance(e, ev.PromptEvent) for e in es))
        assert acted_for(press(controller, rec, Button.CONFIRM)) == (None, None, False)
        console_sign_in(controller, "ana", "a1")
        assert press(controller, rec, Button.NO_MORE_BETS)["by"] == "ana"
        access(controller, "session_ended", "ana", "dealer", session="a1", detail="idle")
        assert acted_for(press(controller, rec, Button.CONFIRM)) == (None, None, False)
    finally:
        controller.stop()
        for address in live_addresses():
            switch_off(address)
    followed = TableConsole()
    presses = []
    for record in payloads(journal, "service_started", "access", "input"):
        if record["kind"] == "service_started":
            followed.restarted()
        elif record["kind"] == "access":
            followed.follow(record)
        elif record.get("channel") == "shoe":
            presses.append((record["by"], followed.dealer))
    assert [by for by, _ in presses] == ["dana", None, "ana", None]
    assert all(by == dealer for by, dealer in presses)


def _terminal(controller: TableController, tmp_path: Path, *answers: str) -> TerminalCroupier:
    """A croupier at the terminal of ``controller``'s table, answering ``answers`` in turn."""
    users = UsersFile(tmp_path / "users.json", cheap_hasher())
    users.add("dana", Role.DEALER, "4821")
    users.add("sam", Role.SUPERVISOR, "739164")
    replies = iter(answers)
    return TerminalCroupier(
        controller, lambda question: next(replies), Authenticator(users), lambda q: next(replies)
    )


def test_at_a_terminal_croupiers_table_the_buttons_act_for_the_dealer_signed_in_there(
    table: tuple[TableController, Recorder], tmp_path: Path
) -> None:
    """With no console, the terminal is the table's: the dealer signed in there has the
    buttons while it serves, and nobody once it stops."""
    controller, rec = table
    terminal = _terminal(controller, tmp_path, "dana", "4821")
    terminal.person = terminal.sign_in("Croupier")
    terminal.take_the_table()
    assert acted_for(press(controller, rec, Button.CONFIRM)) == ("dana", "dealer", True)
    terminal.leave_the_table("the terminal stopped")
    refused = press(controller, rec, Button.NO_MORE_BETS)
    assert acted_for(refused) == (None, None, False)
    assert NOBODY in refused["refused"]


def test_a_supervisor_croupier_at_the_terminal_never_has_the_buttons(
    table: tuple[TableController, Recorder], tmp_path: Path
) -> None:
    controller, rec = table
    terminal = _terminal(controller, tmp_path, "sam", "739164")
    terminal.person = terminal.sign_in("Croupier")
    terminal.take_the_table()
    refused = press(controller, rec, Button.CONFIRM)
    assert acted_for(refused) == (None, None, False)
    assert controller.phase.value == "shuffle_check"
