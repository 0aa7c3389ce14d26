"""``shoe-controller``: the JSON contract line by line, and every error a person can cause
ending in one line and its documented exit code."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

import pytest

from shoe_controller.cli.controller import main
from shoe_controller.errors import ExitCode
from shoe_controller.hal.serial_transport import SerialTransport
from shoe_controller.service import events as ev
from tools import children

CARD_TEXT = re.compile(r'"(?:[A2-9TJQK][SHDC]|JK)"')
EVENTS = {event.NAME for event in ev.event_types()}
OUTCOMES = {"dealt", "void_misdeal", "void_deck_removed", "void_fault", "not_played"}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


@pytest.mark.rule("E1")
@pytest.mark.rule("E2")
@pytest.mark.rule("B1")
def test_json_contract_line_by_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, err = _run(
        capsys,
        "demo",
        "--json",
        "--rounds",
        "2",
        "--device",
        "sim://?seed=21&pace=0",
        "--journal",
        str(tmp_path / "j.sqlite3"),
        "--wagers",
        "2,4,5",
        "--dice",
        "3,4,5",
    )
    assert code == 0, err
    objs = [json.loads(line) for line in lines]
    assert objs[0]["event"] == "started"
    # Until the shoe answers, the table asks for one (F6); an unsynchronised clock is a
    # notice (this machine's clock may be either).
    assert (objs[1]["event"], objs[1]["need"]) == ("prompt", "connect_shoe")
    [connected] = [o for o in objs if o["event"] == "connected"]
    assert {"device", "model", "serial", "firmware", "approved"} <= set(connected)
    cards_by_round: dict[str, list[int]] = {}
    for obj in objs:
        assert obj["event"] in EVENTS
        assert datetime.fromisoformat(obj["ts"].replace("Z", "+00:00")).tzinfo is not None
        assert obj["ts"].endswith("Z")
        assert "round" in obj
        if obj["event"] == "round_closed":
            assert set(obj["hands"]) == {"1", "2", "4", "5"}
            for hand in obj["hands"].values():
                assert len(hand) == 7 and all(CARD_TEXT.fullmatch(f'"{c}"') for c in hand)
        else:
            assert not CARD_TEXT.search(json.dumps(obj)), obj
        if obj["event"] == "card":
            assert set(obj) == {"event", "ts", "round", "index", "position"}
            assert 1 <= obj["position"] <= 7
            cards_by_round.setdefault(obj["round"], []).append(obj["index"])
        if obj["event"] == "start_position":
            # Dice 3+4+5 = 12 -> ((12 - 1) mod 7) + 1 = 5.
            assert obj == {**obj, "method": "dice", "dice": [3, 4, 5], "position": 5}
            assert "value" not in obj
        if obj["event"] == "round_end":
            assert obj["outcome"] in OUTCOMES
            assert set(obj) >= {
                "reason",
                "start_position",
                "cards_per_position",
                "wagered",
                "collected_unseen",
            }
            assert obj["cards_per_position"] == {str(p): 7 for p in range(1, 8)}
            assert obj["wagered"] == [2, 4, 5]
            assert obj["collected_unseen"] == [3, 6, 7]
    assert list(cards_by_round.values())[:2] == [list(range(1, 50))] * 2
    assert sum(1 for o in objs if o["event"] == "round_closed") == 2


def test_rng_start_position_carries_the_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, _ = _run(
        capsys,
        "demo",
        "--json",
        "--rounds",
        "1",
        "--rng",
        "--device",
        "sim://?seed=22&pace=0",
        "--journal",
        str(tmp_path / "j.sqlite3"),
    )
    assert code == 0
    starts = [o for o in map(json.loads, lines) if o["event"] == "start_position"]
    assert starts and starts[0]["method"] == "rng"
    assert starts[0]["value"] == starts[0]["position"] and "dice" not in starts[0]


def test_human_demo_explains_each_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = _run(
        capsys,
        "demo",
        "--rounds",
        "1",
        "--device",
        "sim://?seed=23&pace=0",
        "--color",
        "never",
    )
    assert code == 0
    text = "\n".join(lines)
    assert "No more bets" in text and "Stub counted by the shoe: 4 cards." in text
    assert "Rounds: 1 (1 dealt)." in text
    assert not CARD_TEXT.search(json.dumps(text))


def _one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_unparseable_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "--dice", "1,2"])
    assert exc.value.code == ExitCode.USAGE
    line = _one_line_error(capsys.readouterr().err)
    assert "three dice" in line


def test_bad_configuration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[table]\npositions = "seven"\n')
    code, _, err = _run(capsys, "demo", "--config", str(config))
    assert code == ExitCode.CONFIG
    assert "positions" in _one_line_error(err)
    config.write_text("[table\n")
    code, _, err = _run(capsys, "demo", "--config", str(config))
    assert code == ExitCode.CONFIG
    assert "not valid TOML" in _one_line_error(err)
    code, _, err = _run(capsys, "demo", "--config", str(tmp_path / "missing.toml"))
    assert code == ExitCode.CONFIG
    assert "does not exist" in _one_line_error(err)


def test_no_such_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(
        capsys, "run", "--device", str(tmp_path / "ttyACM9"), "--journal", str(tmp_path / "j")
    )
    assert code == ExitCode.DEVICE_NOT_FOUND
    _one_line_error(err)


def test_port_held_by_another_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    master, slave = os.openpty()
    path = os.ttyname(slave)
    holder = SerialTransport(path)
    holder.open()
    try:
        code, _, err = _run(capsys, "run", "--device", path, "--journal", str(tmp_path / "j"))
    finally:
        holder.close()
        os.close(master)
        os.close(slave)
    assert code == ExitCode.DEVICE_BUSY
    assert "in use by another process" in _one_line_error(err)


def test_permission_denied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    master, slave = os.openpty()
    path = os.ttyname(slave)
    try:
        if os.geteuid() == 0:
            # root opens anything: make the open fail as the kernel would for a user.
            import serial

            def denied(*args: object, **kwargs: object) -> None:
                raise serial.SerialException(13, f"could not open port {path}: Permission denied")

            monkeypatch.setattr(serial.Serial, "open", denied)
        else:
            os.chmod(path, 0)
        code, _, err = _run(capsys, "run", "--device", path, "--journal", str(tmp_path / "j"))
    finally:
        os.close(master)
        os.close(slave)
    assert code == ExitCode.PERMISSION_DENIED
    assert "shoe" in _one_line_error(err)


def test_corrupt_journal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = tmp_path / "journal.sqlite3"
    journal.write_bytes(b"this is not a journal" * 100)
    code, _, err = _run(
        capsys, "demo", "--journal", str(journal), "--device", "sim://?seed=24&pace=0"
    )
    assert code == ExitCode.JOURNAL
    _one_line_error(err)
    assert journal.read_bytes() == b"this is not a journal" * 100


@pytest.mark.rule("A1")
def test_a_simulator_over_a_port_is_not_approved_unless_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from shoe_controller.simulator.options import SimOptions
    from shoe_controller.simulator.pty_frontend import PtyFrontEnd

    with PtyFrontEnd(SimOptions(seed=25)) as front:
        code, lines, err = _run(
            capsys,
            "run",
            "--bench",
            "--json",
            "--rounds",
            "1",
            "--wagers",
            "2",
            "--device",
            front.address,
            "--journal",
            str(tmp_path / "j.sqlite3"),
        )
    assert code == ExitCode.NOT_APPROVED
    assert "approved_shoes" in _one_line_error(err)
    events = [json.loads(x)["event"] for x in lines]
    assert "card" not in events


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_wait_keeps_waiting_for_a_shoe_that_is_not_there(tmp_path: Path) -> None:
    # The service at boot: the shoe is not plugged in yet. --wait must not end the run;
    # stop it as systemd does, with SIGTERM, and it ends cleanly.
    import signal
    import subprocess
    import sys

    child = children.spawn(
        [
            sys.executable,
            "-m",
            "shoe_controller",
            "run",
            "--wait",
            "--json",
            # The service at boot serves the console: people sign in there (E4).
            "--api",
            f"127.0.0.1:{free_port()}",
            "--device",
            str(tmp_path / "ttyACM7"),
            "--journal",
            str(tmp_path / "j.sqlite3"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None
    first = child.stderr.readline()
    assert "waiting for the shoe" in first
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=20)
    assert child.returncode == 0, err
    assert "Traceback" not in err
