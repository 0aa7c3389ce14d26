"""``shoe-diag floor``: the broker's connection, the cursor, the backlog, what the floor sees."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

import floor_protocol as fp
from shoe_controller.cli import diag, diag_common
from shoe_controller.errors import ExitCode
from shoe_controller.floor.forwarder import Forwarder
from tests.cli.conftest import Result, Run
from tests.floor.helpers import (
    WAIT,
    Subscriber,
    floor_settings,
    journal_id,
    public_records,
    publish,
    replay,
)
from tests.floor.servers import Mosquitto
from tests.floor.test_forwarder import deal, last_seq


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Run:
    """``run("floor", ...)``: shoe-diag in this process, with no installed configuration."""
    monkeypatch.setattr(diag_common, "DEFAULT_CONFIG", tmp_path / "no-such-config.toml")

    def call(*args: str) -> Result:
        code = diag.main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return call


@pytest.mark.needs("mosquitto")
def test_it_shows_the_cursor_the_backlog_and_the_table_as_the_floor_sees_it(
    tmp_path: Path, broker: Mosquitto, run: Run
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    deal(journal, 1)
    config = tmp_path / "config.toml"
    config.write_text(
        f'[floor]\nbroker = "{broker.url}"\nsite = "casino"\ntable_id = "T1"\n', encoding="utf-8"
    )
    before = run("floor", "--config", str(config), "--journal", str(journal), "--json")
    assert before.code == 0, before.err
    shown = json.loads(before.out)
    assert shown["connection"] == "ok"
    assert shown["cursor"] == 0
    assert shown["backlog"] == len(public_records(journal))
    assert shown["floor_status"] is None

    forwarder = Forwarder(floor_settings(broker.url), journal)
    forwarder.start()
    assert forwarder.wait_for(lambda s: s.cursor == last_seq(journal), WAIT)
    after = run("floor", "--config", str(config), "--journal", str(journal))
    forwarder.stop(drain_seconds=10)
    assert after.code == 0, after.err
    assert f"cursor       {last_seq(journal)}" in after.out
    assert "0 public records wait" in after.out
    assert "floor sees   online" in after.out


@pytest.mark.needs("mosquitto")
def test_it_shows_the_replay_requests_the_box_refused(
    tmp_path: Path, broker: Mosquitto, run: Run
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    deal(journal, 1)
    config = tmp_path / "config.toml"
    config.write_text(
        f'[floor]\nbroker = "{broker.url}"\nsite = "casino"\ntable_id = "T1"\n', encoding="utf-8"
    )
    forwarder = Forwarder(floor_settings(broker.url), journal, refusals_interval=0.0)
    forwarder.start()
    watcher = Subscriber(broker.url, "shoes/+/+/status")
    try:
        assert forwarder.wait_for(lambda s: s.cursor == last_seq(journal), WAIT)
        request = replay(watcher.client, "T1", journal_id(journal), 0)
        publish(watcher.client, request)
        publish(watcher.client, fp.Outgoing(request.topic, request.payload, ()))
        watcher.wait_for(
            lambda s: (
                s.on("status")[-1].body.get("replays_refused") == {"replayed": 1, "unsigned": 1}
            )
        )
        shown = run("floor", "--config", str(config), "--journal", str(journal))
    finally:
        forwarder.stop(drain_seconds=10)
        watcher.close()
    assert shown.code == 0, shown.err
    assert "2 replay requests refused (replayed 1, unsigned 1)" in shown.out


@pytest.mark.needs("mosquitto")
def test_a_broker_that_does_not_answer_is_a_failed_check(
    tmp_path: Path, broker: Mosquitto, run: Run
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    deal(journal, 1)
    broker.kill()
    result = run("floor", "--journal", str(journal), "--broker", broker.url, "--table-id", "T1")
    assert result.code == ExitCode.CHECK_FAILED
    assert "did not answer" in result.error_line


def test_without_a_broker_it_says_how_to_name_one(tmp_path: Path, run: Run) -> None:
    result = run("floor", "--journal", str(tmp_path / "j.sqlite3"))
    assert result.code == ExitCode.CONFIG
    assert "no floor broker is configured" in result.error_line


def test_enroll_makes_the_box_key_once_and_never_replaces_a_file(tmp_path: Path, run: Run) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    journal.parent.mkdir()
    made = run("floor", "enroll", "--journal", str(journal), "--table-id", "PG-07", "--json")
    assert made.code == 0, made.err
    first = json.loads(made.out)
    key = journal.with_suffix(".floor-key")
    assert first["made"] is True and first["key"] == str(key)
    assert (first["site"], first["table"]) == ("default", "PG-07")
    assert first["fingerprint"].startswith("SHA256:")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert Path(first["public_key"]).read_text().startswith("-----BEGIN PUBLIC KEY-----")
    # Again: the same key, kept.
    again = json.loads(
        run("floor", "enroll", "--journal", str(journal), "--table-id", "PG-07", "--json").out
    )
    assert again["made"] is False and again["fingerprint"] == first["fingerprint"]
    # A file there that is no key is refused and left as it was.
    other = tmp_path / "other" / "journal.sqlite3"
    other.parent.mkdir()
    notes = other.with_suffix(".floor-key")
    notes.write_text("my notes\n")
    refused = run("floor", "enroll", "--journal", str(other), "--table-id", "PG-08")
    assert refused.code == ExitCode.CONFIG
    assert "is not a floor signing key" in refused.err and len(refused.err.splitlines()) == 1
    assert notes.read_text() == "my notes\n"


def test_enroll_beside_a_journal_whose_directory_is_missing_says_so(
    tmp_path: Path, run: Run
) -> None:
    journal = tmp_path / "absent" / "journal.sqlite3"
    refused = run("floor", "enroll", "--journal", str(journal), "--table-id", "PG-07")
    assert refused.code == ExitCode.CONFIG
    assert refused.error_line == (
        f"shoe-diag: error: cannot write the floor signing key {journal.with_suffix('.floor-key')}"
        f": its directory {journal.parent} does not exist; give the journal's path with "
        "--journal (the key goes beside it)"
    )
    assert not journal.parent.exists()
