"""Fixtures for the shoe-diag tests: run the command in-process, write configurations, and
leave no simulated shoe behind."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shoe_controller.cli import diag, diag_common
from shoe_controller.simulator import firmware
from shoe_controller.simulator.transport import live_addresses, switch_off

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    @property
    def error_line(self) -> str:
        """The one line an error ends with (the whole of standard error)."""
        lines = self.err.splitlines()
        assert len(lines) == 1, self.err
        assert lines[0].startswith("shoe-diag: "), self.err
        return lines[0]


Run = Callable[..., Result]


@pytest.fixture
def hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No installed configuration, no colour from the environment, no shoe left running.
    Every shoe-diag test module uses it (``pytestmark``)."""
    monkeypatch.setattr(diag_common, "DEFAULT_CONFIG", tmp_path / "no-such-config.toml")
    monkeypatch.delenv("NO_COLOR", raising=False)
    yield
    for address in live_addresses():
        switch_off(address)


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    """``run("info", "--device", "sim://")``: shoe-diag in this process."""

    def call(*args: str) -> Result:
        code = diag.main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return call


def run_process(*args: str, timeout: float = 30.0) -> Result:
    """``python -m shoe_controller.cli.diag`` in a child process."""
    done = subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.diag", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=child_env(),
        check=False,
    )
    return Result(done.returncode, done.stdout, done.stderr)


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.fixture
def image(tmp_path: Path) -> Path:
    """The simulated shoe's firmware image, as an operator keeps it on file."""
    path = tmp_path / "es-sim-1.0.0.bin"
    path.write_bytes(firmware.IMAGE)
    return path


def write_config(
    path: Path,
    *,
    device: str | None = None,
    model: str = firmware.MODEL,
    version: str = firmware.FIRMWARE_VERSION,
    digest: str | None = None,
    image: Path | None = None,
    extra: str = "",
) -> Path:
    """A configuration whose approved list holds one entry (the simulator by default)."""
    lines = []
    if device is not None:
        lines += ["[device]", f'address = "{device}"', ""]
    lines += [
        "[[approved_shoes]]",
        f'model = "{model}"',
        f'firmware_version = "{version}"',
        f'firmware_digest = "{digest or hashlib.sha256(firmware.IMAGE).hexdigest()}"',
    ]
    if image is not None:
        lines.append(f'image = "{image}"')
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path


@pytest.fixture
def approving_config(tmp_path: Path, image: Path) -> Path:
    """Approves the simulated shoe, with seeded verification against its image."""
    return write_config(tmp_path / "config.toml", image=image)
