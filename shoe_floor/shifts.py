"""The floor's shifts: named start times in the floor's time zone; each shift runs until the
next one starts (the last of the day runs into the next day).

``day=06:00,swing=14:00,night=22:00`` is the default: the night shift of 1 May runs from
22:00 on 1 May to 06:00 on 2 May and is reported as "2025-05-01 night".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from shoe_controller.errors import ConfigError

DEFAULT_SHIFTS: Final = "day=06:00,swing=14:00,night=22:00"
_ENTRY: Final = re.compile(r"([A-Za-z][A-Za-z0-9_-]{0,31})=([0-2]?\d):([0-5]\d)")


@dataclass(frozen=True, slots=True)
class ShiftSpan:
    """One shift on one day: its name, the day it started, and its bounds (epoch seconds)."""

    day: date
    name: str
    start: float
    end: float

    @property
    def label(self) -> str:
        return f"{self.day.isoformat()} {self.name}"


@dataclass(frozen=True)
class Shifts:
    """The shifts of a day, in order of their start times, in ``zone``."""

    starts: tuple[tuple[str, time], ...]
    zone: tzinfo

    @classmethod
    def parse(cls, text: str | None, zone_name: str | None) -> Shifts:
        spec = text or DEFAULT_SHIFTS
        entries: list[tuple[str, time]] = []
        for item in spec.split(","):
            match = _ENTRY.fullmatch(item.strip())
            if match is None or int(match.group(2)) > 23:
                raise ConfigError(
                    f"--shifts: {item.strip()!r} is not NAME=HH:MM (e.g. {DEFAULT_SHIFTS})"
                )
            entries.append((match.group(1), time(int(match.group(2)), int(match.group(3)))))
        entries.sort(key=lambda e: e[1])
        names = [name for name, _ in entries]
        if len(set(names)) != len(names) or len({t for _, t in entries}) != len(entries):
            raise ConfigError("--shifts: each shift needs its own name and its own start time")
        return cls(tuple(entries), _zone(zone_name))

    def spans(self, since: float, until: float) -> list[ShiftSpan]:
        """Every shift that overlaps [since, until), in order."""
        first = datetime.fromtimestamp(since, self.zone).date() - timedelta(days=1)
        last = datetime.fromtimestamp(until, self.zone).date()
        spans: list[ShiftSpan] = []
        day = first
        while day <= last:
            for i, (name, start) in enumerate(self.starts):
                begin = self._at(day, start)
                if i + 1 < len(self.starts):
                    end = self._at(day, self.starts[i + 1][1])
                else:
                    end = self._at(day + timedelta(days=1), self.starts[0][1])
                if end > since and begin < until:
                    spans.append(ShiftSpan(day, name, begin, end))
            day += timedelta(days=1)
        return spans

    def _at(self, day: date, start: time) -> float:
        return datetime.combine(day, start, self.zone).timestamp()


def _zone(name: str | None) -> tzinfo:
    if name is None:
        local = datetime.now().astimezone().tzinfo
        assert local is not None
        return local
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"--timezone {name!r} is not a time zone this machine knows (e.g. "
            "America/Puerto_Rico; the tzdata package lists them)"
        ) from None


def parse_time(text: str, zone: tzinfo, what: str) -> float:
    """An ISO 8601 date or time; without a zone it is taken in ``zone``."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"{what} {text!r} is not an ISO 8601 date or time (e.g. 2025-05-01 or 2025-05-01T06:00)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return moment.timestamp()
