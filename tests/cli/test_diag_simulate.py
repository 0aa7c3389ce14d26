"""shoe-diag simulate in a child process, reached by shoe-diag in another, as a technician
does it from two terminals; and its options, parsed without starting anything."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoe_controller.cli.diag_simulate import sim_options
from shoe_controller.errors import ConfigError, ExitCode
from shoe_controller.simulator import DeckVariant
from tests.cli.conftest import ROOT, Run, child_env, run_process
from tools import children

pytestmark = pytest.mark.usefixtures("hermetic")

READY_TIMEOUT = 20.0


class Simulator:
    """``shoe-diag simulate ...`` running; ``address`` is its first line."""

    def __init__(self, *args: str) -> None:
        self.process = children.spawn(
            [sys.executable, "-m", "shoe_controller.cli.diag", "simulate", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=child_env(),
        )
        assert self.process.stdout is not None
        # readline returns at the first line, or at end of file if the child failed.
        self.first_line = self.process.stdout.readline()

    def stop(self, sig: signal.Signals) -> tuple[int, str, str]:
        self.process.send_signal(sig)
        out, err = self.process.communicate(timeout=READY_TIMEOUT)
        return self.process.returncode, out, err

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


@pytest.fixture
def simulators() -> Iterator[list[Simulator]]:
    started: list[Simulator] = []
    yield started
    for simulator in started:
        simulator.kill()


def test_pty_path_alone_on_the_first_line_then_info_from_another_process(
    simulators: list[Simulator], approving_config: Path
) -> None:
    simulator = Simulator("--pty", "--options", "seed=7&deck=short", "--serial-number", "E2E-1")
    simulators.append(simulator)
    path = simulator.first_line.rstrip("\n")
    assert path.startswith("/dev/pts/") and Path(path).exists(), simulator.first_line

    info = run_process("info", "--device", path, "--config", str(approving_config), "--json")
    assert info.code == ExitCode.OK, info.err
    shoe = json.loads(info.out)
    assert (shoe["serial_number"], shoe["approved"], shoe["verified"]) == ("E2E-1", True, True)

    # Over a port the simulator is a shoe like any other: approved only by the list.
    unlisted = run_process("info", "--device", path)
    assert unlisted.code == ExitCode.NOT_APPROVED
    assert "not on the approved list" in unlisted.error_line

    code, out, err = simulator.stop(signal.SIGINT)
    assert (code, out) == (0, "")
    assert "Traceback" not in err


def test_tcp_address_on_the_first_line_and_sigterm_ends_it(
    simulators: list[Simulator],
) -> None:
    simulator = Simulator("--tcp", "0", "--json")
    simulators.append(simulator)
    address = json.loads(simulator.first_line)["address"]
    assert address.startswith("socket://127.0.0.1:")

    counters = run_process("counters", "--device", address, "--json")
    assert counters.code == ExitCode.OK, counters.err
    assert json.loads(counters.out)["power_cycles"] == 1

    code, out, _ = simulator.stop(signal.SIGTERM)
    assert (code, out) == (0, "")


def test_tcp_plain_first_line(simulators: list[Simulator]) -> None:
    simulator = Simulator("--tcp", "0", "--seed", "3")
    simulators.append(simulator)
    assert simulator.first_line.startswith("socket://127.0.0.1:")
    assert simulator.first_line.count(" ") == 0
    assert simulator.stop(signal.SIGINT)[0] == 0


def test_bad_option_ends_at_once_in_one_line() -> None:
    result = run_process("simulate", "--pty", "--options", "deck=huge")
    assert result.code == ExitCode.CONFIG
    assert result.out == ""
    assert "simulator option deck='huge'" in result.error_line


def test_link_is_for_a_pty(run: Run, tmp_path: Path) -> None:
    result = run("simulate", "--tcp", "0", "--link", str(tmp_path / "shoe"))
    assert result.code == ExitCode.CONFIG
    assert "--link" in result.error_line


def test_a_place_is_required(run: Run) -> None:
    with pytest.raises(SystemExit) as stopped:
        run("simulate")
    assert stopped.value.code == ExitCode.USAGE


def test_options_from_the_query_and_from_flags() -> None:
    options = sim_options("seed=7&deck=short", [("pace", "0.5"), ("faults", "misread@3")])
    assert (options.seed, options.deck, options.pace) == (7, DeckVariant.SHORT, 0.5)
    assert str(options.faults) == "misread@3"
    assert sim_options("sim://?serial=X-1", []).serial_number == "X-1"
    assert sim_options("", []).seed == 0


@pytest.mark.parametrize(
    ("query", "flags", "message"),
    [
        ("seed=7", [("seed", "8")], "given twice"),
        ("seed", [], "is not NAME=VALUE"),
        ("colour=red", [], "unknown simulator option 'colour'"),
        ("", [("window", "0")], "simulator option window='0'"),
    ],
)
def test_option_errors(query: str, flags: list[tuple[str, str]], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        sim_options(query, flags)


def test_link_over_an_existing_file_is_refused(run: Run, tmp_path: Path) -> None:
    precious = tmp_path / "shadow"
    precious.write_text("secret\n")
    result = run("simulate", "--pty", "--link", str(precious))
    assert result.code == ExitCode.CONFIG
    assert f"--link {precious} already exists" in result.error_line
    assert precious.read_text() == "secret\n" and not precious.is_symlink()


def test_link_in_a_missing_directory_is_refused(run: Run, tmp_path: Path) -> None:
    result = run("simulate", "--pty", "--link", str(tmp_path / "bench" / "electronic-shoe"))
    assert result.code == ExitCode.CONFIG
    assert f"(mkdir -p {tmp_path / 'bench'})" in result.error_line
