"""The table controller end to end over the in-process simulated shoe."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.cli.croupier import Script, ScriptedCroupier
from shoe_controller.link.driver import LinkDriver
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.service.controller import TableController
from tests.service.helpers import Recorder, start_table

CARD_TEXT = re.compile(r'"(?:[A2-9TJQK][SHDC]|JK)"')
#: A scripted croupier with an attendant who clears faults, for rounds that meet one.
DEALER = Script(wagers=frozenset({2, 4, 5}), attendant="att-1")


def _journal_rows(path: Path) -> list[tuple[int, str, str | None, str]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(conn.execute("SELECT seq, kind, round_id, payload FROM records ORDER BY seq"))
    finally:
        conn.close()


def _run_rounds(tmp_path: Path, rounds: int, **kwargs: Any) -> tuple[TableController, Recorder]:
    controller, recorder = start_table(tmp_path, **kwargs)
    try:
        recorder.wait_for(lambda _: recorder.finished_rounds() >= rounds)
    finally:
        controller.stop()
    return controller, recorder


@pytest.mark.rule("C1")
@pytest.mark.rule("C2")
@pytest.mark.rule("D1")
def test_rounds_are_dealt_seven_cards_to_each_position(tmp_path: Path) -> None:
    _, rec = _run_rounds(tmp_path, 2, device="sim://?seed=11&pace=0")
    ends = [e for e in rec.of(ev.RoundEnded) if isinstance(e, ev.RoundEnded)]
    assert [e.outcome for e in ends[:2]] == ["dealt", "dealt"]
    for end in ends[:2]:
        assert end.cards_per_position == {str(p): 7 for p in range(1, 8)}
        assert end.wagered == (2, 4, 5)
        assert end.collected_unseen == (3, 6, 7)
        cards = [
            e for e in rec.of(ev.CardDealt) if isinstance(e, ev.CardDealt) and e.round == end.round
        ]
        assert [c.index for c in cards] == list(range(1, 50))
        start = end.start_position
        assert start is not None
        expected = [(start - 1 + i) % 7 + 1 for i in range(49)]
        assert [c.position for c in cards] == expected


@pytest.mark.rule("E1")
@pytest.mark.rule("E2")
def test_no_identity_is_published_but_the_closed_round_record(tmp_path: Path) -> None:
    _, rec = _run_rounds(tmp_path, 2, device="sim://?seed=12&pace=0")
    closed = [e for e in rec.of(ev.RoundClosed) if isinstance(e, ev.RoundClosed)]
    assert closed
    for event in rec.events:
        line = str(event.to_json())
        if isinstance(event, ev.RoundClosed):
            # E2: the banker's hand and the wagered hands only, 7 cards each.
            assert set(event.hands) == {"1", "2", "4", "5"}
            assert all(len(cards) == 7 for cards in event.hands.values())
        else:
            assert not CARD_TEXT.search(line.replace("'", '"')), line


@pytest.mark.rule("E3")
def test_every_event_is_journaled_before_the_shoe_is_acknowledged(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    acknowledged: list[int] = []
    late: list[int] = []

    class CheckingDriver(LinkDriver):
        def acknowledge(self, seq: int) -> None:
            journaled = {
                json.loads(payload)["seq"]
                for _, kind, _, payload in _journal_rows(journal)
                if kind == "shoe_event"
            }
            if seq not in journaled:
                late.append(seq)
            acknowledged.append(seq)
            super().acknowledge(seq)

    def factory(address: str, config: Config, on_event: Any) -> CheckingDriver:
        return CheckingDriver(address, config.approved, on_event)

    _run_rounds(tmp_path, 1, device="sim://?seed=13&pace=0", link_factory=factory)
    assert acknowledged, "the shoe was never acknowledged"
    assert late == []


@pytest.mark.rule("F3")
def test_a_round_open_at_restart_is_void_and_blocks_dealing(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    # First run: bets closed, then the controller stops mid-round (no start position).
    controller, rec = start_table(
        tmp_path, device="sim://?seed=14&pace=0", script=None, journal=journal
    )
    try:
        rec.wait_for(lambda es: any(getattr(e, "need", "") == "no_more_bets" for e in es))
        controller.no_more_bets([2, 3]).result(timeout=10)
        open_round = controller._procedure.round_id
        assert open_round
    finally:
        controller.stop()
    # Second run on the same journal: the open round is void before anything else.
    controller2, rec2 = start_table(
        tmp_path, device="sim://?seed=15&pace=0", script=None, journal=journal
    )
    try:
        rec2.wait_for(lambda es: any(isinstance(e, ev.RoundEnded) for e in es))
        ended = [e for e in rec2.of(ev.RoundEnded) if isinstance(e, ev.RoundEnded)]
        assert ended[0].round == open_round
        assert ended[0].outcome == "void_fault"
        rec2.wait_for(lambda es: any(isinstance(e, ev.Connected) for e in es))
        assert controller2.phase.value == "fault"
    finally:
        controller2.stop()
    rows = _journal_rows(journal)
    ends = [r for r in rows if r[1] == "round_ended" and r[2] == open_round]
    assert len(ends) == 1
    assert "F3" in ends[0][3]


@pytest.mark.rule("F1")
def test_a_fault_blocks_dealing_until_an_attendant_clears_it(tmp_path: Path) -> None:
    _, rec = _run_rounds(
        tmp_path,
        2,
        device="sim://?seed=16&pace=0&faults=jam@10",
        script=Script(wagers=frozenset({2}), attendant="att-7"),
    )
    faults = [e for e in rec.of(ev.FaultRaised) if isinstance(e, ev.FaultRaised)]
    assert faults and faults[0].code == "jam"
    cleared = [e for e in rec.of(ev.FaultCleared) if isinstance(e, ev.FaultCleared)]
    assert cleared and cleared[0].by == "att-7"
    # No card was dealt between the fault and its clearing.
    i_fault = rec.events.index(faults[0])
    i_clear = rec.events.index(cleared[0])
    assert not any(isinstance(e, ev.CardDealt) for e in rec.events[i_fault:i_clear])


@pytest.mark.rule("D2")
def test_a_short_deck_voids_and_removes_the_deck(tmp_path: Path) -> None:
    _, rec = _run_rounds(tmp_path, 2, device="sim://?seed=17&pace=0&deck=short")
    ends = [e for e in rec.of(ev.RoundEnded) if isinstance(e, ev.RoundEnded)]
    assert ends[0].outcome == "void_deck_removed"
    assert ends[1].outcome == "dealt"
    prompts = [e.need for e in rec.of(ev.Prompt) if isinstance(e, ev.Prompt)]
    assert "remove_deck" in prompts and "new_deck" in prompts
    stubs = [e.count for e in rec.of(ev.StubCounted) if isinstance(e, ev.StubCounted)]
    assert stubs[:2] == [3, 4]


def test_a_refused_input_is_journaled_and_changes_nothing(tmp_path: Path) -> None:
    controller, rec = start_table(tmp_path, device="sim://?seed=18&pace=0", script=None)
    try:
        rec.wait_for(lambda es: any(getattr(e, "need", "") == "no_more_bets" for e in es))
        with pytest.raises(Exception, match="no more bets"):
            controller.start_by_dice(1, 2, 3).result(timeout=10)
        assert controller.phase.value == "deck_loaded"
    finally:
        controller.stop()
    rows = _journal_rows(tmp_path / "journal.sqlite3")
    refused = [r for r in rows if r[1] == "input" and '"accepted":false' in r[3]]
    assert len(refused) == 1


@pytest.mark.rule("F2")
def test_unplugged_and_plugged_back_mid_deal_loses_nothing(tmp_path: Path) -> None:
    _, rec = _run_rounds(
        tmp_path, 2, device="sim://?seed=19&pace=0&faults=disconnect@20", script=DEALER
    )
    statuses = [e.status for e in rec.of(ev.LinkChanged) if isinstance(e, ev.LinkChanged)]
    assert "lost" in statuses
    assert len(rec.of(ev.Connected)) >= 2
    ends = [e for e in rec.of(ev.RoundEnded) if isinstance(e, ev.RoundEnded)]
    # The link came back to the same shoe within the grace period and the shoe sent again
    # what it held: the round goes on with every card in its place, and no fault.
    assert ends[0].outcome == "dealt", ends[0].reason
    assert not rec.of(ev.FaultRaised)
    assert ends[0].cards_per_position == {str(p): 7 for p in range(1, 8)}
    rows = _journal_rows(tmp_path / "journal.sqlite3")
    first = ends[0].round
    cards = [r for r in rows if r[1] == "card" and r[2] == first]
    assert len(cards) == 49


@pytest.mark.rule("F1")
@pytest.mark.rule("F2")
def test_a_link_not_back_in_time_is_a_fault_an_attendant_clears(tmp_path: Path) -> None:
    controller = TableController(
        Config(),
        journal_path=tmp_path / "journal.sqlite3",
        device="sim://?seed=21&pace=0&faults=disconnect@20",
        link_grace=0.0,
    )
    rec = Recorder()
    controller.subscribe(rec)
    controller.subscribe(ScriptedCroupier(controller, DEALER, lambda error: None))
    controller.start()
    try:
        rec.wait_for(lambda _: rec.finished_rounds() >= 1)
    finally:
        controller.stop()
    faults = [e for e in rec.of(ev.FaultRaised) if isinstance(e, ev.FaultRaised)]
    assert faults[0].code == "link_lost" and faults[0].rule == "F2"
    cleared = rec.of(ev.FaultCleared)
    assert cleared
    # The attendant was asked only once the shoe was back.
    prompts = [i for i, e in enumerate(rec.events) if getattr(e, "need", "") == "attendant_clear"]
    reconnected = [i for i, e in enumerate(rec.events) if isinstance(e, ev.Connected)][1]
    assert prompts and min(prompts) > reconnected - 2


@pytest.mark.rule("F2")
def test_a_shoe_that_restarts_and_loses_events_voids_the_round(tmp_path: Path) -> None:
    _, rec = _run_rounds(
        tmp_path,
        1,
        device="sim://?seed=20&pace=0&faults=reboot@20&persist=0",
        script=DEALER,
    )
    statuses = [e.status for e in rec.of(ev.LinkChanged) if isinstance(e, ev.LinkChanged)]
    assert "events_lost" in statuses
    ends = [e for e in rec.of(ev.RoundEnded) if isinstance(e, ev.RoundEnded)]
    assert ends[0].outcome == "void_fault"
