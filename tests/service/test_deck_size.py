"""A deck of the wrong size leaves the table whatever the croupier determines (D2).

"Si las cartas se repartieron mal y un jugador o el Croupier tiene más o menos de siete
cartas": whether a position holds more or fewer than 7 is a fact of the deal's cards. When
they show 7 to each, a stub other than 4 means the deck's count is wrong, and the deck
leaves the table; a bench's "misdealt" against that record is recorded as contradicting it.
On the in-process simulator, with the bench's automatic croupier."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from shoe_controller.cli.croupier import Script
from shoe_controller.service import events as ev
from shoe_controller.simulator.transport import switch_off
from tests.service.helpers import Recorder, start_table


def _two_rounds(tmp_path: Path, device: str, script: Script) -> Recorder:
    """Two rounds on a simulated shoe of its own: switched on fresh, off at the end (shoes
    live in this process by address)."""
    switch_off(device)
    controller, rec = start_table(tmp_path, device=device, script=script)
    try:
        rec.wait_for(lambda _: rec.finished_rounds() >= 2)
    finally:
        controller.stop()
        switch_off(device)
    return rec


def _journal(path: Path, kind: str) -> list[dict[str, object]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT payload FROM records WHERE kind = ? ORDER BY seq", (kind,))
        return [json.loads(text) for (text,) in rows]
    finally:
        conn.close()


@pytest.mark.rule("D2")
@pytest.mark.parametrize(
    ("device", "count"),
    [
        # The extra card is the 54th: the gate locks after the 53rd, the rest is taken out.
        pytest.param("sim://?seed=71&deck=long&pace=0", 5, id="long-54th"),
        pytest.param("sim://?seed=17&deck=short&pace=0", 3, id="short"),
        # The croupier's count disagrees with the stub the reader read: still the deck's.
        pytest.param("sim://?seed=17&deck=short&pace=0", 5, id="short-miscounted"),
    ],
)
@pytest.mark.parametrize("on_review", ["misdeal", "no-misdeal"])
def test_a_deck_of_the_wrong_size_leaves_the_table_whatever_the_determination(
    tmp_path: Path, device: str, count: int, on_review: str
) -> None:
    script = Script(
        wagers=frozenset({2, 4}), attendant="att-1", on_review=on_review, stub_count=count
    )
    rec = _two_rounds(tmp_path, device, script)
    ends = [e for e in rec.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
    assert [e.outcome for e in ends[:2]] == ["void_deck_removed", "dealt"], ends[0].reason
    assert ends[0].cards_per_position == {str(p): 7 for p in range(1, 8)}
    # The record proposed it, and a "misdealt" against it is recorded as contradicting it.
    asked = [e for e in rec.of(ev.PromptEvent) if getattr(e, "need", "") == "misdeal_determination"]
    assert [getattr(e, "proposal", None) for e in asked] == ["no-misdeal"]
    [determined] = [
        e for e in rec.of(ev.DeterminationEvent) if isinstance(e, ev.DeterminationEvent)
    ]
    misdealt = on_review == "misdeal"
    assert (determined.misdealt, determined.contradicts) == (misdealt, misdealt)
    # The next round needed a supervisor's word that the deck is a different one.
    assert "new_deck" in [getattr(e, "need", "") for e in rec.of(ev.PromptEvent)]
    journal = tmp_path / "journal.sqlite3"
    [record] = _journal(journal, "determination")
    assert (record["misdealt"], record["contradicts"]) == (misdealt, misdealt)
    assert any(facts["deck_must_change"] for facts in _journal(journal, "table"))


@pytest.mark.rule("D2")
@pytest.mark.rule("D3")
def test_a_long_deck_whose_extra_card_is_read_in_the_stub_leaves_the_table(
    tmp_path: Path,
) -> None:
    """``deck=long`` with seed 10: the second copy is the deck's 52nd card, read in the stub.
    The composition check finds it (D3): the round is void and the deck leaves."""
    script = Script(wagers=frozenset({2, 4}), attendant="att-1", on_review="misdeal")
    rec = _two_rounds(tmp_path, "sim://?seed=10&deck=long&pace=0", script)
    ends = [e for e in rec.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
    assert [e.outcome for e in ends[:2]] == ["void_fault", "dealt"]
    assert "draw 52" in ends[0].reason
    [fault] = [e for e in rec.of(ev.FaultEvent) if isinstance(e, ev.FaultEvent)]
    assert fault.code == "composition"
    assert "new_deck" in [getattr(e, "need", "") for e in rec.of(ev.PromptEvent)]
