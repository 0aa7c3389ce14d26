"""The same rounds as the demo, over a real pseudo-terminal, with the simulated shoe in
another process and approved by a configuration file, as on a bench."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from shoe_controller.simulator import firmware
from tools import children


@pytest.mark.rule("A1")
@pytest.mark.rule("C1")
@pytest.mark.rule("D1")
def test_rounds_over_a_pty_in_another_process(tmp_path: Path) -> None:
    config = tmp_path / "bench.toml"
    config.write_text(
        '[[approved_shoes]]\nmodel = "ES-SIM"\nfirmware_version = "1.0.0"\n'
        f'firmware_digest = "{firmware.DIGEST.hex()}"\n'
    )
    simulator = children.spawn(
        [sys.executable, "-m", "shoe_controller.cli.diag", "simulate", "--pty", "--seed", "31"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert simulator.stdout is not None
        path = simulator.stdout.readline().strip()
        assert path.startswith("/dev/pts/"), path
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "shoe_controller",
                "run",
                # A simulated shoe on a bench, answered by the bench's automatic croupier.
                "--bench",
                "--json",
                "--device",
                path,
                "--config",
                str(config),
                "--journal",
                str(tmp_path / "journal.sqlite3"),
                "--rounds",
                "2",
                "--wagers",
                "2,4",
                "--dice",
                "6,6,6",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        simulator.send_signal(signal.SIGTERM)
        simulator.wait(timeout=10)
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert events[0]["event"] == "started"
    [connected] = [e for e in events if e["event"] == "connected"]
    assert connected["approved"] is True and connected["device"] == path
    ends = [e for e in events if e["event"] == "round_end"]
    assert [e["outcome"] for e in ends] == ["dealt", "dealt"]
    # Dice 6+6+6 = 18 -> ((18 - 1) mod 7) + 1 = 4.
    assert all(e["start_position"] == 4 for e in ends)
    closed = [e for e in events if e["event"] == "round_closed"]
    assert [sorted(e["hands"]) for e in closed] == [["1", "2", "4"]] * 2
    assert sum(1 for e in events if e["event"] == "card") == 98
    assert simulator.returncode == 0
