"""What each input carries into the machine: frozen values, one type per kind of input.

The facade (:class:`~shoe_controller.procedure.procedure.Procedure`) checks a person's values
and wraps them in one of these; the machine hands it to its callbacks as
``event.kwargs["data"]``. :func:`data` takes it out again, checking its type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypeVar

from firmware_protocol import Card, GateMode
from shoe_controller.procedure.decisions import FaultCode, Outcome, TableFacts
from shoe_controller.procedure.machine import Phase
from shoe_controller.procedure.record import Defect
from shoe_controller.procedure.start import StartPosition

if TYPE_CHECKING:
    from transitions import EventData

_D = TypeVar("_D")

#: A shoe as the procedure tells shoes apart: (model, serial number).
ShoeId = tuple[str, str]


def data(event: EventData, kind: type[_D]) -> _D:
    """The input's value, which must be a ``kind``."""
    value = event.kwargs.get("data")
    if not isinstance(value, kind):
        raise TypeError(f"{event.event.name}: expected {kind.__name__}, got {value!r}")
    return value


# --- from the shoe and the link ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Draw:
    draw_index: int
    card: Card
    gate: GateMode


@dataclass(frozen=True, slots=True)
class DoubleDraw:
    draw_index: int


@dataclass(frozen=True, slots=True)
class JamEnd:
    card_left: bool


@dataclass(frozen=True, slots=True)
class EmptyShoe:
    """The shoe reports no card left after ``drawn`` cards of the deck in it."""

    drawn: int


@dataclass(frozen=True, slots=True)
class ShoeFault:
    code: int
    text: str


@dataclass(frozen=True, slots=True)
class Hello:
    """The link is up with ``shoe``."""

    shoe: ShoeId


@dataclass(frozen=True, slots=True)
class Moment:
    """Monotonic seconds, for the rules that count time (F2), and the wall clock's seconds
    when known (the deck's memory, D3)."""

    now: float
    wall: float | None = None


@dataclass(frozen=True, slots=True)
class Reason:
    text: str


# --- from people -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Wagers:
    wagered: frozenset[int]


@dataclass(frozen=True, slots=True)
class Start:
    start: StartPosition


@dataclass(frozen=True, slots=True)
class StubCount:
    count: int
    source: Literal["shoe", "croupier"]
    #: Who entered it: another person accepts it when the figures disagree (E5).
    by: str


@dataclass(frozen=True, slots=True)
class Acceptance:
    """A supervisor accepts the croupier's count the figures disagree with (D1, E5)."""

    by: str


@dataclass(frozen=True, slots=True)
class Determination:
    misdealt: bool


@dataclass(frozen=True, slots=True)
class Clearance:
    by: str
    #: The supervisor chose to end the round void rather than wait (F2).
    void_round: bool = False


#: The most characters of any free text a person gives (a void's reason, a line typed at
#: the terminal): refused beyond in one line, so that what is kept is kept whole, in the
#: journal and in the floor's records (docs/procedure.md, F6).
MAX_TEXT: Final = 200


def text_too_long(what: str, text: str, then: str) -> str | None:
    """The one line refusing ``text`` (``what`` it is) when it is longer than MAX_TEXT
    characters, saying ``then`` what to do; None when it is not."""
    if len(text) <= MAX_TEXT:
        return None
    return f"{what} is at most {MAX_TEXT} characters, this one has {len(text)}: {then}"


@dataclass(frozen=True, slots=True)
class Voiding:
    """A supervisor ends the round void (F6)."""

    by: str
    reason: str


@dataclass(frozen=True, slots=True)
class ClockState:
    """Whether the system clock is synchronised (None: it cannot be told), and how that
    was read."""

    synchronized: bool | None
    source: str


@dataclass(frozen=True, slots=True)
class RemovedDeck:
    """A deck that left the table with a known defect, and when (wall-clock seconds, None
    when the procedure was not told the time)."""

    defect: Defect
    at: float | None


# --- from the journal, at start-up -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoundFacts:
    """A round as the journal holds it, for the start after a stop or a crash: open
    (``outcome`` None) or dealt and not yet closed."""

    round_id: str
    outcome: Outcome | None
    start: StartPosition | None
    wagered: frozenset[int]
    #: (draw index, position, card) of every card dealt, in draw order.
    cards: tuple[tuple[int, int, Card], ...] = ()
    stub_count: int | None = None


@dataclass(frozen=True, slots=True)
class Carry:
    """What the journal says the table was doing when the previous run ended."""

    facts: TableFacts | None = None
    round: RoundFacts | None = None
    #: Decks removed from this table recently with a known defect (D3).
    removed_decks: tuple[RemovedDeck, ...] = ()

    @property
    def crashed(self) -> bool:
        """The previous run ended without a requested stop (F3)."""
        return self.facts is not None and self.facts.phase != "stopped"

    @property
    def faults(self) -> tuple[FaultCode, ...]:
        """The faults nobody cleared."""
        return tuple(self.facts.faults) if self.facts is not None else ()

    def origin(self) -> Phase | None:
        """Where the table was when the previous run ended: the fault's origin, or its
        phase."""
        facts = self.facts
        if facts is None:
            return None
        name = facts.fault_origin if facts.phase == Phase.FAULT.value else facts.phase
        if name is None or name == Phase.STOPPED.value:
            name = facts.fault_origin
        return Phase(name) if name is not None else None
