"""The journal's clock: an unsynchronised system clock is a notice, at start or when it
loses its synchronisation; a rules profile may hold the first round until it is
synchronised. The service reads the clock and passes what it read (a rule with time passed
in, like every other)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shoe_controller.procedure.core import ModelCore
from shoe_controller.procedure.decisions import Notice, NoticeCode
from shoe_controller.procedure.inputs import ClockState, Moment, data

if TYPE_CHECKING:
    from transitions import EventData


class ClockCallbacks(ModelCore):
    """The machine's callbacks (guards and side effects) for the journal's clock (E3): a part of
    :class:`~.model.ProcedureModel`, named in the table of :mod:`.machine`."""

    def note_clock(self, event: EventData) -> None:
        """A notice when the clock is found unsynchronised, at the first reading or after it
        was synchronised, and when it is synchronised again."""
        state = data(event, ClockState)
        before = self.clock_synchronized
        first = not self.clock_read
        self.clock_read = True
        self.clock_synchronized = state.synchronized
        if state.synchronized is not True and (first or before is True):
            how = "is not synchronised" if state.synchronized is False else "cannot be read"
            self.emit(
                Notice(
                    NoticeCode.CLOCK_UNSYNCHRONIZED,
                    f"the system clock {how} ({state.source}): the journal's times may drift "
                    "from other records'; check the time service",
                    "E3",
                )
            )
        elif state.synchronized is True and not first and before is not True:
            self.emit(
                Notice(
                    NoticeCode.CLOCK_SYNCHRONIZED,
                    f"the system clock is synchronised again ({state.source})",
                    "E3",
                )
            )

    def note_time_passed(self, event: EventData) -> None:
        self.note_time(data(event, Moment).wall)

    def clock_lets_round_open(self, event: EventData) -> bool:
        return not self.clock_holds_round()

    def clock_holds_round(self) -> bool:
        """The rules want a synchronised clock before the first round, and it is not."""
        return (
            self.rules.require_synchronized_clock
            and not self.first_round_opened
            and self.clock_synchronized is not True
        )
