"""``shoe-controller run --bench`` with a deck of the wrong size and ``--on-review misdeal``:
the deal's cards show 7 to each position, so the bench's "misdealt" contradicts the record,
is recorded so, and the deck leaves the table (D2)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoe_controller.cli.controller import main
from shoe_controller.simulator.transport import live_addresses, switch_off


@pytest.fixture(autouse=True)
def no_shoe_left() -> Iterator[None]:
    yield
    for address in live_addresses():
        switch_off(address)


@pytest.mark.rule("D2")
@pytest.mark.rule("D4")
@pytest.mark.parametrize("deck", ["seed=71&deck=long", "seed=5&deck=short"])
def test_misdealt_against_seven_to_each_is_recorded_as_contradicting_and_the_deck_leaves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], deck: str
) -> None:
    journal = tmp_path / "journal.sqlite3"
    device = f"sim://?{deck}&pace=0"
    switch_off(device)
    code = main(
        [
            "run",
            "--bench",
            "--json",
            "--device",
            device,
            "--journal",
            str(journal),
            "--rounds",
            "1",
            "--wagers",
            "2,4",
            "--rng",
            "--stub-count",
            "5",
            "--on-review",
            "misdeal",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    events = [json.loads(line) for line in captured.out.splitlines()]
    ended = next(e for e in events if e["event"] == "round_end")
    assert ended["outcome"] == "void_deck_removed", ended["reason"]
    assert ended["cards_per_position"] == {str(p): 7 for p in range(1, 8)}
    [determined] = [e for e in events if e["event"] == "determination"]
    # A short stub beside seven to each may be two cards passed as one: a misdeal then
    # contradicts nothing, but the shoe read a deck of 52, which leaves all the same (D4).
    contradicts = "long" in deck
    assert (determined["misdealt"], determined["contradicts"]) == (True, contradicts)
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        facts = [
            json.loads(text)
            for (text,) in conn.execute("SELECT payload FROM records WHERE kind = 'table'")
        ]
    finally:
        conn.close()
    # The deck was marked to leave the table: the next round needed a different one.
    assert any(f["deck_must_change"] for f in facts)
    assert "new_deck" in [e.get("need") for e in events if e["event"] == "prompt"]
