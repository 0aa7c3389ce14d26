"""Rule A1 (software identity): the software manifest journaled at every start, and the
installation read again and compared with it."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.box.installation import (
    RULES_FILE,
    UNIT_DROP_INS,
    UNIT_FILE,
    plan,
    system_files,
)
from shoe_controller.journal.records import Kind
from shoe_controller.service import manifest as manifest_module
from shoe_controller.service.config import Config
from shoe_controller.service.controller import TableController
from shoe_controller.service.install_check import check_installation
from shoe_controller.service.manifest import (
    manifest_sha256,
    normalized,
    service_distributions,
    software_manifest,
)
from shoe_controller.simulator.transport import live_addresses, switch_off
from tests.service.helpers import start_table
from tests.service.installed import Installed, installed_fixture  # noqa: F401 (a fixture)
from tests.service.recipe import PACKAGES, by_the_recipe

pytestmark = pytest.mark.rule("A1")


@pytest.fixture(autouse=True)
def _no_shoe_left_running() -> Iterator[None]:
    yield
    for address in live_addresses():
        switch_off(address)


def _records(journal: Path) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT seq, kind, payload FROM records ORDER BY seq").fetchall()
    finally:
        conn.close()


def _record_file(name: str) -> Path:
    """A distribution's RECORD, found by its own dist-info directory on sys.path."""
    dist = importlib.metadata.distribution(name)
    stem = f"{normalized(name).replace('-', '_')}-{dist.version}.dist-info"
    for entry in sys.path:
        for candidate in Path(entry or ".").glob("*.dist-info"):
            if candidate.name.lower() == stem.lower() and (candidate / "RECORD").is_file():
                return candidate / "RECORD"
    raise AssertionError(f"no RECORD for {name}")


def _entry(manifest: dict[str, Any], name: str) -> dict[str, Any]:
    (entry,) = [d for d in manifest["distributions"] if d["name"] == name]
    return entry


# --- what the manifest holds ---------------------------------------------------------------


def test_our_packages_each_by_the_recipe(tmp_path: Path) -> None:
    manifest = software_manifest()
    software = manifest["software"]
    assert sorted(software["packages"]) == [
        "firmware_protocol",
        "floor_protocol",
        "shoe_controller",
        "shoe_floor",
    ]
    assert software["sha256"] == by_the_recipe(list(PACKAGES.values()))
    for name, root in PACKAGES.items():
        assert software["packages"][name] == by_the_recipe([root]), name


def test_the_distributions_the_service_runs_on() -> None:
    manifest = software_manifest()
    names = [d["name"] for d in manifest["distributions"]]
    assert names == sorted(names)
    # What our distribution requires, and what provides a module the process has loaded.
    for required in ("pyserial", "pyusb", "transitions", "cobs", "paho-mqtt", "argon2-cffi"):
        assert required in names
    assert "pytest" in names  # loaded in this process
    for name in ("pyserial", "transitions", "paho-mqtt"):
        entry = _entry(manifest, name)
        assert entry["version"] == importlib.metadata.version(name)
        assert entry["record_sha256"] == hashlib.sha256(_record_file(name).read_bytes()).hexdigest()


def test_a_distribution_is_listed_once_loaded(installed: Installed) -> None:
    manifest = software_manifest(modules=["fake_evidence.sub", "os"])
    entry = _entry(manifest, "fake-evidence")
    assert entry == {
        "name": "fake-evidence",
        "version": "1.0",
        "record_sha256": hashlib.sha256(installed.record.read_bytes()).hexdigest(),
    }
    assert "fake-evidence" not in service_distributions(["os", "json"])


def test_the_interpreter() -> None:
    """What the manifest says of the interpreter, against what others say of it: the
    interpreter itself, asked in a process of its own, and coreutils' sha256sum."""
    python = software_manifest()["python"]
    said = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, platform, sys; print(platform.python_version()); "
            "print(sys.implementation.name); print(os.path.realpath(sys.executable))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    summed = subprocess.run(
        ["sha256sum", said[2]], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()[0]
    assert python == {
        "version": said[0],
        "implementation": said[1],
        "executable": said[2],
        "sha256": summed,
    }


def test_system_files_present_absent_or_unreadable(tmp_path: Path) -> None:
    unit = tmp_path / "shoe-controller.service"
    unit.write_text("[Unit]\n")
    missing = tmp_path / "70-electronic-shoe.rules"
    directory = tmp_path / "a-directory"
    directory.mkdir()
    entries = software_manifest([unit, missing, directory])["system_files"]
    assert entries == [
        {"path": str(missing), "present": False, "sha256": None},
        {"path": str(directory), "present": True, "sha256": None, "error": "it is a directory"},
        {"path": str(unit), "present": True, "sha256": hashlib.sha256(b"[Unit]\n").hexdigest()},
    ]


def test_the_system_files_are_those_the_installation_writes(tmp_path: Path) -> None:
    root = tmp_path / "image"
    written = {
        Path("/") / step.path.relative_to(root)
        for step in plan(root, executable=Path("/opt/x/bin/shoe-controller"))
        if type(step).__name__ == "WriteFile"
    }
    listed = set(system_files())
    assert written <= listed  # no configuration given: it has a digest of its own
    assert RULES_FILE in listed and UNIT_FILE in listed
    # The unit's drop-ins present on the box are recorded too.
    drop_ins = root / UNIT_DROP_INS.relative_to("/")
    drop_ins.mkdir(parents=True)
    (drop_ins / "override.conf").write_text("[Service]\nPrivateNetwork=no\n")
    (drop_ins / "notes.txt").write_text("not read by systemd\n")
    assert system_files(root)[-1] == drop_ins / "override.conf"
    assert len(system_files(root)) == len(system_files()) + 1


def test_every_start_journals_the_manifest_and_its_digest(tmp_path: Path) -> None:
    unit = tmp_path / "shoe-controller.service"
    unit.write_text("[Unit]\nDescription=x\n")
    for _ in range(2):
        controller = TableController(
            Config(),
            journal_path=tmp_path / "journal.sqlite3",
            device="sim://?pace=0",
            system_files=[unit, tmp_path / "absent.rules"],
        )
        controller.start()
        controller.stop()
    rows = _records(tmp_path / "journal.sqlite3")
    starts = [i for i, (_, kind, _) in enumerate(rows) if kind == Kind.SERVICE_STARTED]
    assert len(starts) == 2
    for index in starts:
        started = json.loads(rows[index][2])
        _, kind, payload = rows[index + 1]
        assert kind == Kind.SOFTWARE_MANIFEST
        # The digest is of the record's payload as stored: a laboratory checks it with
        # sqlite3 and sha256sum.
        assert hashlib.sha256(payload.encode()).hexdigest() == started["manifest_sha256"]
        manifest = json.loads(payload)
        assert manifest_sha256(manifest) == started["manifest_sha256"]
        assert manifest["software"]["sha256"] == started["software_sha256"]
        assert [f["path"] for f in manifest["system_files"]] == [
            str(tmp_path / "absent.rules"),
            str(unit),
        ]
        assert len(payload) < 64 * 1024  # one bounded record


def test_the_manifest_is_not_public(tmp_path: Path) -> None:
    from shoe_controller.service import events as ev

    controller, recorder = start_table(tmp_path, script=None)
    controller.stop()
    assert recorder.of(ev.StartedEvent)
    assert not any("distributions" in json.dumps(e.to_json()) for e in recorder.events)


# --- the installation read again -----------------------------------------------------------


def test_an_unchanged_installation_matches(installed: Installed, tmp_path: Path) -> None:
    unit = tmp_path / "unit"
    unit.write_text("x")
    manifest = software_manifest([unit, tmp_path / "absent"])
    check = check_installation(manifest, [unit, tmp_path / "absent"])
    assert check.findings == [] and check.ok
    assert check.distributions == len(manifest["distributions"])
    assert check.record_files >= 100  # every file of every RECORD, read again
    assert check.packages == 4 and check.system_files == 2


def _lines(manifest: dict[str, Any], files: list[Path] | None = None) -> list[str]:
    return [f.line() for f in check_installation(manifest, files or []).findings]


def test_a_file_changed_after_installation(installed: Installed) -> None:
    manifest = software_manifest()
    installed.source.write_text("VALUE = 2\n")
    assert _lines(manifest) == [
        "distribution fake-evidence: fake_evidence/__init__.py does not match its RECORD"
    ]
    installed.source.unlink()
    assert _lines(manifest) == ["distribution fake-evidence: fake_evidence/__init__.py is missing"]


def test_a_file_changed_with_its_record(installed: Installed) -> None:
    manifest = software_manifest()
    installed.source.write_text("VALUE = 3\n")
    installed.write_record()
    assert _lines(manifest) == [
        "distribution fake-evidence: its RECORD differs from the one at the start"
    ]


def test_another_version_or_none(installed: Installed) -> None:
    manifest = software_manifest()
    metadata = installed.dist_info / "METADATA"
    metadata.write_text(metadata.read_text().replace("Version: 1.0", "Version: 1.1"))
    installed.write_record()
    assert _lines(manifest) == [
        "distribution fake-evidence: version 1.0 at the start, 1.1 installed now",
        "distribution fake-evidence: its RECORD differs from the one at the start",
    ]
    for path in sorted(installed.dist_info.iterdir()):
        path.unlink()
    installed.dist_info.rmdir()
    importlib.invalidate_caches()
    assert _lines(manifest) == [
        "distribution fake-evidence: version 1.0 at the start, not installed now"
    ]


def test_our_packages_and_the_interpreter_as_recorded() -> None:
    manifest = software_manifest()
    manifest["software"]["packages"]["shoe_floor"] = "0" * 64
    manifest["python"]["sha256"] = "1" * 64
    executable = manifest["python"]["executable"]
    assert _lines(manifest) == [
        "package shoe_floor: its files differ from those at the start",
        f"python {executable}: the interpreter differs from the one at the start",
    ]
    del manifest["software"]["packages"]["shoe_floor"]
    manifest["python"]["sha256"] = software_manifest()["python"]["sha256"]
    assert _lines(manifest) == ["package shoe_floor: shipped now, not at the start"]


def test_system_files_changed_appeared_or_gone(tmp_path: Path) -> None:
    unit, rules, drop_in = tmp_path / "unit", tmp_path / "rules", tmp_path / "override.conf"
    unit.write_text("a")
    manifest = software_manifest([unit, rules])
    unit.write_text("b")
    rules.write_text("r")
    drop_in.write_text("d")
    assert _lines(manifest, [unit, rules, drop_in]) == [
        f"file {drop_in}: present now, not in the manifest of the start",
        f"file {rules}: absent at the start, present now",
        f"file {unit}: changed since the start",
    ]
    unit.unlink()
    assert _lines(manifest, [unit, rules])[-1] == f"file {unit}: present at the start, absent now"


def test_a_record_hostile_or_malformed_is_a_finding_not_a_crash(installed: Installed) -> None:
    manifest = software_manifest()
    installed.record.write_bytes(b"\xff\xfe not text")
    lines = _lines(manifest)
    assert "distribution fake-evidence: RECORD is not a readable list of files" in lines
    installed.record.write_text(
        "../../../../../../etc/hostname,sha256=AAAA,1\nfake_evidence/__init__.py,md4x=1,1\n"
    )
    lines = _lines(manifest)
    assert any("has a digest of an unknown kind (md4x)" in line for line in lines)
    # A FIFO named by a RECORD is refused at once, never waited on.
    fifo = installed.site / "pipe"
    os.mkfifo(fifo)
    installed.record.write_text("pipe,sha256=AAAA,1\n")
    (line,) = _lines(manifest)[1:]
    assert line.startswith("distribution fake-evidence: pipe cannot be read: ")


def test_a_distribution_whose_metadata_breaks_does_not_stop_a_start(
    installed: Installed,
) -> None:
    before = software_manifest()
    (installed.dist_info / "METADATA").write_bytes(b"\xff\xfe\x00 not metadata")
    manifest_module._top_level_providers.cache_clear()
    after = software_manifest()  # no error: the distribution that cannot say its name is left out
    assert "fake-evidence" not in [d["name"] for d in after["distributions"]]
    assert _lines(before) == ["distribution fake-evidence: its metadata cannot be read now"]


def test_the_shell_recipe_for_the_manifest_digest_in_the_journal_docs(tmp_path: Path) -> None:
    if shutil.which("sqlite3") is None:
        pytest.skip("the sqlite3 command is not installed")
    doc = (Path(__file__).parents[2] / "docs" / "journal.md").read_text(encoding="utf-8")
    (command,) = [
        line.strip() for line in doc.splitlines() if line.startswith("    sqlite3 journal.sqlite3")
    ]
    controller, _ = start_table(tmp_path, script=None)
    controller.stop()
    started = [
        json.loads(p)
        for _, k, p in _records(tmp_path / "journal.sqlite3")
        if k == "service_started"
    ]
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.split()[0] == started[-1]["manifest_sha256"]
