"""``shoe-diag verify-install``, end to end (rule A1: software identity): a service start
journals its manifest, the command reads the installation again, compares, and says what
differs, one line each, with its exit code."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path

import pytest

from shoe_controller.cli import diag_install
from shoe_controller.errors import ExitCode
from shoe_controller.service.config import Config
from shoe_controller.service.controller import TableController
from tests.cli.conftest import Run
from tests.journal.helpers import fill, open_journal, tamper
from tests.service.installed import Installed, installed_fixture  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.usefixtures("hermetic"), pytest.mark.rule("A1")]


@pytest.fixture
def unit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The service unit as installed, and the files the installation writes: that one."""
    path = tmp_path / "shoe-controller.service"
    path.write_text("[Service]\nExecStart=/opt/shoe-controller/bin/shoe-controller run\n")
    monkeypatch.setattr(diag_install, "system_files", lambda: (path,))
    return path


def _start_and_stop(journal: Path, unit: Path) -> None:
    controller = TableController(
        Config(), journal_path=journal, device="sim://?pace=0", system_files=[unit]
    )
    controller.start()
    controller.stop()


@pytest.fixture
def journal(tmp_path: Path, unit: Path, installed: Installed) -> Path:
    path = tmp_path / "journal.sqlite3"
    _start_and_stop(path, unit)
    return path


def test_an_installation_as_it_started(run: Run, journal: Path) -> None:
    result = run("verify-install", "--journal", str(journal))
    assert result.code == ExitCode.OK, result.err
    lines = [line for line in result.out.splitlines() if not line.startswith("note: ")]
    rows = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in lines)
    assert rows["journal"] == str(journal)
    assert rows["manifest"].startswith("record 1, service started ")
    assert rows["distributions"].endswith("files checked against their RECORD")
    assert rows["packages"] == "4" and rows["system files"] == "1"
    assert rows["result"] == "matches the manifest"
    assert result.err == ""


def test_the_json_object(run: Run, journal: Path) -> None:
    result = run("verify-install", "--journal", str(journal), "--json")
    report = json.loads(result.out)
    assert result.code == ExitCode.OK
    assert report["ok"] is True and report["differences"] == []
    assert (report["started_seq"], report["manifest_seq"]) == (1, 2)
    assert report["packages"] == 4 and report["system_files"] == 1
    assert report["distributions"] >= 10 and report["record_files"] > 100
    conn = sqlite3.connect(journal)
    try:
        (payload,) = conn.execute("SELECT payload FROM records WHERE seq = 2").fetchone()
    finally:
        conn.close()
    assert report["manifest_sha256"] == hashlib.sha256(payload.encode()).hexdigest()


def test_what_differs_one_line_each(
    run: Run, journal: Path, installed: Installed, unit: Path
) -> None:
    installed.source.write_text("VALUE = 'changed'\n")
    unit.write_text("[Service]\nExecStart=/bin/sh\n")
    result = run("verify-install", "--journal", str(journal))
    assert result.code == ExitCode.CHECK_FAILED
    differs = [line for line in result.out.splitlines() if line.startswith("differs: ")]
    assert differs == [
        "differs: distribution fake-evidence: fake_evidence/__init__.py does not match its RECORD",
        f"differs: file {unit}: changed since the start",
    ]
    assert result.out.splitlines()[-1].split(None, 1)[1] == "DIFFERS in 2 ways"
    assert "differs from the manifest of the start at" in result.error_line
    report = json.loads(run("verify-install", "--journal", str(journal), "--json").out)
    assert report["ok"] is False and len(report["differences"]) == 2


def test_the_latest_start_is_the_one_compared(
    run: Run, journal: Path, installed: Installed, unit: Path
) -> None:
    installed.source.write_text("VALUE = 'approved change'\n")
    installed.write_record()
    assert run("verify-install", "--journal", str(journal)).code == ExitCode.CHECK_FAILED
    _start_and_stop(journal, unit)  # the service starts on the new installation
    result = run("verify-install", "--journal", str(journal), "--json")
    assert result.code == ExitCode.OK, result.out
    assert json.loads(result.out)["started_seq"] > 2


def test_a_manifest_altered_in_the_journal(run: Run, journal: Path) -> None:
    # Someone without the key edits the manifest (its MAC no longer fits, which only a
    # verification with the key shows): the digest its start names shows it at once.
    edit = "replace(payload, '\"format\":1', '\"format\":1 ')"
    tamper(journal, f"UPDATE records SET payload = {edit} WHERE seq = 2")
    result = run("verify-install", "--journal", str(journal))
    assert result.code == ExitCode.JOURNAL
    assert "does not have the digest its start (record 1) names" in result.error_line


def test_a_journal_with_no_start_or_none_at_all(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        fill(journal, 3)
    result = run("verify-install", "--journal", str(path))
    assert result.code == ExitCode.JOURNAL
    assert "holds no service start" in result.error_line
    missing = run("verify-install", "--journal", str(tmp_path / "none.sqlite3"))
    assert missing.code == ExitCode.JOURNAL
    not_one = tmp_path / "text.sqlite3"
    not_one.write_text("hello")
    assert run("verify-install", "--journal", str(not_one)).code == ExitCode.JOURNAL


def test_the_configured_journal_is_the_default(run: Run, journal: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[journal]\npath = "{journal}"\n')
    result = run("verify-install", "--config", str(config), "--json")
    assert result.code == ExitCode.OK and json.loads(result.out)["journal"] == str(journal)
