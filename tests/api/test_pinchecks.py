"""PIN checks in a process of their own, at the lowest priority, started again when it
ends; and no check beside a deal under way."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from shoe_controller.api.pinchecks import NICENESS, PinChecker
from shoe_controller.service import events as ev
from tests.api.client import post_json
from tests.api.conftest import PEOPLE, StartServer, cheap_hasher
from tests.api.fakes import FakeTable


def _checking_processes() -> list[int]:
    """This process's children that run multiprocessing's spawned workers."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"spawn_main" in command:
            found.append(int(entry.name))
    return found


@pytest.fixture
def checker() -> PinChecker:
    made = PinChecker()
    yield made
    made.close()


def test_a_pin_is_checked_in_a_process_at_the_lowest_priority(checker: PinChecker) -> None:
    pin_hash = cheap_hasher().hash("4821")
    assert checker(pin_hash, "4821") is True
    assert checker(pin_hash, "4822") is False
    assert checker("not a hash", "4821") is False
    [worker] = _checking_processes()
    assert os.getpriority(os.PRIO_PROCESS, worker) == NICENESS


def test_a_checking_process_that_ends_is_started_again(checker: PinChecker) -> None:
    pin_hash = cheap_hasher().hash("4821")
    [worker] = _checking_processes()
    os.kill(worker, signal.SIGKILL)
    assert checker(pin_hash, "4821") is True
    assert _checking_processes() != [worker]


def test_no_pin_is_checked_while_a_deal_is_under_way(
    start_server: StartServer, fake: FakeTable
) -> None:
    server = start_server(fake)
    fake.publish(ev.StateEvent(state="dealing", previous="start_set"))

    async def scenario() -> None:
        login = {"user": "dana", "pin": PEOPLE["dana"][1]}
        asking = asyncio.ensure_future(post_json(server.url + "api/v1/login", login))
        done, _ = await asyncio.wait([asking], timeout=0.5)
        assert not done, "a PIN was checked while the cards were dealt"
        fake.publish(ev.StateEvent(state="dealt", previous="stub_count"))
        status, body, _ = await asyncio.wait_for(asking, 10)
        assert (status, body["user"]) == (200, "dana")

    asyncio.run(scenario())


def test_a_closed_checker_checks_nothing_more() -> None:
    checker = PinChecker()
    checker.close()
    with pytest.raises(RuntimeError, match="closed"):
        checker(cheap_hasher().hash("4821"), "4821")
    assert _checking_processes() == []
