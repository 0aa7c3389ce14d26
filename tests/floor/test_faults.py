"""Faults between the boxes and the floor's store: the broker killed and restarted
mid-round, the collector killed and restarted, a box SIGKILLed and restarted. After each,
the store holds every public record of every table exactly once, in order, and the
report agrees with each box's own journal."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure.machine import Phase
from shoe_controller.service import events as ev
from shoe_controller.service.config import load_config
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.tcp_frontend import TcpFrontEnd
from shoe_floor.store import open_store
from tests.cli.conftest import write_config
from tests.floor.helpers import (
    FLOOR_PRIVATE,
    FLOOR_PUBLIC,
    WAIT,
    Box,
    Subscriber,
    box_key_path,
    check_store_matches,
    enrol,
    eventually,
    journal_id,
    public_records,
    records_of,
    records_of_table,
)
from tests.floor.servers import Mosquitto
from tests.floor.test_collector import collector, settled
from tools import children

pytestmark = pytest.mark.needs("mosquitto")

ROOT = Path(__file__).resolve().parents[2]


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def stored(db: str, table: str, journal: Path) -> int:
    with open_store(db, create=False) as store:
        return len(records_of_table(store, table, journal_id(journal)))


@pytest.mark.rule("E3")
def test_broker_killed_and_restarted_mid_round(tmp_path: Path, broker: Mosquitto) -> None:
    db = str(tmp_path / "floor.sqlite3")
    enrol(db, "T1", "T2")
    collecting = collector(broker.url, db)
    boxes = [Box(tmp_path, broker.url, f"T{i}", seed=20 + i, pace=0.002) for i in (1, 2)]
    boxes[0].wait_rounds(1)
    broker.kill()
    # The tables deal on while the broker is away: their records wait in their journals.
    cards = len(boxes[0].recorder.events)
    boxes[0].recorder.wait_for(lambda events: len(events) > cards + 20)
    broker.start()
    for box in boxes:
        box.wait_rounds(3)
        box.controller.stop()
    settled(collecting, sum(len(public_records(b.journal)) for b in boxes))
    for box in boxes:
        assert box.forwarder.stop(drain_seconds=10) == 0
    collecting.stop()
    for box in boxes:
        check_store_matches(db, box.journal.parent.name, box.journal)


def test_collector_killed_and_restarted(tmp_path: Path, broker: Mosquitto) -> None:
    db = str(tmp_path / "floor.sqlite3")
    command = [
        sys.executable,
        "-m",
        "shoe_floor",
        "collect",
        "--broker",
        broker.url,
        "--db",
        db,
        "--name",
        "crashy",
        "--insecure-broker",
        "--key",
        str(FLOOR_PRIVATE),
    ]
    enrol(db, "T1")
    watcher = Subscriber(broker.url, "shoes/+/+/status")
    first = children.spawn(command, env=child_env(), stderr=subprocess.PIPE, text=True)
    try:
        assert first.stderr is not None
        assert "the floor's key" in first.stderr.readline()
        assert "collecting from" in first.stderr.readline()
        box = Box(tmp_path, broker.url, "T1", seed=31, pace=0.002)
        eventually(lambda: stored(db, "T1", box.journal) > 30)
        first.send_signal(signal.SIGKILL)
        first.wait(WAIT)
        # Records go on arriving at the broker, which keeps them for the collector's session.
        box.wait_rounds(3)
        box.controller.stop()
        second = children.spawn(command, env=child_env(), stderr=subprocess.DEVNULL)
        try:
            expected = len(public_records(box.journal))
            eventually(lambda: stored(db, "T1", box.journal) == expected)
            eventually(lambda: _complete(db))  # the restarted collector's gap scan agrees
            assert box.forwarder.stop(drain_seconds=10) == 0
        finally:
            second.terminate()
            assert second.wait(WAIT) == 0
    finally:
        if first.poll() is None:
            first.kill()
        watcher.close()
    check_store_matches(db, "T1", box.journal)


def _complete(db: str) -> bool:
    with open_store(db, create=False) as store:
        return not store.incomplete_tables()


@pytest.mark.rule("F3")
def test_box_sigkilled_and_restarted(tmp_path: Path, broker: Mosquitto) -> None:
    db = str(tmp_path / "floor.sqlite3")
    journal = tmp_path / "box" / "journal.sqlite3"
    enrol(db, "T1")
    # The box run as a process signs with the key the test's box in this process has.
    journal.parent.mkdir()
    key = journal.with_suffix(".floor-key")
    shutil.copyfile(box_key_path("T1"), key)
    key.chmod(0o600)
    collecting = collector(broker.url, db)
    watcher = Subscriber(broker.url, "shoes/+/+/events")
    # The shoe outlives the box, as the hardware outlives the box's power cut.
    shoe = TcpFrontEnd(SimOptions(seed=41, pace=0.003))
    shoe.start()
    config = write_config(
        tmp_path / "box.toml",
        extra=f'[floor]\nsite = "casino"\nfloor_key = "{FLOOR_PUBLIC}"\n',
    )
    try:
        first = children.spawn(
            [
                sys.executable,
                "-m",
                "shoe_controller.cli.controller",
                "run",
                "--bench",
                "--device",
                shoe.address,
                "--journal",
                str(journal),
                "--config",
                str(config),
                "--rng",
                "--wagers",
                "2,4,5",
                "--attendant",
                "att-1",
                "--broker",
                broker.url,
                "--table-id",
                "T1",
                "--json",
            ],
            env=child_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Mid-round: the second round's cards are reaching the floor.
        watcher.wait_for(
            lambda w: (
                sum(1 for _, b in records_of(w.on("events")) if b["event"] == "round_closed") >= 1
                and records_of(w.on("events"))[-1][1]["event"] == "card"
            )
        )
        first.send_signal(signal.SIGKILL)
        first.wait(WAIT)
        # The croupier takes the interrupted round's deck out; the box starts again on the
        # same journal: that round is void (F3), an attendant clears the fault, and the
        # table deals on.
        with shoe.runner.locked() as state:
            if state.deck_present:
                state.remove_deck()
        again = Box(
            tmp_path,
            broker.url,
            "T1",
            seed=0,
            journal=journal,
            device=shoe.address,
            config=load_config(config),
        )
        again.recorder.wait_for(
            lambda events: any(isinstance(e, ev.ConnectedEvent) for e in events)
        )
        if again.controller.phase is Phase.FAULT:
            try:
                again.controller.clear_fault("att-1").result(WAIT)
            except ProcedureError as exc:
                # The box's own scripted attendant (att-1 too) answers the prompt to clear,
                # and may do so between the look at the phase and this clear.
                assert "no fault to clear" in str(exc)
        again.wait_rounds(2)
        again.controller.stop()
    finally:
        shoe.stop()
    expected = public_records(journal)
    outcomes = [body["outcome"] for _, body in expected if body["event"] == "round_end"]
    assert "void_fault" in outcomes
    settled(collecting, len(expected))
    assert again.forwarder.stop(drain_seconds=10) == 0
    collecting.stop()
    watcher.close()
    check_store_matches(db, "T1", journal)
