"""shoe-diag audit verify and audit export, on real journal files."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from shoe_controller.errors import ExitCode
from tests.cli.conftest import ROOT, Run, child_env, write_config
from tests.journal.helpers import DealtRound, deal_round, open_journal, tamper
from tools import children

pytestmark = pytest.mark.usefixtures("hermetic")


@pytest.fixture
def journal(tmp_path: Path) -> tuple[Path, list[DealtRound]]:
    path = tmp_path / "state" / "journal.sqlite3"
    with open_journal(path) as opened:
        rounds = [
            deal_round(opened, "r-1", wagered=[2, 5], seed=1),
            deal_round(opened, "r-2", wagered=[3], seed=2, close=False),
        ]
    return path, rounds


def test_verify_a_sound_journal(run: Run, journal: tuple[Path, list[DealtRound]]) -> None:
    path, _ = journal
    result = run("audit", "verify", "--journal", str(path))
    assert result.code == ExitCode.OK, result.err
    lines = result.out.splitlines()
    assert lines[0] == f"journal           {path}"
    assert lines[-1] == "result            verified"
    report = json.loads(run("audit", "verify", "--journal", str(path), "--json").out)
    assert report["ok"] is True
    assert report["records"] == report["last_seq"] == report["checkpoint_seq"] > 100
    assert set(report) == {
        "journal",
        "ok",
        "records",
        "last_seq",
        "checkpoint_seq",
        "key_id",
        "first_bad_seq",
        "problem",
        "detail",
    }


def test_journal_taken_from_the_configuration(
    run: Run, journal: tuple[Path, list[DealtRound]], tmp_path: Path
) -> None:
    path, _ = journal
    config = write_config(tmp_path / "config.toml", extra=f'[journal]\npath = "{path}"\n')
    result = run("audit", "verify", "--config", str(config), "--json")
    assert result.code == ExitCode.OK, result.err
    assert json.loads(result.out)["journal"] == str(path)


def test_a_modified_record_fails_verification(
    run: Run, journal: tuple[Path, list[DealtRound]]
) -> None:
    path, _ = journal
    tamper(path, 'UPDATE records SET payload = \'{"by":"nobody"}\' WHERE seq = 40')
    result = run("audit", "verify", "--journal", str(path), "--json")
    assert result.code == ExitCode.JOURNAL
    report = json.loads(result.out)
    assert (report["ok"], report["first_bad_seq"], report["problem"]) == (False, 40, "modified")
    assert "FAILED verification at record 40" in result.error_line
    human = run("audit", "verify", "--journal", str(path))
    assert "first bad record  40" in human.out
    assert "result            FAILED: modified" in human.out


def test_a_file_that_is_not_a_journal(run: Run, tmp_path: Path) -> None:
    bogus = tmp_path / "journal.sqlite3"
    bogus.write_bytes(b"this is not a database" * 100)
    (tmp_path / "journal.key").write_text("00" * 32 + "\n")
    os.chmod(tmp_path / "journal.key", 0o600)
    result = run("audit", "verify", "--journal", str(bogus))
    assert result.code == ExitCode.JOURNAL
    assert str(bogus) in result.error_line
    assert result.out == ""


def test_no_journal_there(run: Run, tmp_path: Path) -> None:
    result = run("audit", "export", "--journal", str(tmp_path / "none.sqlite3"))
    assert result.code == ExitCode.JOURNAL
    assert "no journal at" in result.error_line


def test_verify_shows_progress_on_a_terminal(journal: tuple[Path, list[DealtRound]]) -> None:
    path, _ = journal
    primary, secondary = pty.openpty()
    try:
        command = ["audit", "verify", "--journal", str(path)]
        process = children.spawn(
            [sys.executable, "-m", "shoe_controller.cli.diag", *command],
            stdout=secondary,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=child_env(),
        )
    finally:
        os.close(secondary)
    try:
        shown = b""
        while chunk := _read(primary):
            shown += chunk
        assert process.wait(timeout=30) == ExitCode.OK
    finally:
        os.close(primary)
    text = shown.decode()
    assert "\r  [##############################]" in text
    assert "records" in text and "verified" in text


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # EIO: the child closed the terminal
        return b""


# -- export ----------------------------------------------------------------------------


@pytest.mark.rule("E1")
@pytest.mark.rule("E2")
def test_export_is_sealed_by_default(run: Run, journal: tuple[Path, list[DealtRound]]) -> None:
    path, rounds = journal
    result = run("audit", "export", "--journal", str(path))
    assert result.code == ExitCode.OK, result.err
    rows = [json.loads(line) for line in result.out.splitlines()]
    assert len(rows) > 100
    assert set(rows[0]) == {"seq", "time", "monotonic_ns", "round_id", "kind", "payload"}
    closed = rounds[0]
    shown: Counter[tuple[str, str, bool]] = Counter()
    for row in rows:
        payload = row["payload"]
        if row["kind"] == "stub_card":
            assert payload["card"] == "sealed"
        elif row["kind"] == "card":
            # Only the closed round's banker and wagered hands; never the open round's.
            public = row["round_id"] == closed.round_id and (
                payload["position"] == 1 or payload["position"] in closed.wagered
            )
            assert (payload["card"] != "sealed") is public
        shown[row["kind"], row["round_id"], row["payload"].get("card") == "sealed"] += 1
    # r-1 closed with hands 2 and 5 wagered: 21 cards shown, 28 and its stub sealed; r-2,
    # still open, every card sealed (it has no stub yet).
    assert shown["card", "r-1", False] == 21 and shown["card", "r-1", True] == 28
    assert shown["stub_card", "r-1", True] == 4
    assert shown["card", "r-2", False] == 0 and shown["card", "r-2", True] > 0


@pytest.mark.rule("E2")
def test_export_rounds_as_csv(run: Run, journal: tuple[Path, list[DealtRound]]) -> None:
    path, rounds = journal
    result = run("audit", "export", "--journal", str(path), "--format", "csv", "--rounds")
    assert result.code == ExitCode.OK
    table = list(csv.DictReader(io.StringIO(result.out)))
    assert [row["round_id"] for row in table] == ["r-1", "r-2"]
    hands = json.loads(table[0]["hands"])
    assert hands["1"] == rounds[0].hands[1]  # the banker's hand, closed: public
    assert hands["4"] == "sealed"  # no wager at position 4
    assert table[0]["stub"] == "sealed"


def test_audit_export_to_a_file_for_the_owner_only(
    run: Run, journal: tuple[Path, list[DealtRound]], tmp_path: Path
) -> None:
    path, rounds = journal
    target = tmp_path / "audit.jsonl"
    result = run(
        "audit", "export", "--journal", str(path), "--audit", "--output", str(target), "--json"
    )
    assert result.code == ExitCode.OK, result.err
    summary = json.loads(result.out)
    assert summary == {
        "journal": str(path),
        "output": str(target),
        "format": "jsonl",
        "view": "events",
        "audit": True,
        "rows": summary["rows"],
    }
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(rows) == summary["rows"]
    stub = [r["payload"]["card"] for r in rows if r["kind"] == "stub_card"]
    assert stub == rounds[0].stub + rounds[1].stub
    one = run("audit", "export", "--journal", str(path), "--round", "r-2", "--rounds")
    assert [json.loads(line)["round_id"] for line in one.out.splitlines()] == ["r-2"]
    human = run("audit", "export", "--journal", str(path), "--output", str(tmp_path / "p.csv"))
    assert (
        human.out
        == f"{summary['rows']} events written to {tmp_path / 'p.csv'} (jsonl, sealed identities)\n"
    )


def test_audit_export_needs_the_journals_own_key(
    run: Run, journal: tuple[Path, list[DealtRound]], tmp_path: Path
) -> None:
    path, _ = journal
    other = tmp_path / "other.key"
    other.write_text("11" * 32 + "\n")
    os.chmod(other, 0o600)
    target = tmp_path / "audit.jsonl"
    result = run(
        "audit",
        "export",
        "--journal",
        str(path),
        "--audit",
        "--key",
        str(other),
        "--output",
        str(target),
    )
    assert result.code == ExitCode.JOURNAL
    assert "is not the key of journal" in result.error_line
    assert not target.exists()
    assert list(tmp_path.glob(".audit.jsonl.*")) == []


def test_export_into_a_missing_directory(
    run: Run, journal: tuple[Path, list[DealtRound]], tmp_path: Path
) -> None:
    path, _ = journal
    result = run(
        "audit", "export", "--journal", str(path), "--output", str(tmp_path / "no" / "x.csv")
    )
    assert result.code == ExitCode.CONFIG
    assert "the directory of --output" in result.error_line
    assert f"mkdir -p {tmp_path / 'no'}" in result.error_line


def test_unknown_format_is_a_usage_error(run: Run) -> None:
    with pytest.raises(SystemExit) as stopped:
        run("audit", "export", "--journal", "j.sqlite3", "--format", "xml")
    assert stopped.value.code == ExitCode.USAGE
