"""Files a person names: a FIFO, a device, a directory, a huge or deeply nested file. Each
ends the command at once with one line and exit code 3 (9 for the journal's key); nothing
blocks, nothing runs out of memory, nothing is a traceback."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from shoe_controller.cli import controller
from shoe_controller.errors import ExitCode
from shoe_controller.simulator import firmware
from tests.cli.conftest import ROOT, Run, child_env, write_config

pytestmark = pytest.mark.usefixtures("hermetic")

Shape = Callable[[Path], Path]


def _fifo(tmp: Path) -> Path:
    path = tmp / "fifo.toml"
    os.mkfifo(path)
    return path


def _dev_zero(tmp: Path) -> Path:
    return Path("/dev/zero")


def _directory(tmp: Path) -> Path:
    return tmp


def _huge(tmp: Path) -> Path:
    path = tmp / "huge.toml"
    path.write_bytes(b"# " + b"x" * (2 << 20) + b"\n")
    return path


def _deep(tmp: Path) -> Path:
    path = tmp / "deep.toml"
    path.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    return path


SHAPES: dict[str, tuple[Shape, str]] = {
    "fifo": (_fifo, "is not a file: it is a FIFO (named pipe), not a regular file"),
    "dev_zero": (_dev_zero, "is not a file: it is a character device, not a regular file"),
    "directory": (_directory, "is a directory"),
    "huge": (_huge, "is too large: it is larger than 1 MiB"),
    "deep": (_deep, "nests arrays or tables too deeply"),
}


def _controller(*args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "shoe_controller", *args],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
        env=child_env(),
        check=False,
    )
    return done.returncode, done.stderr


@pytest.mark.parametrize("shape", SHAPES)
def test_shoe_controller_refuses_the_configuration_at_once(tmp_path: Path, shape: str) -> None:
    # In a child process: before the fix a FIFO blocked for ever and ignored SIGTERM.
    make, expected = SHAPES[shape]
    code, err = _controller("run", "--config", str(make(tmp_path)), "--journal", "unused")
    assert code == ExitCode.CONFIG, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("shoe-controller: error: configuration "), err
    assert expected in lines[0]


@pytest.mark.parametrize("shape", SHAPES)
def test_shoe_diag_refuses_the_configuration_at_once(run: Run, tmp_path: Path, shape: str) -> None:
    make, expected = SHAPES[shape]
    result = run("info", "--device", "sim://", "--config", str(make(tmp_path)))
    assert result.code == ExitCode.CONFIG
    assert expected in result.error_line


def test_shoe_diag_check_reports_it_as_a_failed_check(run: Run, tmp_path: Path) -> None:
    result = run("check", "--config", str(_fifo(tmp_path)), "--json")
    assert result.code == ExitCode.CHECK_FAILED
    assert '"check":"configuration","ok":false' in result.out
    assert "FIFO" in result.out


def test_an_approved_image_that_is_a_fifo_is_refused(run: Run, tmp_path: Path) -> None:
    fifo = tmp_path / "image.bin"
    os.mkfifo(fifo)
    config = write_config(tmp_path / "config.toml", image=fifo)
    result = run("info", "--device", "sim://", "--config", str(config))
    assert result.code == ExitCode.CONFIG
    assert "key 'image': cannot read" in result.error_line
    assert "FIFO" in result.error_line


def test_verify_image_that_is_a_device_is_refused(run: Run) -> None:
    result = run("verify", "--device", "sim://", "--image", "/dev/zero")
    assert result.code == ExitCode.CONFIG
    assert "character device" in result.error_line


def test_a_journal_key_that_is_a_fifo_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "j.sqlite3"
    assert (
        controller.main(
            ["demo", "--rounds", "1", "--device", "sim://?pace=0", "--journal", str(journal)]
        )
        == ExitCode.OK
    )
    capsys.readouterr()
    key = tmp_path / "key.fifo"
    os.mkfifo(key)
    code = subprocess.run(
        [
            sys.executable,
            "-m",
            "shoe_controller.cli.diag",
            "audit",
            "verify",
            "--journal",
            str(journal),
            "--key",
            str(key),
        ],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=ROOT,
        env=child_env(),
        check=False,
    )
    assert code.returncode == ExitCode.JOURNAL, code.stderr
    assert "FIFO" in code.stderr and len(code.stderr.splitlines()) == 1


def test_the_image_digest_is_unchanged_for_a_regular_file(run: Run, tmp_path: Path) -> None:
    image = tmp_path / "image.bin"
    image.write_bytes(firmware.IMAGE)
    config = write_config(tmp_path / "config.toml", image=image)
    assert hashlib.sha256(image.read_bytes()).digest() == firmware.DIGEST
    assert run("verify", "--device", "sim://", "--config", str(config)).code == ExitCode.OK


def test_install_refuses_a_configuration_that_is_a_fifo(run: Run, tmp_path: Path) -> None:
    image = tmp_path / "image"
    image.mkdir()
    result = run("install", "--dry-run", "--prefix", str(image), "--config", str(_fifo(tmp_path)))
    assert result.code == ExitCode.CONFIG
    assert "FIFO" in result.error_line


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ("loop://", "loop:// is pyserial's loopback"),
        ("sim://?fault=bogus", "unknown simulator option 'fault'"),
        ("usb://zz:1", "expected usb://VID:PID"),
    ],
)
def test_shoe_diag_refuses_an_address_that_cannot_work(
    run: Run, device: str, expected: str
) -> None:
    result = run("info", "--device", device)
    assert result.code == ExitCode.CONFIG
    assert expected in result.error_line
