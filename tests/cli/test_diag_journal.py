"""``shoe-diag journal confirm-stub``, end to end (rule E1): a round dealt by
``shoe-controller demo`` with its stub kept as commitments, then a claimed stub confirmed or
refused; the answer only, never the stub."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from shoe_controller.cli.controller import main as controller_main
from shoe_controller.errors import ExitCode
from shoe_controller.journal.records import Kind
from tests.cli.conftest import Run
from tests.journal.helpers import open_journal

pytestmark = [pytest.mark.usefixtures("hermetic"), pytest.mark.rule("E1")]

#: A journal and the round it dealt, sealed then committed, and the stub they dealt.
Tables = tuple[tuple[Path, str], tuple[Path, str], list[str]]
#: One deck only: the round's stub cards are dealt in no later round.
DEVICE = "sim://?seed=9&pace=0&autoload=0"


def _demo(directory: Path, stub: str, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    directory.mkdir()
    config = directory / "config.toml"
    config.write_text(f'[table]\nstub = "{stub}"\n')
    journal = directory / "journal.sqlite3"
    code = controller_main(
        [
            "demo",
            "--rounds",
            "1",
            "--device",
            DEVICE,
            "--config",
            str(config),
            "--journal",
            str(journal),
        ]
    )
    capsys.readouterr()
    assert code == 0
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        (round_id,) = conn.execute(
            "SELECT round_id FROM records WHERE kind = 'round_closed'"
        ).fetchone()
    finally:
        conn.close()
    return journal, round_id


@pytest.fixture
def tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Tables:
    """The same deck dealt twice: its stub kept sealed, then as commitments."""
    from shoe_controller.simulator.transport import switch_off

    sealed = _demo(tmp_path / "sealed", "sealed", capsys)
    switch_off(DEVICE)
    committed = _demo(tmp_path / "committed", "commitment", capsys)
    conn = sqlite3.connect(f"file:{sealed[0]}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT payload FROM records WHERE kind = 'stub_card' ORDER BY seq")
        stub = [json.loads(payload)["card"] for (payload,) in rows]
    finally:
        conn.close()
    assert len(stub) == 4
    return sealed, committed, stub


def _rows(out: str) -> dict[str, str]:
    return dict(re.split(r"\s{2,}", line, maxsplit=1) for line in out.splitlines())


def test_the_claimed_stub_matches(run: Run, tables: tuple) -> None:
    _, (journal, round_id), stub = tables
    claim = " ".join(reversed(stub))
    result = run(
        "journal", "confirm-stub", "--journal", str(journal), "--round", round_id, "--cards", claim
    )
    assert result.code == ExitCode.OK, result.err
    rows = _rows(result.out)
    assert rows["round"] == round_id
    assert rows["stub"].startswith("4 cards, kept as commitments (stub key id ")
    assert rows["claimed"] == "4 cards"
    assert rows["result"] == "matches: the claimed cards are the stub"
    for card in stub:  # the answer says nothing of the stub
        assert card not in result.out.replace(round_id, "")


def test_part_of_the_stub_and_the_json_object(run: Run, tables: tuple) -> None:
    _, (journal, round_id), stub = tables
    result = run(
        "journal", "confirm-stub", "--journal", str(journal), "--round", round_id,
        "--cards", stub[2], "--json",
    )  # fmt: skip
    assert result.code == ExitCode.OK
    answer = json.loads(result.out)
    assert answer == {
        "journal": str(journal),
        "round": round_id,
        "kept_as": "commitment",
        "key_id": answer["key_id"],
        "stub_cards": 4,
        "unread": 0,
        "claimed": 1,
        "matches": True,
        "complete": False,
    }
    assert re.fullmatch(r"[0-9a-f]{16}", answer["key_id"])


def test_a_claim_that_is_not_the_stub(run: Run, tables: tuple) -> None:
    _, (journal, round_id), stub = tables
    other = next(c for c in ("AS", "KD", "2C", "JK", "7H") if c not in stub)
    claim = ",".join([*stub[:3], other])
    result = run(
        "journal", "confirm-stub", "--journal", str(journal), "--round", round_id, "--cards", claim
    )
    assert result.code == ExitCode.CHECK_FAILED
    assert (
        _rows(result.out)["result"] == "DOES NOT MATCH: the claimed cards are not all in the stub"
    )
    assert f"the claimed stub of round {round_id} does not match" in result.error_line


def test_a_sealed_round_is_confirmed_without_a_stub_key(run: Run, tables: tuple) -> None:
    (journal, round_id), _, stub = tables
    result = run(
        "journal", "confirm-stub", "--journal", str(journal), "--round", round_id,
        "--cards", " ".join(stub),
    )  # fmt: skip
    assert result.code == ExitCode.OK
    assert _rows(result.out)["stub"] == "4 cards, kept sealed in the journal"


def test_what_cannot_be_answered(run: Run, tables: Tables, tmp_path: Path) -> None:
    (sealed_journal, _), (journal, round_id), _ = tables
    args = ["journal", "confirm-stub", "--journal", str(journal)]
    missing = run(*args, "--round", "no-such-round", "--cards", "AS")
    assert missing.code == ExitCode.CONFIG
    assert "no round no-such-round in journal" in missing.error_line
    # Another journal's stub key (the sealed table's journal key is no stub key of this one).
    wrong = run(
        *args,
        "--round",
        round_id,
        "--cards",
        "AS",
        "--stub-key",
        str(sealed_journal.with_suffix(".key")),
    )
    assert wrong.code == ExitCode.JOURNAL
    assert "was committed under stub key id" in wrong.error_line
    gone = run(
        *args, "--round", round_id, "--cards", "AS", "--stub-key", str(tmp_path / "none.key")
    )
    assert gone.code == ExitCode.JOURNAL
    assert "stub key" in gone.error_line and "not found" in gone.error_line


@pytest.mark.parametrize("cards", ["", "ZZ", "AS ??"])
def test_a_malformed_claim_is_a_usage_error(
    run: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path, cards: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        run(
            "journal",
            "confirm-stub",
            "--journal",
            str(tmp_path / "j.sqlite3"),
            "--round",
            "r",
            "--cards",
            cards,
        )
    assert stopped.value.code == ExitCode.USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("shoe-diag journal confirm-stub: error: argument --cards: ")


def test_a_round_without_a_stub(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        journal.append(Kind.ROUND_OPENED, {"round_id": "r1"}, "r1")
    result = run(
        "journal", "confirm-stub", "--journal", str(path), "--round", "r1", "--cards", "AS"
    )
    assert result.code == ExitCode.CONFIG
    assert "round r1 of journal" in result.error_line and "has no stub" in result.error_line
