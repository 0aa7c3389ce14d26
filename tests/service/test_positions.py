"""The number of positions, the cards to each and the stub come from the rules profile:
a profile with 6 positions, 8 cards to each and a stub of 5 deals end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoe_controller.profiles import RulesProfile, profile_from_text
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from tests.service.helpers import start_table

PROFILE_FILE = Path(__file__).parent / "profiles" / "six-positions.toml"


def six_positions() -> RulesProfile:
    return profile_from_text("six-positions", PROFILE_FILE.read_text(encoding="utf-8"))


@pytest.mark.rule("C1")
@pytest.mark.rule("D1")
@pytest.mark.rule("E2")
def test_a_six_position_profile_deals_rounds(tmp_path: Path) -> None:
    profile = six_positions()
    rules = profile.rules
    assert (rules.positions, rules.deal_size, rules.stub_size) == (6, 48, 5)
    config = Config(profile=profile, table=rules)
    controller, rec = start_table(tmp_path, device="sim://?seed=21&pace=0", config=config)
    try:
        rec.wait_for(lambda _: rec.finished_rounds() >= 2)
        snapshot = controller.snapshot()
    finally:
        controller.stop()
    [started] = rec.of(ev.StartedEvent)
    assert isinstance(started, ev.StartedEvent)
    assert started.table == {
        "positions": 6,
        "cards_per_position": 8,
        "stub_size": 5,
        "seat_labels": {},
        "external_rng": None,
    }
    ends = [e for e in rec.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
    assert [e.outcome for e in ends[:2]] == ["dealt", "dealt"]
    end = ends[0]
    assert end.cards_per_position == {str(p): 8 for p in range(1, 7)}
    assert end.collected_unseen == (3, 6)
    cards = [
        e for e in rec.of(ev.CardEvent) if isinstance(e, ev.CardEvent) and e.round == end.round
    ]
    start = end.start_position
    assert start is not None
    assert [c.position for c in cards] == [(start - 1 + i) % 6 + 1 for i in range(48)]
    stubs = [
        e for e in rec.of(ev.StubEvent) if isinstance(e, ev.StubEvent) and e.round == end.round
    ]
    assert [s.count for s in stubs][-1] == 5
    [closed] = [e for e in rec.of(ev.RoundClosedEvent) if isinstance(e, ev.RoundClosedEvent)][:1]
    assert sorted(closed.hands, key=int) == ["1", "2", "4", "5"]
    assert all(len(hand) == 8 for hand in closed.hands.values())
    assert snapshot["table"]["positions"] == 6
    assert sorted(snapshot["cards"], key=int) == [str(p) for p in range(1, 7)]
