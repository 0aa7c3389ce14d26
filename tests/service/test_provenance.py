"""Provenance: every start journals what ran (software, configuration, rules profile, bench
or table, the clock's state), and a step of the wall clock is journaled as it is seen."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

import shoe_controller
from shoe_controller import __version__
from shoe_controller.journal.records import Kind
from shoe_controller.service.clockwatch import ClockStep, ClockWatcher
from shoe_controller.service.config import load_config
from shoe_controller.service.provenance import (
    STA_UNSYNC,
    TIME_ERROR,
    ClockState,
    clock_state,
    read_kernel_clock,
    service_started,
    software_sha256,
    tree_sha256,
)
from tests.service.helpers import start_table
from tests.service.recipe import PACKAGES, by_the_recipe


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _records(journal: Path, kind: Kind) -> list[dict[str, object]]:
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT payload FROM records WHERE kind = ? ORDER BY seq", (kind.value,)
        ).fetchall()
    finally:
        conn.close()
    return [json.loads(text) for (text,) in rows]


def test_the_software_digest_follows_the_documented_recipe() -> None:
    roots = list(PACKAGES.values())
    assert software_sha256() == by_the_recipe(roots) == tree_sha256(roots)


def test_the_software_digest_covers_every_file_but_caches(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub" / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "data.toml").write_text("a = 1\n")
    first = tree_sha256([package])
    (package / "sub" / "__pycache__" / "x.pyc").write_bytes(b"compiled")
    assert tree_sha256([package]) == first
    (package / "sub" / "data.toml").write_text("a = 2\n")
    assert tree_sha256([package]) != first
    (package / "sub" / "data.toml").write_text("a = 1\n")
    (package / "sub" / "new.py").write_text("")
    assert tree_sha256([package]) != first


def test_the_clock_state_from_the_kernel() -> None:
    state, status = read_kernel_clock()  # Linux: any user may read it
    assert 0 <= state <= TIME_ERROR
    real = clock_state()
    assert real.source == "adjtimex"
    assert real.synchronized is (state != TIME_ERROR and not status & STA_UNSYNC)


@pytest.mark.parametrize(
    ("state", "status", "synchronized"),
    [(0, 0, True), (0, STA_UNSYNC, False), (TIME_ERROR, 0, False), (1, 0x2001, True)],
)
def test_the_clock_state_is_read_from_the_state_and_status(
    state: int, status: int, synchronized: bool
) -> None:
    assert clock_state(lambda: (state, status)) == ClockState(synchronized, "adjtimex")


def test_an_unreadable_clock_is_unknown_not_an_error() -> None:
    def fail() -> tuple[int, int]:
        raise OSError(1, "Operation not permitted")

    unknown = clock_state(fail)
    assert unknown.synchronized is None
    assert unknown.source.startswith("unavailable: ")


def test_the_service_started_payload(tmp_path: Path) -> None:
    config_file = tmp_path / "config.toml"
    config_file.write_text("[table]\ndice_wager = true\ngate_window = 2\n")
    config = load_config(config_file)
    payload = service_started(config, bench=False, clock=ClockState(True, "adjtimex"), pid=42)
    assert payload == {
        "version": __version__,
        "pid": 42,
        "software_sha256": by_the_recipe(list(PACKAGES.values())),
        "manifest_sha256": None,
        "config_sha256": hashlib.sha256(config_file.read_bytes()).hexdigest(),
        "profile": {"name": "pr-pai-gow-poker", "version": 3},
        "rules": {**config.table.plain(), "dice_wager": True, "gate_window": 2},
        "evidence": {"stub": "sealed", "external_rng_signature": "optional"},
        "external_rng": None,
        "bench": False,
        "clock": {"synchronized": True, "source": "adjtimex"},
    }
    assert json.loads(json.dumps(payload)) == payload
    assert service_started(load_config(None), bench=True)["config_sha256"] is None


def test_every_start_is_journaled_with_its_provenance(tmp_path: Path) -> None:
    controller, _ = start_table(tmp_path, script=None)
    controller.stop()
    (started,) = _records(tmp_path / "journal.sqlite3", Kind.SERVICE_STARTED)
    assert started["software_sha256"] == by_the_recipe(list(PACKAGES.values()))
    assert started["profile"] == {"name": "pr-pai-gow-poker", "version": 3}
    assert started["bench"] is True  # the in-process simulator deals only on a bench
    assert started["clock"] == clock_state().plain()
    assert started["rules"] == load_config(None).table.plain()


def test_the_clock_watcher_ignores_drift_and_reports_steps() -> None:
    wall, mono = FakeClock(1_800_000_000.0), FakeClock(100.0)
    watcher = ClockWatcher(wall, mono)
    wall.now += 10.5
    mono.now += 10.0
    assert watcher.check() is None  # half a second: drift, not a step
    wall.now += 3600.0 + 5.0
    mono.now += 5.0
    assert watcher.check() == ClockStep(3600.0, 1_800_000_015.5, 1_800_003_615.5)
    wall.now -= 120.0
    step = watcher.check()
    assert step is not None and step.step_seconds == -120.0
    assert step.payload() == {
        "step_seconds": -120.0,
        "wall_before": "2027-01-15T09:00:15.500000Z",
        "wall_after": "2027-01-15T08:58:15.500000Z",
    }
    assert watcher.check() is None


def test_a_clock_step_is_journaled_when_the_loop_wakes(tmp_path: Path) -> None:
    from shoe_controller.service.config import Config
    from shoe_controller.service.controller import TableController

    wall, mono = FakeClock(1_800_000_000.0), FakeClock(0.0)
    controller = TableController(
        Config(),
        journal_path=tmp_path / "journal.sqlite3",
        device="sim://?pace=0",
        clock=wall,
        monotonic=mono,
    )
    controller.start()
    try:
        wall.now += 7200.0  # someone set the clock two hours ahead
        controller.close_round().exception(timeout=10)  # anything that wakes the loop
    finally:
        controller.stop()
    (step,) = _records(tmp_path / "journal.sqlite3", Kind.CLOCK_STEP)
    assert step == {
        "step_seconds": 7200.0,
        "wall_before": "2027-01-15T08:00:00.000000Z",
        "wall_after": "2027-01-15T10:00:00.000000Z",
    }


def test_the_shell_recipe_in_the_journal_docs_gives_the_same_digest() -> None:
    import subprocess

    doc = (Path(__file__).parents[2] / "docs" / "journal.md").read_text(encoding="utf-8")
    block = doc.split("In a shell, from the `site-packages` directory:\n\n", 1)[1]
    script = "\n".join(line[4:] for line in block.splitlines()[:2])
    site = Path(shoe_controller.__file__).resolve().parents[1]
    done = subprocess.run(
        ["bash", "-c", script], cwd=site, capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split()[0] == by_the_recipe(list(PACKAGES.values()))
