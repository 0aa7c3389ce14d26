"""``shoe-controller`` in the field: the simulator deals only on a bench, a demo never
touches the production journal, a bad address is refused at once, an exposed key is said,
and waiting for a shoe does not flood the log."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from shoe_controller.cli.controller import build_parser, main
from shoe_controller.cli.narration import WAITING_REPEAT, Narrator
from shoe_controller.cli.output import Output
from shoe_controller.errors import ConfigError, ExitCode
from shoe_controller.journal.paths import default_key_path
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.service.controller import TableController
from tests.cli.conftest import ROOT, child_env

pytestmark = pytest.mark.usefixtures("hermetic")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("shoe-controller: error: "), err
    return lines[0]


def _started(journal: Path) -> list[dict[str, object]]:
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT payload FROM records WHERE kind = 'service_started' ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    return [json.loads(text) for (text,) in rows]


# -- the simulator deals only on a bench (run --bench) ----------------------------------


@pytest.mark.rule("A1")
@pytest.mark.parametrize("device", ["sim://", "sim://?pace=0", "SIM://?seed=3"])
def test_run_refuses_the_in_process_simulator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], device: str
) -> None:
    code, _, err = _run(capsys, "run", "--device", device, "--journal", str(tmp_path / "j"))
    assert code == ExitCode.CONFIG
    line = _one_line(err)
    assert "shoe-controller demo" in line and "--bench" in line
    assert not (tmp_path / "j").exists()


@pytest.mark.rule("A1")
def test_run_refuses_a_configured_simulator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[device]\naddress = "sim://"\n')
    code, _, err = _run(capsys, "run", "--config", str(config), "--journal", str(tmp_path / "j"))
    assert code == ExitCode.CONFIG
    assert "--bench" in _one_line(err)


def test_a_bench_run_deals_and_is_journaled_as_bench(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "bench.sqlite3"
    code, _, err = _run(
        capsys,
        "run",
        "--bench",
        "--device",
        "sim://?pace=0&seed=5",
        "--journal",
        str(journal),
        "--rounds",
        "1",
        "--wagers",
        "2,4,5",
    )
    assert code == ExitCode.OK, err
    (started,) = _started(journal)
    assert started["bench"] is True


def test_only_run_takes_bench() -> None:
    assert build_parser().parse_args(["run", "--bench"]).bench is True
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "--bench"])


# -- a demo never writes into the configured journal ------------------------------------


def test_a_demo_never_touches_the_configured_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    production = tmp_path / "production"
    production.mkdir()
    journal, key = production / "journal.sqlite3", production / "table.key"
    config = tmp_path / "config.toml"
    config.write_text(f'[journal]\npath = "{journal}"\nkey = "{key}"\n')
    code, out, err = _run(
        capsys, "demo", "--config", str(config), "--rounds", "1", "--device", "sim://?pace=0"
    )
    assert code == ExitCode.OK, err
    assert sorted(production.iterdir()) == []
    assert "journal: " in out and str(journal) not in out


def test_a_demo_with_journal_writes_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[journal]\npath = "{tmp_path / "production.sqlite3"}"\n')
    chosen = tmp_path / "demo.sqlite3"
    code, _, err = _run(
        capsys,
        "demo",
        "--config",
        str(config),
        "--journal",
        str(chosen),
        "--rounds",
        "1",
        "--device",
        "sim://?pace=0",
    )
    assert code == ExitCode.OK, err
    assert _started(chosen)[0]["bench"] is True
    assert not (tmp_path / "production.sqlite3").exists()


def test_demo_help_tells_the_wagers_it_uses() -> None:
    parser = build_parser()
    help_texts = {
        name: sub.format_help()
        for name, sub in parser._subparsers._group_actions[0].choices.items()  # type: ignore[union-attr]
    }
    assert "2,4,5" in help_texts["demo"].split("--wagers", 1)[1].split("--dice")[0]
    # A table's wagers are entered by a person, never assumed (A3).
    assert "default: entered at the console, never assumed" in " ".join(help_texts["run"].split())


# -- an address that cannot work is refused at once -------------------------------------

BAD_ADDRESSES = [
    ("demo", "sim://?fault=bogus", "unknown simulator option 'fault'"),
    ("demo", "sim://?window=0", "simulator option window='0'"),
    ("demo", "sim://?heartbeat=nan", "simulator option heartbeat='nan'"),
    ("run", "loop://", "loop:// is pyserial's loopback"),
    ("run", "spy://loop://", "loop:// is pyserial's loopback"),
    ("run", "usb://zz:1", "expected usb://VID:PID"),
    ("run", "usb://1209:0001?serial=", "serial= needs the shoe's serial number"),
]


@pytest.mark.parametrize(("command", "device", "expected"), BAD_ADDRESSES)
def test_a_bad_address_is_refused_before_any_attempt(
    tmp_path: Path, command: str, device: str, expected: str
) -> None:
    # A child process: before the fix the service retried these for ever.
    args = [command, "--device", device, "--journal", str(tmp_path / "j"), "--bench"]
    if command == "demo":
        args.remove("--bench")
    done = subprocess.run(
        [sys.executable, "-m", "shoe_controller", *args],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
        env=child_env(),
        check=False,
    )
    assert done.returncode == ExitCode.CONFIG, done.stderr
    assert expected in _one_line(done.stderr)


def test_the_controller_itself_refuses_a_bad_address(tmp_path: Path) -> None:
    controller = TableController(
        Config(), journal_path=tmp_path / "j.sqlite3", device="sim://?fault=bogus"
    )
    with pytest.raises(ConfigError, match="unknown simulator option 'fault'"):
        controller.start()
    assert not (tmp_path / "j.sqlite3").exists()


# -- an exposed key is said on standard error --------------------------------------------


def test_an_exposed_key_is_said_on_standard_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "j.sqlite3"
    argv = ["demo", "--rounds", "1", "--journal", str(journal), "--device"]
    code, _, err = _run(capsys, *argv, "sim://?pace=0&seed=1")
    assert code == ExitCode.OK and err == ""
    key = default_key_path(journal)
    os.chmod(key, 0o640)
    code, _, err = _run(capsys, *argv, "sim://?pace=0&seed=2")
    assert code == ExitCode.OK
    (line,) = err.splitlines()
    assert line == (
        f"shoe-controller: warning: journal key {key} has mode 0640: other accounts can read "
        "it, and with it read every sealed card and forge the journal; run: chmod 600 "
        f"{key}"
    )


# -- waiting for a shoe: said once, then once a minute -----------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_waiting_for_the_shoe_is_said_once_then_once_a_minute() -> None:
    stream, clock = io.StringIO(), Clock()
    narrator = Narrator(Output(stream=stream), clock, deal_size=49)
    narrator.waiting_announced()  # the start-up line said it first
    retry = ev.LinkStatusEvent(status="reconnecting", message="cannot open the shoe (...)")
    for _ in range(30):  # every 5 s for 150 s
        narrator.tell(retry)
        clock.now += 5.0
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2  # at 60 s and 120 s
    assert all(line.startswith("Link reconnecting: ") for line in lines)
    narrator.tell(
        ev.ConnectedEvent(
            device="/dev/x", model="M", serial="S", firmware="1", approved=True, reason="ok"
        )
    )
    narrator.tell(retry)  # a new outage is said at once
    assert stream.getvalue().splitlines()[-1].startswith("Link reconnecting: ")
    assert WAITING_REPEAT == 60.0


# -- the journal: a refused path is left as found; a damaged journal is never appended to --


def test_a_directory_as_journal_leaves_no_lock_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "tmp"
    target.mkdir()
    code, _, err = _run(capsys, "demo", "--device", "sim://?pace=0", "--journal", str(target))
    assert code == ExitCode.JOURNAL
    assert "is a directory, not a journal" in _one_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]


def test_a_journal_changed_in_its_middle_stops_the_service(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "j.sqlite3"
    argv = ["demo", "--rounds", "1", "--journal", str(journal), "--device"]
    assert _run(capsys, *argv, "sim://?pace=0&seed=1")[0] == ExitCode.OK
    conn = sqlite3.connect(journal, isolation_level=None)
    conn.execute("DROP TRIGGER records_no_update")
    conn.execute("UPDATE records SET wall = '2000-01-01T00:00:00.000000Z' WHERE seq = 3")
    count = conn.execute("SELECT count(*) FROM records").fetchone()[0]
    conn.close()
    before = count, journal.with_suffix(".checkpoint").read_bytes()
    code, _, err = _run(capsys, *argv, "sim://?pace=0&seed=2")
    assert code == ExitCode.JOURNAL
    assert "does not verify at record 3" in _one_line(err)
    conn = sqlite3.connect(journal)
    after = conn.execute("SELECT count(*) FROM records").fetchone()[0]
    conn.close()
    assert (after, journal.with_suffix(".checkpoint").read_bytes()) == before
