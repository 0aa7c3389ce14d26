"""The kill test: the broker, a collector and a box are killed mid-round while a forger
publishes throughout; afterwards ``shoe-floor report`` agrees with each box's journal, and
nothing of the forger's is stored."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import floor_protocol as fp
from floor_protocol.messages import compact
from shoe_floor.store import open_store
from tests.cli.conftest import write_config
from tests.floor.helpers import (
    FLOOR_PRIVATE,
    FLOOR_PUBLIC,
    WAIT,
    Box,
    box_key_path,
    check_store_matches,
    enrol,
    eventually,
    journal_id,
    journal_summary,
    public_records,
    records_of_table,
    site_of,
)
from tests.floor.servers import Mosquitto
from tests.floor.test_attacks import TS, Forger, card, signed
from tests.floor.test_faults import child_env
from tools import children

pytestmark = pytest.mark.needs("mosquitto")

FORGED_KEY = fp.SigningKey.generate()


def forge(url: str, stop: threading.Event, sent: list[int]) -> None:
    """Publish forged messages for both tables until ``stop``: unsigned, signed with a key
    of the forger's own, and poison signed by nobody the floor knows."""
    forger: Forger | None = None
    n = 0
    while not stop.wait(0.05):
        try:
            if forger is None:
                forger = Forger(url)
            table = ("T1", "T2")[n % 2]
            seq = 10_000 + n
            records = fp.encode_records(
                "casino", table, "f" * 32, seq - 1, [(seq, "0" * 64, card(1))]
            )
            head = fp.Outgoing(
                f"shoes/casino/{table}/head",
                compact(
                    {"journal": "f" * 32, "seq": 2**64, "mac": "0" * 64, "public_seq": 1, "ts": TS}
                ),
                (),
                retain=True,
            )
            status = fp.encode_status(
                "casino",
                table,
                {
                    "online": True,
                    "site": "casino",
                    "table": table,
                    "connection": "deadbeef-1",
                    "version": "x",
                },
            )
            forger.publish((records, signed(records, FORGED_KEY), head, status)[n % 4])
            n += 1
            sent[0] = n
        except (OSError, RuntimeError, ValueError):
            # The broker is down for a while: the forger tries again.
            if forger is not None:
                forger.close()
            forger = None
    if forger is not None:
        forger.close()


def collector_process(broker: Mosquitto, db: str, name: str, log: Path) -> subprocess.Popen[str]:
    """``shoe-floor collect`` as the floor runs it; what it says goes to ``log``."""

    def starts() -> int:
        return log.read_text().count("collecting from") if log.exists() else 0

    before = starts()
    with log.open("a") as err:
        process = children.spawn(
            [
                sys.executable,
                "-m",
                "shoe_floor",
                "collect",
                "--broker",
                broker.url,
                "--db",
                db,
                "--name",
                name,
                "--insecure-broker",
                "--key",
                str(FLOOR_PRIVATE),
            ],
            env=child_env(),
            stderr=err,
            text=True,
        )
    eventually(lambda: starts() > before)
    return process


def mid_round(journal: Path) -> bool:
    """The box has dealt a round and is dealing cards of the next."""
    if not journal.exists():
        return False
    events = [body["event"] for _, body in public_records(journal)]
    return "round_end" in events and events[-1] == "card"


def box_process(
    broker: Mosquitto, journal: Path, config: Path, *, rounds: int, seed: int, pace: float = 0.003
) -> subprocess.Popen[bytes]:
    return children.spawn(
        [
            sys.executable,
            "-m",
            "shoe_controller.cli.controller",
            "run",
            "--bench",
            "--device",
            f"sim://?pace={pace}&seed={seed}",
            "--journal",
            str(journal),
            "--config",
            str(config),
            "--rounds",
            str(rounds),
            "--rng",
            "--wagers",
            "2,4,5",
            "--attendant",
            "att-1",
            "--broker",
            broker.url,
            "--table-id",
            "T2",
            "--json",
        ],
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=(journal.parent / "box.err").open("ab"),
    )


def stored(db: str, table: str, journal: Path) -> int:
    if not journal.exists():
        return 0
    with open_store(db, create=False) as store:
        return len(records_of_table(store, table, journal_id(journal)))


def complete(db: str, table: str, journal: Path) -> bool:
    with open_store(db, create=False) as store:
        if (site_of(store, table), table) in store.incomplete_tables():
            return False
        return len(records_of_table(store, table, journal_id(journal))) == len(
            public_records(journal)
        )


@pytest.mark.rule("E3")
@pytest.mark.rule("F3")
@pytest.mark.timeout(600)
def test_the_report_agrees_with_every_journal_after_the_kills_with_a_forger_throughout(
    tmp_path: Path, broker: Mosquitto
) -> None:
    db = str(tmp_path / "floor.sqlite3")
    enrol(db, "T1", "T2")
    stop = threading.Event()
    sent = [0]
    forger = threading.Thread(target=forge, args=(broker.url, stop, sent), daemon=True)
    forger.start()
    logs = {name: tmp_path / f"collector-{name}.log" for name in ("a", "b")}
    collectors = {name: collector_process(broker, db, name, logs[name]) for name in logs}
    # T2 is a box of its own, run as the service runs, with the key its install made.
    journal2 = tmp_path / "T2" / "journal.sqlite3"
    journal2.parent.mkdir()
    shutil.copyfile(box_key_path("T2"), journal2.with_suffix(".floor-key"))
    journal2.with_suffix(".floor-key").chmod(0o600)
    config = write_config(
        tmp_path / "box.toml",
        extra=f'[floor]\nsite = "casino"\nfloor_key = "{FLOOR_PUBLIC}"\nreplay_interval = 1\n',
    )
    box2 = box_process(broker, journal2, config, rounds=4, seed=71, pace=0.02)
    box1 = Box(tmp_path, broker.url, "T1", seed=72, pace=0.002)
    try:
        eventually(lambda: stored(db, "T1", box1.journal) > 40)
        # The broker dies mid-round and comes back: what it held is lost, the gaps are
        # asked for again.
        broker.kill()
        events = len(box1.recorder.events)
        box1.recorder.wait_for(lambda e: len(e) > events + 20)
        broker.start()
        # A collector dies: its share waits in the broker for its session.
        collectors["a"].send_signal(signal.SIGKILL)
        collectors["a"].wait(WAIT)
        eventually(lambda: mid_round(journal2))
        # The box of T2 dies mid-round, and is started again on its journal.
        box2.send_signal(signal.SIGKILL)
        box2.wait(WAIT)
        collectors["a"] = collector_process(broker, db, "a", logs["a"])
        box2 = box_process(broker, journal2, config, rounds=2, seed=73)
        assert box2.wait(timeout=WAIT * 3) == 0
        box1.wait_rounds(3)
        box1.controller.stop()
        stop.set()
        forger.join(WAIT)
        eventually(lambda: complete(db, "T1", box1.journal))
        # T2's box has dealt its rounds and stopped. Records the killed broker lost are
        # asked for again once the collectors see the gap; a box that is not running
        # answers when it next runs, as a table's box does at its next start.
        for _ in range(3):
            try:
                eventually(lambda: complete(db, "T2", journal2))
                break
            except AssertionError:
                box2 = box_process(broker, journal2, config, rounds=1, seed=74)
                assert box2.wait(timeout=WAIT * 3) == 0
        else:
            eventually(lambda: complete(db, "T2", journal2))
        assert box1.forwarder.stop(drain_seconds=10) == 0
    finally:
        stop.set()
        if box2.poll() is None:
            box2.kill()
        for process in collectors.values():
            if process.poll() is None:
                process.terminate()
                process.wait(WAIT)
    outcomes = [b["outcome"] for _, b in public_records(journal2) if b["event"] == "round_end"]
    assert "void_fault" in outcomes  # the round the kill interrupted (F3)
    for table, journal in (("T1", box1.journal), ("T2", journal2)):
        check_store_matches(db, table, journal)
    report = subprocess.run(
        [sys.executable, "-m", "shoe_floor", "report", "--db", db, "--json", "--timezone", "UTC"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    lines = [json.loads(line) for line in report.stdout.splitlines()]
    for table, journal in (("T1", box1.journal), ("T2", journal2)):
        total = next(r for r in lines if r.get("table") == table and r["shift"] is None)
        summary = journal_summary(journal)
        assert total["rounds"] == summary["rounds"] and total["hands"] == summary["hands"]
        assert {k: total[k] for k in summary["outcomes"]} == summary["outcomes"]
        assert total["faults"] == summary["faults"] and total["complete"] is True
    refused = lines[-1]
    assert sent[0] > 10 and refused["quarantined"] > 0
    assert set(refused["by_reason"]) <= {"unsigned", "forged", "schema"}
    with open_store(db, create=False) as store:
        assert {j for _, _, j in store.journals()} == {
            journal_id(box1.journal),
            journal_id(journal2),
        }
