"""Rule E1, at the table: the rules profile keeps the stub sealed in the journal or as keyed
commitments only; under "commitment" no stub identity is anywhere in the journal's files."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from shoe_controller.journal import export
from shoe_controller.journal.lookup import reading
from shoe_controller.journal.records import Kind
from shoe_controller.journal.stub_commitment import (
    COMMITTED,
    STUB_KINDS,
    StubCommitter,
    confirm_stub,
    load_stub_key,
)
from shoe_controller.service import events as ev
from shoe_controller.service.config import parse_config
from shoe_controller.simulator.transport import switch_off
from tests.service.helpers import start_table

pytestmark = pytest.mark.rule("E1")

#: One deck only: the round's stub cards are dealt in no later round.
DEVICE = "sim://?seed=5&pace=0&autoload=0"


def _deal_one_round(directory: Path, stub: str) -> tuple[Path, str]:
    directory.mkdir()
    config = parse_config({"table": {"stub": stub}})
    controller, recorder = start_table(directory, device=DEVICE, config=config)
    try:
        recorder.wait_for(lambda events: any(isinstance(e, ev.RoundClosedEvent) for e in events))
    finally:
        controller.stop()
        switch_off(DEVICE)  # the next run gets a simulated shoe of its own, deck and all
    (closed,) = recorder.of(ev.RoundClosedEvent)
    assert closed.round is not None
    return directory / "journal.sqlite3", closed.round


def _stub_records(journal: Path, round_id: str) -> list[dict[str, object]]:
    with reading(journal) as reader:
        return [r.payload_object() for r in reader.of_round(round_id, [Kind.STUB_CARD])]


def _files_bytes(directory: Path) -> bytes:
    """Every byte of every file the journal keeps (the database, its WAL, checkpoints)."""
    return b"".join(p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file())


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[str]]:
    journal, round_id = _deal_one_round(tmp_path_factory.mktemp("sealed") / "table", "sealed")
    cards = [str(p["card"]) for p in _stub_records(journal, round_id)]
    assert len(cards) == 4 and "??" not in cards
    return journal, round_id, cards


def test_sealed_keeps_the_shoes_reading_of_the_stub(sealed: tuple[Path, str, list[str]]) -> None:
    journal, _, cards = sealed
    stored = _files_bytes(journal.parent)
    # The control for the test below: the same search finds them when they are there.
    assert all(f'"{card}"'.encode() in stored for card in cards)
    assert not (journal.parent / "journal.stub.key").exists()


def test_commitment_keeps_no_stub_identity_anywhere(
    tmp_path: Path, sealed: tuple[Path, str, list[str]]
) -> None:
    _, _, cards = sealed  # the same seed, the same deck: the same stub
    journal, round_id = _deal_one_round(tmp_path / "table", "commitment")
    stored = _files_bytes(journal.parent)
    for card in cards:
        assert f'"{card}"'.encode() not in stored, card
    records = _stub_records(journal, round_id)
    assert [r["index"] for r in records] == [50, 51, 52, 53]
    assert all(set(r) == {"index", "commitment", "key_id"} for r in records)
    # The dealt cards are journaled as ever (E1 keeps only the stub from the journal).
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        dealt = conn.execute("SELECT count(*) FROM records WHERE kind = 'card'").fetchone()[0]
        (started,) = conn.execute(
            "SELECT payload FROM records WHERE kind = 'service_started'"
        ).fetchone()
    finally:
        conn.close()
    assert dealt == 49
    assert json.loads(started)["evidence"]["stub"] == "commitment"
    # The stub key beside the journal's confirms the stub, in any order, and nothing else.
    committer = StubCommitter(load_stub_key(journal.parent / "journal.stub.key"))
    with reading(journal) as reader:
        stub = reader.of_round(round_id, STUB_KINDS)
    assert confirm_stub(round_id, stub, list(reversed(cards)), committer).complete
    assert not confirm_stub(
        round_id, stub, ["JK" if "JK" not in cards else "AS"], committer
    ).matches
    # An audit export, which shows every identity the journal holds, has none to show.
    out = io.StringIO()
    export(journal, out, "jsonl", audit=True, what="rounds", round_id=round_id)
    (row,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert row["stub"] == [COMMITTED] * 4
