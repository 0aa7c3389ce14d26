"""A wall clock that jumps: noticed against the monotonic clock, to be journaled.

The journal's times are wall-clock times (an auditor compares them with other records), and
the monotonic clock beside them never jumps. Between two looks, both clocks advance alike
unless someone or something set the wall clock: :class:`ClockWatcher` reports a difference
of more than :data:`STEP_THRESHOLD` seconds as a :class:`ClockStep`, which the service
journals as a ``clock_step`` record. It reads only the clocks it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from shoe_controller.journal.records import format_wall

#: A wall clock that moved this much (seconds) more or less than the monotonic clock was set.
STEP_THRESHOLD: Final = 1.0

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class ClockStep:
    """The wall clock moved by ``step_seconds`` (positive: forward) at a moment the
    monotonic clock says was ``wall_before`` on the old setting and ``wall_after`` on the
    new one (epoch seconds)."""

    step_seconds: float
    wall_before: float
    wall_after: float

    def payload(self) -> dict[str, Any]:
        """The ``clock_step`` record's payload."""
        return {
            "step_seconds": round(self.step_seconds, 6),
            "wall_before": format_wall(self.wall_before),
            "wall_after": format_wall(self.wall_after),
        }


class ClockWatcher:
    """Compares how far the wall clock and the monotonic clock moved since the last look."""

    def __init__(self, wall: Clock, monotonic: Clock, threshold: float = STEP_THRESHOLD) -> None:
        self._wall = wall
        self._monotonic = monotonic
        self._threshold = threshold
        self._last = (wall(), monotonic())

    def check(self) -> ClockStep | None:
        """A step of the wall clock since the last check, or None."""
        wall, mono = self._wall(), self._monotonic()
        last_wall, last_mono = self._last
        self._last = (wall, mono)
        unstepped = last_wall + (mono - last_mono)
        step = wall - unstepped
        if abs(step) <= self._threshold:
            return None
        return ClockStep(step, unstepped, wall)
