"""Rule E4 end to end, on the real ``shoe-controller run --bench --api``: "the shoe's
buttons act for the dealer signed in at the table and never for a supervisor".

The service runs in this process (``cli.main``, on this thread: it handles the signals),
so that the test's hands can press the in-process simulated shoe's buttons when the
scenario says; the people sign in over real sockets from another thread, the box's
console at 127.0.0.1 and "another machine" at 127.0.0.2; what counts is the journal."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from firmware_protocol import Button
from shoe_controller.api import rpc
from shoe_controller.cli import controller as cli
from shoe_controller.simulator.transport import live_addresses, runner_at, switch_off
from tests.api.client import RpcFailure, WsClient, post_json
from tests.security.service import PEOPLE, users_file

pytestmark = pytest.mark.rule("E4")

DEVICE = "sim://?seed=5&pace=0"
NOBODY = "no dealer is signed in at the table's console"
WAIT_S = 20.0
#: ``[api] idle_timeout`` where a session's end by time is tried (seconds).
IDLE_S = 1
Scenario = Callable[["Box"], Awaitable[None]]


@pytest.fixture(autouse=True)
def no_shoe_left() -> object:
    yield None
    for address in live_addresses():
        switch_off(address)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Box:
    """The running service, as the scenario meets it: its URL, its journal, the shoe."""

    def __init__(self, directory: Path, api: str) -> None:
        self.directory = directory
        self.journal = directory / "journal.sqlite3"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        #: The run is over (it ended, or never started): nothing is served.
        self.over = threading.Event()
        config = directory / "config.toml"
        config.write_text(f"[api]\n{api}\n", encoding="utf-8")
        self.argv = [
            "run", "--bench", "--device", DEVICE, "--journal", str(self.journal),
            "--users", str(users_file(directory)), "--config", str(config),
            "--api", f"127.0.0.1:{self.port}",
        ]  # fmt: skip

    async def console(self, name: str, source: str | None = None) -> WsClient:
        """``name`` signs in on a WebSocket that declares itself the table's console."""
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                client = await WsClient.open(self.url, console=True, source=source)
                break
            except OSError:
                assert not self.over.is_set(), "the service is not running"
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)  # the service is still starting
        await client.login(name, PEOPLE[name][1])
        return client

    async def http_login(self, name: str, source: str | None = None) -> str:
        status, session, _ = await post_json(
            self.url + "api/v1/login", {"user": name, "pin": PEOPLE[name][1]}, source=source
        )
        assert status == 200, session
        token: str = session["token"]
        return token

    async def http_logout(self, token: str) -> None:
        call = {"jsonrpc": "2.0", "id": 1, "method": "session.logout"}
        status, _, _ = await post_json(self.url + "api/v1/rpc", call, token)
        assert status == 200

    def records(self, kind: str) -> list[dict[str, Any]]:
        conn = sqlite3.connect(f"file:{self.journal}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                "SELECT payload FROM records WHERE kind = ? ORDER BY seq", (kind,)
            ).fetchall()
        finally:
            conn.close()
        return [json.loads(payload) for (payload,) in rows]

    def presses(self) -> list[dict[str, Any]]:
        return [p for p in self.records("input") if p.get("channel") == "shoe"]

    async def press(self, button: Button) -> dict[str, Any]:
        """Press ``button`` on the shoe; the input record journaled for it."""
        before = len(self.presses())
        runner = runner_at(DEVICE)
        assert runner is not None
        with runner.locked() as shoe:
            shoe.press(button)
        deadline = time.monotonic() + WAIT_S
        while len(self.presses()) == before:
            assert time.monotonic() < deadline, "the press was never journaled"
            await asyncio.sleep(0.02)
        return self.presses()[-1]


def serve(tmp_path: Path, scenario: Scenario, api: str = "") -> Box:
    """Run the service on this thread while ``scenario`` plays against it from another;
    the scenario's end stops the service as systemd would (SIGTERM)."""
    box = Box(tmp_path, api)
    failures: list[BaseException] = []

    def in_thread() -> None:
        try:
            asyncio.run(scenario(box))
        except BaseException as exc:
            failures.append(exc)
        finally:
            # To the main thread, which waits for the run's end: systemd's stop.
            main = threading.main_thread().ident
            assert main is not None
            if not box.over.is_set():
                signal.pthread_kill(main, signal.SIGTERM)

    # A stop that comes as the run ends (the service refused to start, say) finds this
    # handler, not the default one that would end the tests.
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    thread = threading.Thread(target=in_thread)
    thread.start()
    try:
        code = cli.main(box.argv)
        box.over.set()
        thread.join(WAIT_S * 2)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if failures:
        raise failures[0]
    assert code == 0
    assert not thread.is_alive(), "the scenario did not end"
    return box


def acted_for(record: dict[str, Any]) -> tuple[str | None, str | None]:
    return record["by"], record["role"]


def test_a_supervisor_who_signs_in_and_out_leaves_the_buttons_to_the_dealer(
    tmp_path: Path,
) -> None:
    """Defect (a): the dealer at the console; a supervisor signs in (over HTTP, as the
    console does for a supervisor's action, and on a WebSocket), then signs out."""

    async def scenario(box: Box) -> None:
        dealer = await box.console("dana")
        token = await box.http_login("marta")
        supervisor = await box.console("marta")
        await supervisor.call("session.logout")
        await supervisor.close()
        await box.http_logout(token)
        confirmed = await box.press(Button.CONFIRM)
        assert (*acted_for(confirmed), confirmed["accepted"]) == ("dana", "dealer", True)
        await dealer.close()

    serve(tmp_path, scenario)


def test_a_session_that_ended_keeps_nothing(tmp_path: Path) -> None:
    """Defect (b), with ``idle_timeout = 1``: her session idles out at the console; her
    token is refused, and so is a press after it; both ends are journaled."""

    async def scenario(box: Box) -> None:
        dealer = await box.console("dana")
        try:
            note = await dealer.next_notification(timeout=IDLE_S * 5)
        except TimeoutError:
            note = None  # never told: her session is over all the same
        with pytest.raises(RpcFailure) as refused:
            await dealer.call("table.state")
        assert refused.value.code == rpc.NOT_SIGNED_IN
        pressed = await box.press(Button.CONFIRM)
        assert (*acted_for(pressed), pressed["accepted"]) == (None, None, False)
        assert NOBODY in pressed["refused"]
        # Told as soon as it ended, with nothing else to send her: no event came.
        assert note == {
            "jsonrpc": "2.0",
            "method": "notify_session_ended",
            "params": {"reason": "expired"},
        }
        await dealer.close()

    box = serve(tmp_path, scenario, api=f"idle_timeout = {IDLE_S}")
    ends = [
        (a["action"], a["user"], a["detail"])
        for a in box.records("access")
        if a["action"] in ("at_console", "session_ended", "left_console")
    ]
    assert ends == [
        ("at_console", "dana", "127.0.0.1"),
        ("session_ended", "dana", "idle"),
        ("left_console", "dana", "idle"),
    ]


def test_a_supervisor_signing_in_from_anywhere_never_takes_the_buttons(
    tmp_path: Path,
) -> None:
    """Defect (c): a supervisor signs in over HTTP from another machine after the dealer
    signed in at the console, then at the console itself: the buttons act for the dealer,
    as a dealer, and a supervisor's sign-in gives them to nobody once she leaves."""

    async def scenario(box: Box) -> None:
        dealer = await box.console("dana")
        await box.http_login("marta", source="127.0.0.2")
        pressed = await box.press(Button.CONFIRM)
        assert (*acted_for(pressed), pressed["accepted"]) == ("dana", "dealer", True)
        supervisor = await box.console("marta")
        pressed = await box.press(Button.NO_MORE_BETS)
        assert (*acted_for(pressed), pressed["accepted"]) == ("dana", "dealer", True)
        await dealer.call("session.logout")
        await dealer.close()
        await box.http_login("marta", source="127.0.0.2")
        pressed = await box.press(Button.NO_MORE_BETS)
        assert (*acted_for(pressed), pressed["accepted"]) == (None, None, False)
        assert NOBODY in pressed["refused"]
        await supervisor.close()

    box = serve(tmp_path, scenario)
    assert [acted_for(p) for p in box.presses()] == [
        ("dana", "dealer"),
        ("dana", "dealer"),
        (None, None),
    ]
    assert not any(p["by"] == "marta" for p in box.records("input"))


def test_a_console_from_another_machine_is_not_the_tables(tmp_path: Path) -> None:
    """With the console at 127.0.0.1 only (``[api] console_addresses``), a dealer who signs
    in from another machine on a WebSocket that declares itself the console does not get
    the buttons."""

    async def scenario(box: Box) -> None:
        elsewhere = await box.console("dana", source="127.0.0.2")
        pressed = await box.press(Button.CONFIRM)
        assert (*acted_for(pressed), pressed["accepted"]) == (None, None, False)
        assert NOBODY in pressed["refused"]
        at_the_table = await box.console("dana")
        pressed = await box.press(Button.CONFIRM)
        assert (*acted_for(pressed), pressed["accepted"]) == ("dana", "dealer", True)
        for client in (elsewhere, at_the_table):
            await client.close()

    box = serve(tmp_path, scenario, api='console_addresses = ["127.0.0.1"]')
    assert [(a["action"], a["detail"]) for a in box.records("access") if "session" in a] == [
        ("at_console", "127.0.0.1"),
        ("left_console", "closed"),
    ]
