"""The table controller end to end over the in-process simulated shoe."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from firmware_protocol import Message
from shoe_controller.cli.croupier import Script, ScriptedCroupier
from shoe_controller.link.driver import LinkDriver
from shoe_controller.link.pending import PendingCommand
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.service.controller import TableController
from tests.service.helpers import DEALER as DEALER_ACTOR
from tests.service.helpers import Recorder, SpentDeckTaker, crash, start_table

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
    ends = [e for e in rec.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
    assert [e.outcome for e in ends[:2]] == ["dealt", "dealt"]
    for end in ends[:2]:
        assert end.cards_per_position == {str(p): 7 for p in range(1, 8)}
        assert end.wagered == (2, 4, 5)
        assert end.collected_unseen == (3, 6, 7)
        cards = [
            e for e in rec.of(ev.CardEvent) if isinstance(e, ev.CardEvent) and e.round == end.round
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
    closed = [e for e in rec.of(ev.RoundClosedEvent) if isinstance(e, ev.RoundClosedEvent)]
    assert closed
    for event in rec.events:
        line = str(event.to_json())
        if isinstance(event, ev.RoundClosedEvent):
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
        def acknowledge(self, seq: int, then: Sequence[Message] = ()) -> list[PendingCommand]:
            journaled = {
                json.loads(payload)["seq"]
                for _, kind, _, payload in _journal_rows(journal)
                if kind == "shoe_event"
            }
            if seq not in journaled:
                late.append(seq)
            acknowledged.append(seq)
            return super().acknowledge(seq, then)

    def factory(address: str, config: Config, on_event: Any, resume: Any) -> CheckingDriver:
        return CheckingDriver(address, config.approved, on_event)

    _run_rounds(tmp_path, 1, device="sim://?seed=13&pace=0", link_factory=factory)
    assert acknowledged, "the shoe was never acknowledged"
    assert late == []


@pytest.mark.rule("F4")
def test_a_stop_before_the_gate_opened_strands_nothing(tmp_path: Path) -> None:
    """A clean stop with bets closed: the round closes as not played; the next start deals
    without an attendant and counts only its own rounds."""
    journal = tmp_path / "journal.sqlite3"
    controller, rec = start_table(
        tmp_path, device="sim://?seed=14&pace=0", script=None, journal=journal
    )
    try:
        rec.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
        controller.confirm_shuffle(actor=DEALER_ACTOR).result(timeout=10)
        controller.no_more_bets([2, 3], actor=DEALER_ACTOR).result(timeout=10)
        open_round = controller._procedure.round_id
        assert open_round
    finally:
        controller.stop()
    ended = [e for e in rec.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
    assert [(e.round, e.outcome) for e in ended] == [(open_round, "not_played")]
    _, rec2 = _run_rounds(tmp_path, 1, device="sim://?seed=14&pace=0", journal=journal)
    assert not rec2.of(ev.FaultEvent)
    rows = _journal_rows(journal)
    assert len([r for r in rows if r[1] == "round_ended" and r[2] == open_round]) == 1


@pytest.mark.rule("F3")
def test_after_a_crash_mid_deal_the_round_is_void_and_a_clear_leads_to_a_dealt_round(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "journal.sqlite3"
    device = "sim://?seed=15&pace=0.002"
    controller, rec = start_table(tmp_path, device=device, journal=journal)
    rec.wait_for(lambda es: len([e for e in es if isinstance(e, ev.CardEvent)]) >= 10)
    open_round = controller._procedure.round_id
    crash(controller)
    # The next run takes the journal over: the open round is void before anything else,
    # with what the journal knows of it, and the fault waits for an attendant (F3).
    controller2, rec2 = start_table(tmp_path, device=device, script=DEALER, journal=journal)
    hands = SpentDeckTaker(device)
    controller2.subscribe(hands)
    try:
        rec2.wait_for(lambda es: any(isinstance(e, ev.RoundClosedEvent) for e in es))
    finally:
        controller2.stop()
    ended = [e for e in rec2.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
    assert (ended[0].round, ended[0].outcome) == (open_round, "void_fault")
    assert ended[0].start_position is not None and sum(ended[0].cards_per_position.values())
    assert ended[0].reason.count("Section 10.13") == 1
    faults = [e for e in rec2.of(ev.FaultEvent) if isinstance(e, ev.FaultEvent)]
    assert faults[0].code == "controller_restarted" and faults[0].rule == "F3"
    assert rec2.of(ev.FaultClearedEvent)
    rows = _journal_rows(journal)
    assert len([r for r in rows if r[1] == "round_ended" and r[2] == open_round]) == 1


@pytest.mark.rule("F3")
def test_a_fault_nobody_cleared_is_still_there_after_a_restart(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    device = "sim://?seed=16&pace=0&faults=jam@5&jam_for=0"
    controller, rec = start_table(tmp_path, device=device, journal=journal)
    rec.wait_for(lambda es: any(isinstance(e, ev.FaultEvent) for e in es))
    controller.stop()
    controller2, rec2 = start_table(tmp_path, device=device, script=None, journal=journal)
    try:
        rec2.wait_for(lambda es: any(isinstance(e, ev.ConnectedEvent) for e in es))
        assert controller2.phase.value == "fault"
        with pytest.raises(Exception, match="blocked by a fault"):
            controller2.confirm_shuffle(actor=DEALER_ACTOR).result(timeout=10)
    finally:
        controller2.stop()
    rows = _journal_rows(journal)
    assert not [r for r in rows if r[1] == "fault_cleared"]


def test_a_short_deck_voids_and_removes_the_deck(tmp_path: Path) -> None:
    # The croupier counts the stub of the short deck by hand: 3 (D2).
    script = Script(wagers=frozenset({2, 4, 5}), stub_count=3)
    _, rec = _run_rounds(tmp_path, 2, device="sim://?seed=17&pace=0&deck=short", script=script)
    ends = [e for e in rec.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
    assert ends[0].outcome == "void_deck_removed"
    assert ends[1].outcome == "dealt"
    prompts = [e.need for e in rec.of(ev.PromptEvent) if isinstance(e, ev.PromptEvent)]
    # The shoe's croupier had loaded the next deck already: it is confirmed as new (D2).
    assert "new_deck" in prompts
    stubs = [(e.count, e.source) for e in rec.of(ev.StubEvent) if isinstance(e, ev.StubEvent)]
    assert stubs[:3] == [(3, "shoe"), (3, "croupier"), (4, "shoe")]


def test_a_refused_input_is_journaled_and_changes_nothing(tmp_path: Path) -> None:
    controller, rec = start_table(tmp_path, device="sim://?seed=18&pace=0", script=None)
    try:
        rec.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
        controller.confirm_shuffle(actor=DEALER_ACTOR).result(timeout=10)
        with pytest.raises(Exception, match="no more bets"):
            controller.start_by_dice(1, 2, 3, actor=DEALER_ACTOR).result(timeout=10)
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
    statuses = [e.status for e in rec.of(ev.LinkStatusEvent) if isinstance(e, ev.LinkStatusEvent)]
    assert "lost" in statuses
    assert len(rec.of(ev.ConnectedEvent)) >= 2
    ends = [e for e in rec.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
    # The link came back to the same shoe within the grace period and the shoe sent again
    # what it held: the round goes on with every card in its place, and no fault.
    assert ends[0].outcome == "dealt", ends[0].reason
    assert not rec.of(ev.FaultEvent)
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
    faults = [e for e in rec.of(ev.FaultEvent) if isinstance(e, ev.FaultEvent)]
    assert faults[0].code == "link_lost" and faults[0].rule == "F2"
    cleared = rec.of(ev.FaultClearedEvent)
    assert cleared
    # The attendant is told to wait for the shoe, and asked to clear once it is back.
    needs = [getattr(e, "need", "") for e in rec.events]
    reconnected = [i for i, e in enumerate(rec.events) if isinstance(e, ev.ConnectedEvent)][1]
    assert "wait_shoe" in needs[:reconnected]
    assert "attendant_clear" not in needs[:reconnected]
    assert "attendant_clear" in needs[reconnected:]


@pytest.mark.rule("F2")
def test_a_shoe_that_restarts_and_loses_events_voids_the_round(tmp_path: Path) -> None:
    _, rec = _run_rounds(
        tmp_path,
        1,
        device="sim://?seed=20&pace=0&faults=reboot@20&persist=0",
        script=DEALER,
    )
    statuses = [e.status for e in rec.of(ev.LinkStatusEvent) if isinstance(e, ev.LinkStatusEvent)]
    assert "events_lost" in statuses
    ends = [e for e in rec.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
    assert ends[0].outcome == "void_fault"
