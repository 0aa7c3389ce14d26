"""The report's arithmetic: shifts in the floor's time zone, online and offline time from
presence, rates per hour online."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from shoe_controller.errors import ConfigError
from shoe_floor.report import summarize
from shoe_floor.shifts import Shifts, parse_time
from shoe_floor.store import StoredEvent, StoredPresence


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def end(when: str, outcome: str, wagered: list[int]) -> StoredEvent:
    body = {"event": "round_end", "ts": when, "outcome": outcome, "wagered": wagered}
    return StoredEvent("s", "T1", "j", 1, "round_end", "r", at(when), json.dumps(body))


def fault(when: str, code: str) -> StoredEvent:
    body = {"event": "fault", "ts": when, "code": code}
    return StoredEvent("s", "T1", "j", 2, "fault", None, at(when), json.dumps(body))


def test_shifts_run_into_the_next_day_and_are_named_by_their_first_day() -> None:
    shifts = Shifts.parse("day=06:00,swing=14:00,night=22:00", "UTC")
    spans = shifts.spans(at("2025-05-01T12:00"), at("2025-05-02T07:00"))
    assert [s.label for s in spans] == [
        "2025-05-01 day",
        "2025-05-01 swing",
        "2025-05-01 night",
        "2025-05-02 day",
    ]
    night = spans[2]
    assert (night.start, night.end) == (at("2025-05-01T22:00"), at("2025-05-02T06:00"))


def test_shifts_follow_the_time_zone() -> None:
    shifts = Shifts.parse("day=06:00,night=18:00", "America/Puerto_Rico")  # UTC-4
    day = shifts.spans(at("2025-05-01T12:00"), at("2025-05-01T13:00"))[0]
    assert day.start == at("2025-05-01T10:00")
    assert parse_time("2025-05-01T06:00", shifts.zone, "--since") == at("2025-05-01T10:00")


@pytest.mark.parametrize("text", ["day", "day=25:00", "a=06:00,b=06:00", "a=06:00,a=07:00"])
def test_bad_shifts_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="--shifts"):
        Shifts.parse(text, "UTC")
    with pytest.raises(ConfigError, match="--timezone"):
        Shifts.parse(None, "Mars/Olympus")


def test_counts_rates_and_offline_time_per_shift() -> None:
    shifts = Shifts.parse("day=06:00,night=18:00", "UTC")
    events = [
        end("2025-05-01T07:00", "dealt", [2, 4, 5]),
        end("2025-05-01T07:10", "void_misdeal", [2]),
        end("2025-05-01T08:00", "dealt", [3]),
        fault("2025-05-01T07:05", "jam"),
        end("2025-05-01T19:00", "not_played", []),
    ]
    presence = [
        # Online from 06:00, its connection dropped at 10:00 (a Last Will), back at 11:00
        # on a new connection that is never closed.
        StoredPresence("s", "T1", "a-1", True, at("2025-05-01T06:00")),
        StoredPresence("s", "T1", "a-1", False, at("2025-05-01T10:00")),
        StoredPresence("s", "T1", "a-2", True, at("2025-05-01T11:00")),
    ]
    rows = summarize(
        events,
        presence,
        shifts,
        since=at("2025-05-01T06:00"),
        until=at("2025-05-02T06:00"),
        now=at("2025-05-02T06:00"),
    )
    day, night, total = rows
    assert day.shift is not None and day.shift.name == "day"
    assert (day.rounds, day.outcomes["dealt"], day.outcomes["void_misdeal"]) == (3, 2, 1)
    assert day.hands == 4 and dict(day.faults) == {"jam": 1}
    assert day.offline_seconds == 3600 and day.online_seconds == 11 * 3600
    assert day.per_hour(day.rounds) == round(3 / 11, 2)
    assert night.outcomes["not_played"] == 1 and night.offline_seconds == 0
    assert total.shift is None and total.rounds == 4 and total.offline_seconds == 3600
    assert total.as_json()["hands_per_hour"] == round(4 / 23, 2)
