"""The public snapshot is a fold over the published events: it holds what they said and
nothing else, and counts today's rounds and hands."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shoe_controller.service import events as ev
from shoe_controller.service.public_state import PublicState

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def a_round(state: PublicState, round_id: str, start: float, wagered: tuple[int, ...]) -> None:
    state.apply(ev.StateEvent(state="deck_loaded", previous="idle", round=round_id, ts=at(start)))
    state.apply(
        ev.PromptEvent(id=1, need="no_more_bets", message="bets", round=round_id, ts=at(start))
    )
    for i in range(49):
        state.apply(ev.CardEvent(index=i + 1, position=i % 7 + 1, round=round_id, ts=at(start)))
    state.apply(ev.StubEvent(count=4, round=round_id, ts=at(start + 1)))
    state.apply(
        ev.RoundEndEvent(
            outcome="dealt",
            reason="ok",
            start_position=1,
            cards_per_position={str(p): 7 for p in range(1, 8)},
            wagered=wagered,
            collected_unseen=tuple(p for p in range(2, 8) if p not in wagered),
            round=round_id,
            ts=at(start + 1),
        )
    )


@pytest.mark.rule("E1")
def test_the_snapshot_holds_counts_until_close_then_the_published_hands() -> None:
    state = PublicState(clock=lambda: at(30), tz=UTC)
    a_round(state, "r1", 0, (2, 4))
    snap = state.as_json()
    assert snap["round"] == "r1"
    assert snap["cards"] == {str(p): 7 for p in range(1, 8)}
    assert snap["cards_dealt"] == 49
    assert snap["stub"] == 4
    assert snap["wagered"] == [2, 4]
    assert snap["last_round"]["hands"] is None
    hands = {"1": ("QH",) * 7, "2": ("AS",) * 7, "4": ("2D",) * 7}
    state.apply(ev.RoundClosedEvent(hands=hands, round="r1", ts=at(2)))
    assert state.as_json()["last_round"]["hands"] == {k: list(v) for k, v in hands.items()}
    # The next round starts from nothing; the last round's hands stay for settlement.
    state.apply(ev.StateEvent(state="deck_loaded", previous="idle", round="r2", ts=at(3)))
    snap = state.as_json()
    assert snap["cards"] == {str(p): 0 for p in range(1, 8)}
    assert snap["stub"] is None
    assert snap["prompt"] is None
    assert snap["last_round"]["round"] == "r1"


def test_a_fault_shows_until_it_is_cleared() -> None:
    state = PublicState()
    state.apply(ev.FaultEvent(code="jam", message="stuck", rule="F1", round="r1"))
    assert state.as_json()["fault"] == {"code": "jam", "message": "stuck", "rule": "F1"}
    state.apply(ev.FaultClearedEvent(by="sam", round="r1"))
    assert state.as_json()["fault"] is None


def test_rounds_and_hands_per_hour_today() -> None:
    now = at(120)
    state = PublicState(clock=lambda: now, tz=UTC)
    a_round(state, "r1", 0, (2, 4, 5))
    a_round(state, "r2", 60, (3,))
    today = state.as_json()["today"]
    assert today == {"rounds": 2, "hands": 4, "rounds_per_hour": 1.0, "hands_per_hour": 2.0}


def test_yesterday_counts_nothing_today() -> None:
    state = PublicState(clock=lambda: at(24 * 60), tz=UTC)
    a_round(state, "r1", 0, (2,))
    assert state.as_json()["today"]["rounds"] == 0


def test_an_unknown_event_changes_nothing_but_the_time() -> None:
    state = PublicState()
    before = state.as_json()
    state.apply_json({"event": "from_the_future", "ts": "2026-11-29T12:00:00.000Z", "round": None})
    after = state.as_json()
    assert after.pop("updated") == "2026-11-29T12:00:00.000Z"
    before.pop("updated")
    assert after == before
