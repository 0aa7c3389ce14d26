"""The floor from the command line: two boxes (``shoe-controller run --broker``), one
collector (``shoe-floor collect``) and the dashboard (``shoe-floor serve``), each a process
of its own, then ``shoe-floor report`` and ``shoe-floor audit``."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.errors import ExitCode
from shoe_floor.dashboard.users import FloorUsers
from tests.floor.helpers import (
    FLOOR_PRIVATE,
    WAIT,
    check_store_matches,
    eventually,
    journal_summary,
    records_of_table,
    site_of,
)
from tests.floor.servers import Mosquitto, free_port
from tests.floor.test_faults import child_env
from tools import children

pytestmark = pytest.mark.needs("mosquitto")


def floor(*args: str) -> list[str]:
    return [sys.executable, "-m", "shoe_floor", *args]


#: How long a stopping box may forward its backlog. It stops as soon as the broker has
#: taken everything, so a long bound costs a quiet machine nothing and keeps a loaded one
#: from racing the clock (the default, 10 s, is the production setting under test elsewhere).
DRAIN_SECONDS = WAIT / 2


def box(broker: Mosquitto, journal: Path, table: str, seed: int) -> subprocess.Popen[str]:
    journal.parent.mkdir(parents=True, exist_ok=True)
    config = journal.parent / f"box-{table}.toml"
    config.write_text(f"[floor]\ndrain_seconds = {DRAIN_SECONDS:g}\n", encoding="utf-8")
    return children.spawn(
        [
            sys.executable,
            "-m",
            "shoe_controller.cli.controller",
            "run",
            "--config",
            str(config),
            # The in-process simulated shoe deals under run only on a test bench.
            "--bench",
            "--device",
            f"sim://?pace=0.004&seed={seed}",
            "--journal",
            str(journal),
            "--rounds",
            "3",
            "--rng",
            "--wagers",
            "2,4,5",
            "--broker",
            broker.url,
            "--table-id",
            table,
            "--json",
        ],
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def enroll(journal: Path, table: str, db: str) -> str:
    """Make the box's key at install and enrol it on the floor, as the operators do."""
    journal.parent.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "shoe_controller.cli.diag",
            "floor",
            "enroll",
            "--journal",
            str(journal),
            "--table-id",
            table,
            "--json",
        ],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    printed = json.loads(made.stdout)
    assert printed["made"] is True and printed["table"] == table
    enrolled = subprocess.run(
        [
            *floor("enroll", "--db", db, "--site", printed["site"], "--table", table),
            "--key",
            printed["public_key"],
            "--fingerprint",
            printed["fingerprint"],
        ],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    assert f"key {printed['fingerprint']} enrolled" in enrolled.stdout
    fingerprint: str = printed["fingerprint"]
    return fingerprint


def collect_command(broker: Mosquitto, db: str, *more: str) -> list[str]:
    return [
        *floor("collect", "--broker", broker.url, "--db", db, "--insecure-broker", *more),
        "--key",
        str(FLOOR_PRIVATE),
    ]


def sign_in(url: str) -> str:
    """The pit's session cookie."""
    request = urllib.request.Request(
        f"{url}/api/login",
        data=json.dumps({"user": "rosa", "pin": "482913"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return str(response.headers["Set-Cookie"]).split(";")[0]


def board(url: str, cookie: str) -> dict[str, dict[str, Any]]:
    request = urllib.request.Request(f"{url}/api/board", headers={"Cookie": cookie})
    with urllib.request.urlopen(request, timeout=5) as response:
        data = json.load(response)
    return {t["table"]: t for t in data["tables"]}


def test_two_boxes_a_collector_and_the_dashboard(tmp_path: Path, broker: Mosquitto) -> None:
    db = str(tmp_path / "floor.sqlite3")
    journals = {t: tmp_path / t / "journal.sqlite3" for t in ("T1", "T2")}
    for table, journal in journals.items():
        enroll(journal, table, db)
    collect = children.spawn(
        collect_command(broker, db, "--name", "pit"),
        env=child_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    processes: list[subprocess.Popen[str]] = [collect]
    try:
        assert collect.stderr is not None
        assert "the floor's key" in collect.stderr.readline()
        assert "collecting from" in collect.stderr.readline()
        port = free_port()
        users = tmp_path / "dashboard-users.json"
        FloorUsers(users).add("rosa", "pit", "482913")
        serve = children.spawn(
            [
                *floor(
                    "serve", "--db", db, "--broker", broker.url, "--listen", f"127.0.0.1:{port}"
                ),
                "--insecure-broker",
                "--users",
                str(users),
            ],
            env=child_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        processes.append(serve)
        assert serve.stderr is not None
        assert "dashboard on" in serve.stderr.readline()
        url = f"http://127.0.0.1:{port}"
        page = urllib.request.urlopen(url, timeout=5).read().decode()
        assert "Tables live" in page
        cookie = sign_in(url)

        boxes = [box(broker, journals[t], t, seed) for seed, t in enumerate(journals, 50)]
        processes += boxes
        # Both tables live on the dashboard while they deal.
        eventually(lambda: all(board(url, cookie).get(t, {}).get("online") for t in journals))
        eventually(lambda: all(board(url, cookie)[t]["state"] for t in journals))
        for process in boxes:
            _, err = process.communicate(timeout=WAIT)
            assert process.returncode == 0, err
            assert "wait for the floor" not in err
        # Stopped boxes say goodbye: the dashboard shows them offline, with their rounds.
        eventually(lambda: not any(board(url, cookie)[t]["online"] for t in journals))
        assert all(board(url, cookie)[t]["rounds_last_hour"] == 3 for t in journals)

        for table, journal in journals.items():
            eventually(lambda j=journal, t=table: _stored(db, t, j))
            check_store_matches(db, table, journal)

        report = subprocess.run(
            floor("report", "--db", db, "--json", "--timezone", "UTC"),
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=True,
        )
        rows = [json.loads(line) for line in report.stdout.splitlines()]
        for table, journal in journals.items():
            total = next(r for r in rows if r["table"] == table and r["shift"] is None)
            summary = journal_summary(journal)
            assert total["rounds"] == summary["rounds"] == 3
            assert total["dealt"] == 3 and total["hands"] == summary["hands"] == 9
            assert total["rounds_per_hour"] > 0
        text = subprocess.run(
            floor("report", "--db", db),
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=True,
        ).stdout
        assert "casino" not in text and "default/T1" in text

        audit = subprocess.run(
            floor("audit", "--db", db, "--table", "T1", "--journal", str(journals["T1"])),
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )
        assert audit.returncode == 0, audit.stderr
        assert "agrees with the floor" in audit.stdout
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.terminate()
                process.wait(WAIT)
    assert collect.returncode == 0


def _count(db: str) -> int:
    from shoe_floor.store import open_store

    with open_store(db, create=False) as store:
        return store.count_events()


def _stored(db: str, table: str, journal: Path) -> bool:
    from shoe_floor.store import open_store
    from tests.floor.helpers import journal_id, public_records

    with open_store(db, create=False) as store:
        complete = (site_of(store, table), table) not in store.incomplete_tables()
        return complete and len(records_of_table(store, table, journal_id(journal))) == len(
            public_records(journal)
        )


def test_audit_finds_a_journal_rolled_back_to_an_older_copy(
    tmp_path: Path, broker: Mosquitto
) -> None:
    db = str(tmp_path / "floor.sqlite3")
    journal = tmp_path / "T1" / "journal.sqlite3"
    enroll(journal, "T1", db)
    collect = children.spawn(
        collect_command(broker, db),
        env=child_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert collect.stderr is not None
        assert "the floor's key" in collect.stderr.readline()
        assert "collecting from" in collect.stderr.readline()
        running = box(broker, journal, "T1", 60)
        eventually(lambda: _count(db) > 60)
        # A genuine copy taken while the box runs, as docs/journal.md says: the checkpoint
        # first, then SQLite's online backup, and the key.
        backup = tmp_path / "backup"
        backup.mkdir()
        shutil.copy2(journal.with_suffix(".checkpoint"), backup / "journal.checkpoint")
        shutil.copy2(journal.with_suffix(".key"), backup / "journal.key")
        source = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
        target = sqlite3.connect(backup / "journal.sqlite3")
        with target:
            source.backup(target)
        source.close()
        target.close()
        _, err = running.communicate(timeout=WAIT)
        assert running.returncode == 0, err
        eventually(lambda: _stored(db, "T1", journal))
    finally:
        collect.terminate()
        collect.wait(WAIT)
    current = subprocess.run(
        floor("audit", "--db", db, "--table", "T1", "--journal", str(journal), "--json"),
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert current.returncode == 0, current.stderr
    assert json.loads(current.stdout)["ok"] is True
    old = backup / "journal.sqlite3"
    # The old copy verifies on its own (docs/journal.md: undetectable on the box) ...
    from shoe_controller.journal import verify

    assert verify(old).ok
    # ... but not against the floor.
    rolled = subprocess.run(
        floor("audit", "--db", db, "--table", "T1", "--journal", str(old)),
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert rolled.returncode == ExitCode.CHECK_FAILED
    assert "cut_short" in rolled.stderr
    assert len(rolled.stderr.splitlines()) == 1


def test_the_help_is_the_installed_manual_and_names_no_file_the_wheel_lacks() -> None:
    shown = subprocess.run(
        floor("--help"), env=child_env(), capture_output=True, text=True, timeout=WAIT, check=True
    ).stdout
    assert "docs/" not in shown and ".md" not in shown
    for code in (0, 2, 3, 11, 12):
        assert f"\n{code:>5}  " in shown, code
    for command in ("collect", "report", "serve", "audit", "enroll", "users"):
        assert command in shown
