"""The machine's model: the state the machine decides, and the callbacks every phase shares.

The state of a table lives here and nowhere else: the phase (bound by transitions as
``state``), the round's record, the gate as last commanded, the shoe's condition, the
deck's, the faults. Only callbacks that the machine's table names (:mod:`.machine`) change
it; the modules of the rules (:mod:`.shoe`, :mod:`.deck`, :mod:`.bets`, :mod:`.cards`,
:mod:`.stub`, :mod:`.faults`) add theirs to this base. Callbacks receive the transitions
event and only append decisions to :attr:`ModelCore.out`; nothing here does I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from firmware_protocol import GateMode
from shoe_controller.procedure import prompts
from shoe_controller.procedure.decisions import (
    Decision,
    DeckDefect,
    FaultCode,
    FaultRaised,
    GateCommand,
    Outcome,
    Prompt,
    RoundEnded,
    StateChanged,
    TableFacts,
)
from shoe_controller.procedure.gate import GateRefused, ShoeCondition, gate_refusal, gate_wanted
from shoe_controller.procedure.inputs import RemovedDeck
from shoe_controller.procedure.machine import IN_SHOE, INTAKE, Phase
from shoe_controller.procedure.record import Defect, Irregularity, RoundRecord
from shoe_controller.procedure.table import TableRules

if TYPE_CHECKING:
    from transitions import EventData

log = logging.getLogger(__name__)

#: Errors that are bugs in the controller, not irregularities at the table: with
#: :attr:`ModelCore.reraise_bugs` set (the test suite sets it), they propagate.
PROGRAMMING_ERRORS = (AttributeError, TypeError, NameError, KeyError, IndexError, AssertionError)
#: How long the link may be down while cards are at stake before it is a fault (seconds).
#: A shoe that comes back within it sends again what it held and the round goes on (F2).
LINK_GRACE = 10.0
#: How long a deck removed from the table with a known defect is remembered, so that the
#: same deck coming back is refused as the removed deck (D2, D3): seconds.
DECK_MEMORY = 24 * 3600.0


def phase_of(state: object) -> Phase:
    """A phase from what transitions hands callbacks: the enum, or its member name."""
    if isinstance(state, Phase):
        return state
    return Phase[str(state)]


@dataclass(slots=True)
class DeckState:
    """What the table knows of the deck in or out of the shoe (A2, D2, D3). Its fields
    change only through the methods below, each named for what happened to the deck."""

    #: D2/D3: the deck left the table; the next deck must be a different one.
    must_change: bool = False
    #: A loaded deck no round has used is in the shoe (A2).
    waiting: bool = False
    #: The deck of a void round is still in the shoe: it must come out first.
    spent: bool = False
    #: Decks that left this table with a known defect within :data:`DECK_MEMORY` (D3).
    removed: list[RemovedDeck] = field(default_factory=list)

    def loaded(self) -> None:
        """A deck went into the shoe: no round has used it yet."""
        self.waiting, self.spent = True, False

    def taken_out(self) -> None:
        self.waiting, self.spent = False, False

    def lost_sight(self) -> None:
        """The deck in the shoe may have changed unseen (another shoe, lost events): no
        round opens on it."""
        self.waiting = False

    def condemn(self) -> None:
        """The deck must leave the table; only a different deck opens a round (D2)."""
        self.must_change = True

    def used(self) -> None:
        """A round opened on the deck in the shoe."""
        self.must_change, self.waiting, self.spent = False, False, False

    def spend(self) -> None:
        """A void round used the deck: it comes out before the next one."""
        self.spent = True

    def broken(self) -> None:
        """Cards left the shoe where none could: the deck is not one a round may use."""
        self.spent, self.waiting = True, False

    def kept_for_next_start(self) -> None:
        """The service stopped before the gate opened: the untouched deck waits (F4)."""
        self.waiting = True

    def restore(self, *, must_change: bool, waiting: bool, spent: bool) -> None:
        """What the journal says of the deck, at start-up (F3)."""
        self.must_change, self.waiting, self.spent = must_change, waiting, spent

    def remember(self, removed: RemovedDeck) -> None:
        self.removed.append(removed)

    def remember_only(self, removed: list[RemovedDeck]) -> None:
        self.removed = removed


@dataclass(slots=True)
class FaultState:
    """The faults waiting for an attendant's clear, and where they happened (F1, F3). Its
    fields change only through the methods below."""

    codes: list[FaultCode] = field(default_factory=list)
    #: The phase the table was in when the fault came.
    origin: Phase | None = None
    #: A fault of this episode voided the round.
    voided: bool = False
    #: Where a fault restored at start-up happened (F3).
    restored_origin: Phase | None = None

    def raised(self, code: FaultCode) -> None:
        self.codes.append(code)

    def void(self) -> None:
        """A fault of this episode ended the round void."""
        self.voided = True

    def entered(self, source: Phase) -> None:
        """The table entered the fault phase from ``source``, or from where the journal's
        fault happened."""
        self.origin = self.restored_origin or source
        self.restored_origin = None

    def cleared(self) -> None:
        self.origin, self.codes, self.voided = None, [], False

    def restore(self, codes: tuple[FaultCode, ...], origin: Phase) -> None:
        """The faults the journal says nobody cleared, and where they happened (F3)."""
        self.codes.extend(codes)
        self.restored_origin = origin


class ModelCore:
    """The state and the machine-wide callbacks; :func:`~.machine.build_machine` binds
    ``state`` and one method per trigger, fired through :meth:`trigger`."""

    #: Let programming errors in callbacks propagate instead of faulting the table.
    reraise_bugs: ClassVar[bool] = False

    state: Phase
    trigger: Callable[..., bool]
    may_trigger: Callable[..., bool]

    def __init__(
        self, rules: TableRules, round_ids: Callable[[], str], link_grace: float = LINK_GRACE
    ) -> None:
        self.rules = rules
        self.round_ids = round_ids
        #: Rule F2: how long the link may be down while cards are at stake (seconds).
        self.link_grace = link_grace
        #: The decisions of the input in progress.
        self.out: list[Decision] = []
        self.condition = ShoeCondition()
        self.deck = DeckState()
        self.fault = FaultState()
        self.gate = GateMode.LOCKED
        #: The limit that goes with ``gate``: the draw index at which the shoe locks it.
        self.gate_limit = 0
        self.round: RoundRecord | None = None
        #: The wagers entered for the open round, or None when none were entered (A3).
        self.wagers_entered: frozenset[int] | None = None
        #: The outcome the record supports for the pending determination (D2).
        self.proposal: Outcome | None = None
        #: The journal's state was taken over (F3); it is taken over once.
        self.recovered = False
        #: The latest prompt of the current phase.
        self.prompt: Prompt | None = None
        #: The wall clock (epoch seconds) as last told, for the deck's memory (D3).
        self.wall: float | None = None
        #: Whether the system clock is synchronised, as last told (None: not known), and
        #: whether it was told at all.
        self.clock_synchronized: bool | None = None
        self.clock_read = False
        #: A round was opened since the start: a clock that must be synchronised before
        #: the first round no longer holds one up.
        self.first_round_opened = False
        self._round_end: RoundEnded | None = None
        self._facts: TableFacts | None = None

    @property
    def phase(self) -> Phase:
        return phase_of(self.state)

    def round_record(self) -> RoundRecord:
        if self.round is None:
            raise RuntimeError(f"no round in phase {self.phase}")
        return self.round

    def origin(self) -> Phase:
        """The phase a fault happened in: the current one, or the one before the fault."""
        if self.phase is Phase.FAULT and self.fault.origin is not None:
            return self.fault.origin
        return self.phase

    def emit(self, decision: Decision) -> None:
        if isinstance(decision, Prompt):
            self.prompt = decision
        self.out.append(decision)

    def take_decisions(self) -> list[Decision]:
        """The decisions of the input just handled, the table's facts among them when the
        input changed them (F3, F4); the next input starts afresh."""
        facts = self.facts()
        if facts != self._facts:
            self._facts = facts
            self.out.append(facts)
        decisions, self.out = self.out, []
        return decisions

    def facts(self) -> TableFacts:
        rnd = self.round
        keep_round = rnd is not None and not rnd.closed and rnd.outcome in (None, Outcome.DEALT)
        return TableFacts(
            phase=self.phase.value,
            faults=tuple(self.fault.codes),
            fault_origin=self.fault.origin.value if self.fault.origin is not None else None,
            deck_must_change=self.deck.must_change,
            deck_waiting=self.deck.waiting,
            deck_spent=self.deck.spent,
            shoe=self.condition.shoe,
            round_id=rnd.round_id if rnd is not None and keep_round else None,
        )

    # --- machine-wide callbacks -------------------------------------------------------

    def take_input(self, event: EventData) -> None:
        """Before any transition of an input: note what it reports (see
        :data:`~.machine.INTAKE`), whatever the phase does with it."""
        name = INTAKE.get(event.event.name)
        if name is not None:
            getattr(self, name)(event)

    def record_state_change(self, event: EventData) -> None:
        transition = event.transition
        assert transition is not None
        old = phase_of(transition.source)
        self.prompt = None
        self.emit(StateChanged(old.value, self.phase.value, event.event.name))

    def sync_gate(self, event: EventData) -> None:
        """Set the gate this phase requires; on a fault, lock it even if it seems locked."""
        mode, limit = gate_wanted(self.phase, self.round, self.rules)
        if mode is not GateMode.LOCKED:
            refusal = gate_refusal(self.condition, self.phase)
            if refusal is not None:
                raise GateRefused(refusal)
        if (mode, limit) != (self.gate, self.gate_limit) or self.phase is Phase.FAULT:
            self.gate, self.gate_limit = mode, limit
            self.emit(GateCommand(mode, limit))

    def advance_gate(self, event: EventData) -> None:
        """After a card is journaled, let the next one out (F5)."""
        if self.phase in (Phase.DEALING, Phase.STUB_COUNT):
            self.sync_gate(event)

    def resend_gate(self, event: EventData) -> None:
        """The shoe no longer holds its gate shut: set it again as it stands."""
        self.emit(GateCommand(self.gate, self.gate_limit))

    def route_exception(self, event: EventData) -> None:
        """Fail safe: any exception in a callback becomes a fault that locks the gate."""
        error = event.error
        if isinstance(error, GateRefused):
            irregularity = error.irregularity
        else:
            if self.reraise_bugs and isinstance(error, PROGRAMMING_ERRORS):
                raise error
            log.error("procedure callback failed in %s", self.phase, exc_info=error)
            irregularity = Irregularity(
                FaultCode.INTERNAL,
                f"the controller failed on {event.event.name}: {type(error).__name__}: {error}",
                "F1",
            )
        self.raise_fault(irregularity)
        if self.phase not in (Phase.FAULT, Phase.STOPPED):
            self.trigger("internal_fault")

    def finish_step(self, event: EventData) -> None:
        """At the end of every step: the round's outcome, once."""
        if self._round_end is not None:
            self.emit(self._round_end)
            self._round_end = None

    # --- outcomes and faults ----------------------------------------------------------

    def end_round(self, outcome: Outcome, reason: str, rule: str) -> None:
        """The round's outcome, emitted once the step is over (:meth:`finish_step`)."""
        rnd = self.round_record()
        rnd.outcome = outcome
        if outcome in (Outcome.VOID_FAULT, Outcome.VOID_MISDEAL) and rnd.gate_opened:
            self.deck.spend()
        self._round_end = RoundEnded(
            round_id=rnd.round_id,
            outcome=outcome,
            reason=reason,
            rule=rule,
            start=rnd.start,
            cards_per_position=rnd.cards_per_position(),
            wagered=tuple(sorted(rnd.wagered)),
            collected_unseen=rnd.collected_unseen(outcome),
        )

    def round_at_stake(self) -> bool:
        """The round is open and still has cards in the shoe."""
        rnd = self.round
        return rnd is not None and rnd.outcome is None and self.origin() in IN_SHOE

    def raise_fault(self, irregularity: Irregularity, *, voids: bool = True) -> None:
        """Record a fault; it voids the round when the round still has cards in the shoe."""
        voiding = voids and self.round_at_stake()
        self.emit(FaultRaised(irregularity.code, irregularity.reason, irregularity.rule, voiding))
        self.fault.raised(irregularity.code)
        if irregularity.code in (FaultCode.COMPOSITION, FaultCode.DECK_RETURNED):
            self.deck.condemn()
        if voiding:
            self.fault.void()
            self.end_round(Outcome.VOID_FAULT, irregularity.reason, irregularity.rule)

    def deck_broken(self) -> None:
        """Cards left the shoe where none could: the deck in it is no longer the shuffled
        deck of 53 a round needs, and it comes out. A deck waiting for its shuffle check
        must not open a round: the shoe's draw index would be ahead of the deal's first
        gate limit, and the gate would never open (F5)."""
        self.deck.broken()

    def ask(self, prompt: Prompt) -> None:
        self.emit(prompt)

    def display(self) -> str:
        """What the shoe's display shows: what the hands at the shoe must do, else the
        phase. Never a card (E1)."""
        if self.prompt is not None and self.prompt.need == "remove_deck":
            return prompts.DISPLAY_REMOVE_DECK
        rnd = self.round
        if (
            self.phase is Phase.STUB_COUNT
            and rnd is not None
            and rnd.last_draw >= self.rules.deck_size
        ):
            # The gate locked at the deck's last card: a shoe that does not report itself
            # empty still holds cards, which the croupier takes out.
            return prompts.DISPLAY_TAKE_OUT_STUB
        return self.phase.value.replace("_", " ").upper()[:32]

    # --- the deck's memory (D2, D3) ----------------------------------------------------

    def note_time(self, wall: float | None) -> None:
        """The wall clock now: decks removed longer ago than DECK_MEMORY are forgotten."""
        if wall is None:
            return
        self.wall = wall
        self.deck.remember_only(
            [deck for deck in self.deck.removed if deck.at is None or wall - deck.at <= DECK_MEMORY]
        )

    def returned_deck(self, defect: Defect) -> RemovedDeck | None:
        """The deck removed from this table recently whose defect ``defect`` matches."""
        if not defect:
            return None
        for deck in self.deck.removed:
            recent = deck.at is None or self.wall is None or self.wall - deck.at <= DECK_MEMORY
            if recent and deck.defect.matches(defect):
                return deck
        return None

    def remember_defect(self, defect: Defect, returned: RemovedDeck | None = None) -> None:
        """A deck with ``defect`` leaves the table: its defect is recorded (restricted) and
        remembered, so that it is recognised if it comes back."""
        if not defect:
            return
        self.emit(
            DeckDefect(
                tuple(sorted(defect.missing, key=str)),
                tuple(sorted(defect.duplicated, key=str)),
                tuple(sorted(defect.foreign, key=str)),
                returned.at if returned is not None else None,
            )
        )
        self.deck.remember(RemovedDeck(defect, self.wall))

    def ask_attendant(self, event: EventData) -> None:
        codes = tuple(self.fault.codes)
        if not self.condition.link_up and self.round_at_stake():
            # Clearing now would void a round whose shoe may still send what it holds (F2):
            # the attendant is asked once the shoe is back.
            self.ask(prompts.wait_shoe(codes))
            return
        jammed = self.condition.jammed and self.condition.link_up
        self.ask(prompts.attendant_clear(codes, jammed=jammed))
