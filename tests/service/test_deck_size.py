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
    # A stub short beside a complete deal may be two cards that passed as one: "misdealt"
    # contradicts only the record of a long deck (D2); a short one read whole still leaves.
    contradicts = misdealt and "long" in device
    assert (determined.misdealt, determined.contradicts) == (misdealt, contradicts)
    # The next round needed a supervisor's word that the deck is a different one.
    assert "new_deck" in [getattr(e, "need", "") for e in rec.of(ev.PromptEvent)]
    journal = tmp_path / "journal.sqlite3"
    [record] = _journal(journal, "determination")
    assert (record["misdealt"], record["contradicts"]) == (misdealt, contradicts)
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


@pytest.mark.rule("D4")
@pytest.mark.rule("E5")
def test_a_short_deck_read_whole_is_no_dealt_round_whatever_two_people_count(
    tmp_path: Path,
) -> None:
    """The card-removal scam (``sim://?seed=1&deck=short``): the shoe counts 3, its reader
    read 3 stub cards and every card of the deal. The croupier enters 4 and another person
    accepts it: the count is recorded as contradicting the reading, the reading decides the
    stub, the missing card is the deck's defect in the restricted journal alone, and the
    deck leaves the table."""
    device = "sim://?seed=1&deck=short&pace=0"
    script = Script(wagers=frozenset({2, 4}), attendant="att-1", stub_count=4)
    rec = _two_rounds(tmp_path, device, script)
    ends = [e for e in rec.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
    assert ends[0].outcome == "void_deck_removed", ends[0].reason
    [counted] = [
        e for e in rec.of(ev.StubEvent) if isinstance(e, ev.StubEvent) and e.source == "croupier"
    ][:1]
    assert (counted.count, counted.contradicts) == (4, True)
    [accepted] = [e for e in rec.of(ev.StubAcceptedEvent) if isinstance(e, ev.StubAcceptedEvent)]
    assert (accepted.count, accepted.contradicts) == (4, True)
    # The notice that blames the reader is for a reading that missed something, not this.
    assert "stub_count_mismatch" not in [getattr(e, "code", "") for e in rec.of(ev.NoticeEvent)]
    journal = tmp_path / "journal.sqlite3"
    [defect] = _journal(journal, "deck_defect")
    cards = defect["cards"]
    assert isinstance(cards, dict) and len(cards["missing"]) == 1
    [missing] = cards["missing"]
    # The identity is in the deck's defect only: no public event of its round names it (E1).
    short_round = ends[0].to_json()["round"]
    published = [e.to_json() for e in rec.events]
    assert missing not in json.dumps([e for e in published if e.get("round") == short_round])
    entered = next(r for r in _journal(journal, "stub_counted") if r["source"] == "croupier")
    assert (entered["by"], entered["contradicts"]) == ("script", True)
    [record] = _journal(journal, "stub_accepted")
    assert (record["by"], record["contradicts"]) == ("script-supervisor", True)
