"""The machine's model: the guards and side effects named in :mod:`.machine`'s table.

Callbacks receive the transitions event; an input's data travels as ``event.kwargs["data"]``.
Side effects only append decisions to :attr:`ProcedureModel.out`; nothing here does I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar

from firmware_protocol import Card, GateMode
from shoe_controller.procedure.decisions import (
    AuditCard,
    BetsClosed,
    CardAssigned,
    Decision,
    DeterminationRecorded,
    FaultCleared,
    FaultCode,
    FaultRaised,
    GateCommand,
    Notice,
    NoticeCode,
    Outcome,
    Prompt,
    RoundClosed,
    RoundEnded,
    RoundOpened,
    SecurityEvent,
    StartPositionSet,
    StateChanged,
    StubCounted,
    TableFacts,
    WagersEntered,
    WagerSettled,
)
from shoe_controller.procedure.machine import BETWEEN, IN_SHOE, LIVE, ON_TABLE, PRE_DEAL, Phase
from shoe_controller.procedure.record import Irregularity, RoundRecord
from shoe_controller.procedure.start import StartMethod, StartPosition
from shoe_controller.procedure.table import TableRules

if TYPE_CHECKING:
    from transitions import EventData

_log = logging.getLogger(__name__)
_D = TypeVar("_D")

#: A shoe as the procedure tells shoes apart: (model, serial number).
ShoeId = tuple[str, str]


# --- the data each input carries through the machine --------------------------------


@dataclass(frozen=True, slots=True)
class Draw:
    draw_index: int
    card: Card
    gate: GateMode


@dataclass(frozen=True, slots=True)
class Wagers:
    wagered: frozenset[int]


@dataclass(frozen=True, slots=True)
class Start:
    start: StartPosition


@dataclass(frozen=True, slots=True)
class DoubleDraw:
    draw_index: int


@dataclass(frozen=True, slots=True)
class JamEnd:
    card_left: bool


@dataclass(frozen=True, slots=True)
class StubCount:
    count: int
    source: Literal["shoe", "croupier"]


@dataclass(frozen=True, slots=True)
class ShortDeck:
    drawn: int


@dataclass(frozen=True, slots=True)
class Determination:
    misdealt: bool


@dataclass(frozen=True, slots=True)
class Reason:
    text: str


@dataclass(frozen=True, slots=True)
class ShoeFault:
    code: int
    text: str


@dataclass(frozen=True, slots=True)
class Clearance:
    by: str


@dataclass(frozen=True, slots=True)
class Restart:
    """At start-up: the faults nobody cleared, where they happened, and whether the
    controller stopped without being asked to (F3)."""

    crashed: bool
    faults: tuple[FaultCode, ...]
    origin: Phase | None


class GateRefused(Exception):
    """The gate was about to open while the shoe may not deal; becomes a fault."""

    def __init__(self, irregularity: Irregularity) -> None:
        super().__init__(irregularity.reason)
        self.irregularity = irregularity


def _data(event: EventData, kind: type[_D]) -> _D:
    value = event.kwargs.get("data")
    if not isinstance(value, kind):
        raise TypeError(f"{event.event.name}: expected {kind.__name__}, got {value!r}")
    return value


def _phase(state: object) -> Phase:
    """A phase from what transitions hands callbacks: the enum, or its member name."""
    if isinstance(state, Phase):
        return state
    return Phase[str(state)]


#: Errors that are bugs in the controller, not irregularities at the table: with
#: :attr:`ProcedureModel.reraise_bugs` set (the test suite sets it), they propagate.
PROGRAMMING_ERRORS = (AttributeError, TypeError, NameError, KeyError, IndexError, AssertionError)

RESTART_REASON = "the controller stopped while the round was open (Section 10.13)"


class ProcedureModel:
    """The model the machine drives; :func:`~.machine.build_machine` binds ``state`` and
    one method per trigger, fired through :meth:`trigger`."""

    #: Let programming errors in callbacks propagate instead of faulting the table.
    reraise_bugs: ClassVar[bool] = False

    state: Phase
    trigger: Callable[..., bool]

    def __init__(self, rules: TableRules, round_ids: Callable[[], str]) -> None:
        self.rules = rules
        self.round_ids = round_ids
        self.out: list[Decision] = []
        # What the shoe reported of itself; the facade keeps these up to date.
        self.approved = False
        self.link_up = False
        self.jammed = False
        self.door_open = False
        #: The shoe the table deals with, once one was approved.
        self.shoe: ShoeId | None = None
        #: D2/D3: the deck left the table; the next deck must be a different one.
        self.deck_must_change = False
        #: A loaded deck no round has used is in the shoe (A2).
        self.deck_waiting = False
        #: The deck of a void round is still in the shoe: it must come out first.
        self.deck_spent = False
        self.gate = GateMode.LOCKED
        #: The limit that goes with ``gate``: the draw index at which the shoe locks it.
        self.gate_limit = 0
        self.round: RoundRecord | None = None
        #: The wagers entered for the open round, or None when none were entered (A3).
        self.wagers_entered: frozenset[int] | None = None
        self.proposal: Outcome | None = None
        self.fault_origin: Phase | None = None
        self.fault_codes: list[FaultCode] = []
        self.voided_in_fault = False
        #: Where a fault restored at start-up happened (F3).
        self.restored_origin: Phase | None = None
        self._round_end: RoundEnded | None = None
        self._facts: TableFacts | None = None

    @property
    def phase(self) -> Phase:
        return _phase(self.state)

    def _round(self) -> RoundRecord:
        if self.round is None:
            raise RuntimeError(f"no round in phase {self.phase}")
        return self.round

    def _origin(self) -> Phase:
        """The phase a fault happened in: the current one, or the one before the fault."""
        if self.phase is Phase.FAULT and self.fault_origin is not None:
            return self.fault_origin
        return self.phase

    def _emit(self, decision: Decision) -> None:
        self.out.append(decision)

    # --- machine-wide callbacks -------------------------------------------------------

    def record_state_change(self, event: EventData) -> None:
        transition = event.transition
        assert transition is not None
        old = _phase(transition.source)
        self._emit(StateChanged(old.value, self.phase.value, event.event.name))

    def sync_gate(self, event: EventData) -> None:
        """Set the gate this phase requires; on a fault, lock it even if it seems locked."""
        mode, limit = self._gate_wanted()
        if mode is not GateMode.LOCKED:
            refusal = self.gate_refusal()
            if refusal is not None:
                raise GateRefused(refusal)
        if (mode, limit) != (self.gate, self.gate_limit) or self.phase is Phase.FAULT:
            self.gate, self.gate_limit = mode, limit
            self._emit(GateCommand(mode, limit))

    def _gate_wanted(self) -> tuple[GateMode, int]:
        """The gate the phase needs. Its limit is a draw index at most the gate window
        ahead of the last card journaled (F5), so that sending it again never lets more
        out and no card can leave after a fault the controller has seen."""
        phase = self.phase
        if phase not in (Phase.DEALING, Phase.STUB_COUNT):
            return GateMode.LOCKED, 0
        rnd = self._round()
        limit = rnd.last_draw + self.rules.gate_window
        if phase is Phase.DEALING:
            return GateMode.DEAL, min(limit, self.rules.deal_size)
        if rnd.last_draw >= self.rules.deck_size:
            # The deck's last card is out. A limit is a draw index of one deck: a command
            # that reached the shoe after the next deck went in would let that deck out.
            return GateMode.LOCKED, 0
        return GateMode.STUB, min(limit, self.rules.deck_size)

    def advance_gate(self, event: EventData) -> None:
        """After a card is journaled, let the next one out (F5)."""
        if self.phase in (Phase.DEALING, Phase.STUB_COUNT):
            self.sync_gate(event)

    def gate_refusal(self) -> Irregularity | None:
        """Why the gate may not open now (A1, F1, F2), or None."""
        if not self.approved:
            return Irregularity(
                FaultCode.SHOE_NOT_APPROVED, "refused to open the gate of an unapproved shoe", "A1"
            )
        if not self.link_up:
            return Irregularity(
                FaultCode.LINK_LOST, "refused to open the gate without a link to the shoe", "F2"
            )
        if self.jammed:
            return Irregularity(FaultCode.JAM, "refused to open the gate of a jammed shoe", "C4")
        if self.door_open and self.phase is Phase.DEALING:
            return Irregularity(
                FaultCode.DOOR_OPENED, "refused to deal with the shoe's door open", "C4"
            )
        return None

    def route_exception(self, event: EventData) -> None:
        """Fail safe: any exception in a callback becomes a fault that locks the gate."""
        error = event.error
        if isinstance(error, GateRefused):
            irregularity = error.irregularity
        else:
            if self.reraise_bugs and isinstance(error, PROGRAMMING_ERRORS):
                raise error
            _log.error("procedure callback failed in %s", self.phase, exc_info=error)
            irregularity = Irregularity(
                FaultCode.INTERNAL,
                f"the controller failed on {event.event.name}: {type(error).__name__}: {error}",
                "F1",
            )
        self._raise(irregularity)
        if self.phase not in (Phase.FAULT, Phase.STOPPED):
            self.trigger("internal_fault")

    def finish_step(self, event: EventData) -> None:
        """At the end of every step: the round's outcome, once."""
        if self._round_end is not None:
            self._emit(self._round_end)
            self._round_end = None

    def flush_facts(self) -> None:
        """Journal the table's facts when an input changed them (F3, F4)."""
        facts = self.facts()
        if facts != self._facts:
            self._facts = facts
            self._emit(facts)

    def facts(self) -> TableFacts:
        rnd = self.round
        keep_round = rnd is not None and not rnd.closed and rnd.outcome in (None, Outcome.DEALT)
        return TableFacts(
            phase=self.phase.value,
            faults=tuple(self.fault_codes),
            fault_origin=self.fault_origin.value if self.fault_origin is not None else None,
            deck_must_change=self.deck_must_change,
            deck_waiting=self.deck_waiting,
            deck_spent=self.deck_spent,
            shoe=self.shoe,
            round_id=rnd.round_id if rnd is not None and keep_round else None,
        )

    # --- outcomes and faults ----------------------------------------------------------

    def _end(self, outcome: Outcome, reason: str, rule: str) -> None:
        rnd = self._round()
        rnd.outcome = outcome
        if outcome in (Outcome.VOID_FAULT, Outcome.VOID_MISDEAL) and rnd.gate_opened:
            self.deck_spent = True
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

    def _raise(self, irregularity: Irregularity, *, voids: bool = True) -> None:
        """Record a fault; it voids the round when the round still has cards in the shoe."""
        rnd = self.round
        voiding = voids and rnd is not None and rnd.outcome is None and self._origin() in IN_SHOE
        self._emit(FaultRaised(irregularity.code, irregularity.reason, irregularity.rule, voiding))
        self.fault_codes.append(irregularity.code)
        if irregularity.code is FaultCode.COMPOSITION:
            self.deck_must_change = True
        if voiding:
            self.voided_in_fault = True
            self._end(Outcome.VOID_FAULT, irregularity.reason, irregularity.rule)

    def enter_fault(self, event: EventData) -> None:
        transition = event.transition
        assert transition is not None
        origin = self.restored_origin or _phase(transition.source)
        self.fault_origin = origin
        self.restored_origin = None

    def leave_fault(self, event: EventData) -> None:
        if event.event.name == "stop":
            return  # the faults stand across the stop (F3)
        self.fault_origin = None
        self.fault_codes = []
        self.voided_in_fault = False

    def fault_round_in_shoe(self, event: EventData) -> bool:
        rnd = self.round
        return self.fault_origin in IN_SHOE and rnd is not None and rnd.outcome is None

    def fault_round_live(self, event: EventData) -> bool:
        rnd = self.round
        return self.fault_origin in LIVE and rnd is not None and rnd.outcome is None

    # --- prompts ----------------------------------------------------------------------

    def _ask(self, need: str, message: str, rule: str = "") -> None:
        self._emit(Prompt(need, message, rule))

    def ask_shuffle(self, event: EventData) -> None:
        self._ask(
            "confirm_shuffle",
            "A deck is in the shoe: confirm that it was shuffled and cut (Section 10.4) "
            "before bets open.",
            "A2",
        )

    def ask_wagers(self, event: EventData) -> None:
        self._ask(
            "no_more_bets",
            "Bets are open: enter the positions that hold a wager, then announce no more bets.",
            "A3",
        )

    def ask_start(self, event: EventData) -> None:
        self._ask("start_position", "Set the starting position: three dice or the RNG.", "B1")

    def ask_wager_settled(self, event: EventData) -> None:
        self._ask("wager_settled", "Settle the dice wagers before the first card.", "B2")

    def ask_close(self, event: EventData) -> None:
        self._ask("close_round", "Hands are in play: close the round after settlement.", "E2")

    def ask_stub_count(self, event: EventData) -> None:
        rnd = self._round()
        if rnd.shoe_stub_count is None:
            what = "The shoe could not count the stub"
        else:
            what = (
                f"The shoe counted {rnd.shoe_stub_count} cards in the stub, not "
                f"{self.rules.stub_size}"
            )
        self._ask("stub_count", f"{what}: count the stub by hand and enter the count.", "D2")

    def ask_attendant(self, event: EventData) -> None:
        codes = ", ".join(self.fault_codes) or "fault"
        rnd = self.round
        at_stake = rnd is not None and rnd.outcome is None and self._origin() in IN_SHOE
        if not self.link_up and at_stake:
            # Clearing now would void a round whose shoe may still send what it holds (F2):
            # the attendant is asked once the shoe is back.
            self._ask(
                "wait_shoe",
                f"Dealing is blocked ({codes}) and the link to the shoe is down: reconnect "
                "the shoe; an attendant clears once it is back (clearing before voids the "
                "round).",
                "F2",
            )
            return
        self._ask(
            "attendant_clear",
            f"Dealing is blocked: an attendant must clear the fault ({codes}).",
            "F1",
        )

    def ask_new_deck(self, event: EventData) -> None:
        self._ask(
            "new_deck",
            "A deck was loaded: confirm that it is a different deck, shuffled and cut.",
            "D2",
        )

    # --- A1: the shoe -----------------------------------------------------------------

    def forget_approval(self, event: EventData) -> None:
        self.approved = False

    def fault_not_approved(self, event: EventData) -> None:
        reason = _data(event, Reason).text
        self._raise(
            Irregularity(FaultCode.SHOE_NOT_APPROVED, f"the shoe is not approved: {reason}", "A1")
        )

    def fault_shoe_changed(self, event: EventData) -> None:
        reason = _data(event, Reason).text
        self._raise(
            Irregularity(
                FaultCode.SHOE_CHANGED,
                f"another shoe answered while cards were at stake: {reason}",
                "F2",
            )
        )

    # --- A2: the deck -----------------------------------------------------------------

    def must_change_deck(self, event: EventData) -> bool:
        return self.deck_must_change

    def deck_is_spent(self, event: EventData) -> bool:
        return self.deck_spent

    def deck_is_waiting(self, event: EventData) -> bool:
        return self.deck_waiting

    def next_deck(self, event: EventData) -> None:
        """Between rounds, a deck already waiting in the shoe goes to its shuffle check;
        after a void the croupier is asked to take the deck out."""
        if self.deck_waiting:
            if self.approved and self.link_up:
                self.trigger("deck_ready")
            else:
                # A deck the journal remembers may have left the shoe while nobody
                # listened: it opens a round only once its shoe is heard and approved (A1).
                self.trigger("await_shoe")
            return
        phase = self.phase
        if phase in (Phase.VOID_MISDEAL, Phase.VOID_FAULT):
            rnd = self.round
            if rnd is not None and rnd.outcome in (Outcome.VOID_FAULT, Outcome.VOID_MISDEAL):
                what = f"Round {rnd.round_id} is void: collect every card"
            else:
                what = "A card left the shoe outside a round: collect it"
            self._ask(
                "remove_deck",
                f"{what} to the discard rack unseen, take the deck out of the shoe and load "
                "a shuffled deck.",
                "F1" if phase is Phase.VOID_FAULT else "D2",
            )

    def require_new_deck(self, event: EventData) -> None:
        self.deck_must_change = True
        if self.deck_waiting:
            self.ask_new_deck(event)
        else:
            self._ask(
                "remove_deck",
                "The deck must leave the table: take it out of the shoe and load a different deck.",
                "D2",
            )

    def open_round(self, event: EventData) -> None:
        round_id = self.round_ids()
        self.round = RoundRecord(round_id, self.rules)
        self.deck_must_change = False
        self.deck_waiting = False
        self.deck_spent = False
        self.wagers_entered = None
        self.proposal = None
        self._emit(RoundOpened(round_id))

    def fault_unexpected_deck(self, event: EventData) -> None:
        self._raise(
            Irregularity(
                FaultCode.UNEXPECTED_DECK, "the shoe reports a deck loaded during a round", "F1"
            )
        )

    def fault_deck_removed(self, event: EventData) -> None:
        self._raise(
            Irregularity(
                FaultCode.DECK_REMOVED, "the deck was taken out of the shoe during the round", "F1"
            )
        )

    def note_stub_taken_out(self, event: EventData) -> None:
        self._round().note_stub("the stub was taken out of the shoe without passing its reader")

    # --- A3, B1, B2 -------------------------------------------------------------------

    def record_wagers(self, event: EventData) -> None:
        wagered = _data(event, Wagers).wagered
        self.wagers_entered = wagered
        self._emit(WagersEntered(tuple(sorted(wagered))))

    def close_bets(self, event: EventData) -> None:
        wagered = _data(event, Wagers).wagered
        self._round().wagered = wagered
        self._emit(BetsClosed(tuple(sorted(wagered))))

    def dice_wager_due(self, event: EventData) -> bool:
        """The dice wager is settled before the first card, and only when dice set the
        start: with an RNG there are no dice to settle it by (B2)."""
        return self.rules.dice_wager and _data(event, Start).start.method is StartMethod.DICE

    def record_start(self, event: EventData) -> None:
        start = _data(event, Start).start
        self._round().set_start(start)
        self._emit(StartPositionSet(start))

    def settle_wager(self, event: EventData) -> None:
        self._emit(WagerSettled())

    def mark_gate_opened(self, event: EventData) -> None:
        self._round().gate_opened = True

    # --- C1-C3, D3: cards -------------------------------------------------------------

    def deal_card_irregular(self, event: EventData) -> bool:
        draw = _data(event, Draw)
        return self._round().deal_irregularity(draw.draw_index, draw.card, draw.gate) is not None

    def deal_card_is_last(self, event: EventData) -> bool:
        return self._round().remaining == 1

    def assign_card(self, event: EventData) -> None:
        draw = _data(event, Draw)
        rnd = self._round()
        position = rnd.assign(draw.card)
        rnd.saw_draw(draw.draw_index)
        self._emit(CardAssigned(draw.draw_index, position, not draw.card.is_unreadable))
        self._emit(AuditCard(draw.draw_index, position, draw.card))

    def fault_deal_card(self, event: EventData) -> None:
        draw = _data(event, Draw)
        irregularity = self._round().deal_irregularity(draw.draw_index, draw.card, draw.gate)
        assert irregularity is not None
        self._card_fault(draw, irregularity)

    def card_in_stub_mode(self, event: EventData) -> bool:
        return _data(event, Draw).gate is GateMode.STUB

    def stub_card_irregular(self, event: EventData) -> bool:
        draw = _data(event, Draw)
        return self._round().composition_irregularity(draw.draw_index, draw.card) is not None

    def record_stub_card(self, event: EventData) -> None:
        draw = _data(event, Draw)
        rnd = self._round()
        rnd.record_stub_card(draw.draw_index, draw.card)
        rnd.saw_draw(draw.draw_index)
        self._emit(AuditCard(draw.draw_index, "stub", draw.card))

    def fault_stub_card(self, event: EventData) -> None:
        draw = _data(event, Draw)
        irregularity = self._round().composition_irregularity(draw.draw_index, draw.card)
        assert irregularity is not None
        self._card_fault(draw, irregularity)

    def fault_unexpected_card(self, event: EventData) -> None:
        draw = _data(event, Draw)
        if self._origin() is Phase.STUB_COUNT and draw.gate is GateMode.DEAL:
            irregularity = Irregularity(
                FaultCode.EXTRA_CARD,
                f"the card of draw {draw.draw_index} left the shoe in deal mode after the "
                "last card of the deal",
                "C2",
            )
        else:
            irregularity = self._unexpected(f"the card of draw {draw.draw_index} left the shoe")
        self._card_fault(draw, irregularity)

    def _deck_broken(self) -> None:
        """Cards left the shoe where none could: the deck in it is no longer the shuffled
        deck of 53 a round needs, and it comes out. A deck waiting for its shuffle check
        must not open a round: the shoe's draw index would be ahead of the deal's first
        gate limit, and the gate would never open (F5)."""
        self.deck_spent = True
        self.deck_waiting = False

    def _unexpected(self, what: str) -> Irregularity:
        """A card where none may leave the shoe: before the deal (A3), otherwise F1."""
        origin = self._origin()
        if origin in PRE_DEAL:
            return Irregularity(FaultCode.UNEXPECTED_CARD, f"{what} before the deal began", "A3")
        if origin is Phase.DEALING:
            return Irregularity(
                FaultCode.UNEXPECTED_CARD, f"{what} while a fault blocked the deal", "F1"
            )
        return Irregularity(FaultCode.UNEXPECTED_CARD, f"{what} while no card was expected", "F1")

    def _card_fault(self, draw: Draw, irregularity: Irregularity) -> None:
        rnd = self.round
        if rnd is not None:
            rnd.saw_draw(draw.draw_index)
        self._deck_broken()
        self._emit(AuditCard(draw.draw_index, "unassigned", draw.card))
        if irregularity.code is FaultCode.COMPOSITION and rnd is not None:
            self._emit(SecurityEvent(draw.draw_index, rnd.composition_detail(draw.card), draw.card))
        self._raise(irregularity)

    # --- C4: double card, jam, door ---------------------------------------------------

    def end_on_double_card(self, event: EventData) -> None:
        index = _data(event, DoubleDraw).draw_index
        self._round().saw_draw(index + 1)
        self._end(
            Outcome.VOID_MISDEAL,
            f"two cards left the shoe together at draw {index}: a misdeal (Section 10.13)",
            "C4",
        )

    def note_stub_double(self, event: EventData) -> None:
        index = _data(event, DoubleDraw).draw_index
        rnd = self._round()
        rnd.saw_draw(index + 1)
        rnd.note_stub(f"two stub cards passed the reader together at draw {index}")

    def fault_unexpected_double(self, event: EventData) -> None:
        index = _data(event, DoubleDraw).draw_index
        if self.round is not None:
            self.round.saw_draw(index + 1)
        self._deck_broken()
        self._raise(self._unexpected(f"two cards left the shoe together at draw {index}"))

    def fault_jam(self, event: EventData) -> None:
        if self.round is not None and self._origin() in IN_SHOE:
            self.round.jams += 1
        self._raise(Irregularity(FaultCode.JAM, "the shoe reports a jam", "C4"), voids=False)

    def fault_reported_by_shoe(self, event: EventData) -> None:
        fault = _data(event, ShoeFault)
        self._raise(
            Irregularity(
                FaultCode.SHOE_FAULT, f"the shoe reports fault {fault.code}: {fault.text}", "F1"
            ),
            voids=False,
        )

    def card_left(self, event: EventData) -> bool:
        return _data(event, JamEnd).card_left

    def card_left_in_jam(self, event: EventData) -> None:
        origin = self._origin()
        if origin is Phase.STUB_COUNT:
            self._round().note_stub("a stub card left the shoe unread during a jam")
        elif origin is Phase.DEALING:
            self._raise(
                Irregularity(
                    FaultCode.UNREAD_CARD,
                    "a card left the shoe unread during a jam (Section 10.13)",
                    "C3",
                )
            )
        else:
            self._deck_broken()
            self._raise(self._unexpected("a card left the shoe during a jam"))

    def fault_door(self, event: EventData) -> None:
        self._raise(
            Irregularity(FaultCode.DOOR_OPENED, "the shoe's door was opened during the round", "C4")
        )

    # --- D1, D2: the stub -------------------------------------------------------------

    def end_on_short_deck(self, event: EventData) -> None:
        drawn = _data(event, ShortDeck).drawn
        self._end(
            Outcome.VOID_DECK_REMOVED,
            f"the shoe ran out after {drawn} cards: the deck is short and leaves the table",
            "D2",
        )

    def fault_shoe_empty(self, event: EventData) -> None:
        self._raise(
            Irregularity(
                FaultCode.SHOE_EMPTY, "the shoe reports no cards left before the deal", "A2"
            )
        )

    def stub_complete(self, event: EventData) -> bool:
        return _data(event, StubCount).count == self.rules.stub_size

    def count_stub(self, event: EventData) -> None:
        """The shoe's count decides only when it is 4; otherwise the croupier counts by
        hand, and that count decides (D1, D2). A disagreement is a reader fault for
        maintenance, journaled as a notice."""
        stub = _data(event, StubCount)
        rnd = self._round()
        expected = self.rules.stub_size
        if stub.source == "shoe":
            rnd.shoe_stub_count = stub.count
        elif rnd.shoe_stub_count is not None and rnd.shoe_stub_count != stub.count:
            self._emit(
                Notice(
                    NoticeCode.STUB_COUNT_MISMATCH,
                    f"the shoe counted {rnd.shoe_stub_count} stub cards, the croupier "
                    f"{stub.count}: the shoe's reader needs maintenance",
                    "D2",
                )
            )
        rnd.stub_count = stub.count
        self._emit(StubCounted(stub.count, expected, stub.source))
        if stub.count == expected:
            self._end(
                Outcome.DEALT,
                f"the stub holds {stub.count} cards: the hands are in play",
                "D1",
            )

    def ask_misdeal(self, event: EventData) -> None:
        rnd = self._round()
        count = rnd.stub_count
        evidence = rnd.evidence(count)
        self.proposal = Outcome.VOID_DECK_REMOVED if evidence.conclusive else None
        if self.proposal is None:
            finding = "the record cannot tell whether every position got its cards"
        else:
            finding = (
                "the record shows every card read and every position complete, so not a "
                "misdeal: the deck leaves the table"
            )
        self._emit(
            Prompt(
                need="misdeal_determination",
                message=(
                    f"The stub holds {count} cards, not {self.rules.stub_size}: were the "
                    f"cards misdealt? ({finding})"
                ),
                rule="D2",
                proposal=self.proposal,
                evidence=evidence,
            )
        )

    def determined_misdealt(self, event: EventData) -> bool:
        return _data(event, Determination).misdealt

    def record_determination(self, event: EventData) -> None:
        misdealt = _data(event, Determination).misdealt
        count = self._round().stub_count
        self._emit(DeterminationRecorded(misdealt, self.proposal))
        if misdealt:
            self._end(
                Outcome.VOID_MISDEAL,
                f"the croupier determined a misdeal (stub of {count}): all hands void "
                "(Section 10.13)",
                "D2",
            )
        else:
            self._end(
                Outcome.VOID_DECK_REMOVED,
                f"not a misdeal but the stub holds {count}, not {self.rules.stub_size}: all "
                "hands void and the deck leaves the table",
                "D2",
            )

    # --- E2 ---------------------------------------------------------------------------

    def publish_round_record(self, event: EventData) -> None:
        rnd = self._round()
        assert rnd.start is not None
        rnd.closed = True
        self._emit(
            RoundClosed(rnd.round_id, rnd.start, tuple(sorted(rnd.wagered)), rnd.closed_hands())
        )

    # --- F1-F5 ------------------------------------------------------------------------

    def fault_link_lost(self, event: EventData) -> None:
        self._raise(
            Irregularity(
                FaultCode.LINK_LOST,
                f"the link to the shoe was lost for longer than {_data(event, Reason).text}",
                "F2",
            ),
            voids=False,
        )

    def fault_events_lost(self, event: EventData) -> None:
        self._raise(
            Irregularity(
                FaultCode.EVENTS_LOST,
                f"events of the shoe were lost: {_data(event, Reason).text}",
                "F2",
            )
        )

    def note_events_lost(self, event: EventData) -> None:
        self.deck_waiting = False
        self._emit(
            Notice(
                NoticeCode.EVENTS_LOST,
                f"events of the shoe were lost while no round was in it "
                f"({_data(event, Reason).text}): the deck in the shoe, if any, must be "
                "taken out and loaded again",
                "F2",
            )
        )

    def fault_gate_refused(self, event: EventData) -> None:
        self._raise(
            Irregularity(
                FaultCode.GATE_REFUSED,
                f"the shoe did not take the gate command: {_data(event, Reason).text}",
                "F1",
            ),
            voids=False,
        )

    def fault_restart(self, event: EventData) -> None:
        restart = _data(event, Restart)
        self.fault_codes.extend(restart.faults)
        self.restored_origin = restart.origin or Phase.NO_SHOE
        rnd = self.round
        if restart.crashed:
            what = f"during round {rnd.round_id}" if rnd is not None else "between rounds"
            reason = f"the controller restarted {what}"
            if rnd is not None and rnd.outcome is None:
                reason = f"the controller stopped while round {rnd.round_id} was open"
            irregularity = Irregularity(
                FaultCode.CONTROLLER_RESTARTED, f"{reason} (Section 10.13)", "F3"
            )
            voiding = rnd is not None and rnd.outcome is None
            self._emit(FaultRaised(irregularity.code, irregularity.reason, "F3", voiding))
            self.fault_codes.append(irregularity.code)
            if voiding:
                self.voided_in_fault = True
                self._end(Outcome.VOID_FAULT, irregularity.reason, "F3")

    def clear_target(self) -> Phase:
        """Where clearing the current fault leads: back to the hands on the table, back to
        the deal when no card was lost, else between rounds (F1, F2, F3)."""
        origin = self.fault_origin
        assert origin is not None
        rnd = self.round
        if origin in ON_TABLE and rnd is not None and rnd.outcome in (None, Outcome.DEALT):
            return origin
        if not self.approved or not self.link_up:
            return Phase.NO_SHOE
        round_alive = rnd is not None and rnd.outcome is None and not self.voided_in_fault
        if origin in IN_SHOE and round_alive:
            return origin
        if self.deck_must_change:
            return Phase.DECK_REMOVED
        if origin in IN_SHOE or origin in ON_TABLE:
            return Phase.VOID_FAULT
        if origin in BETWEEN:
            return origin
        if origin is Phase.SHUFFLE_CHECK and self.deck_waiting:
            return Phase.SHUFFLE_CHECK
        # No shoe or no phase to go back to (a start-up, a deck that came out meanwhile):
        # between rounds, with the void round's deck still to take out if there is one.
        return Phase.VOID_FAULT if self.deck_spent else Phase.IDLE

    def clear_fault(self, event: EventData) -> None:
        by = _data(event, Clearance).by
        self._emit(FaultCleared(by, tuple(self.fault_codes)))
        rnd = self.round
        in_shoe = self.fault_origin in IN_SHOE and rnd is not None and rnd.outcome is None
        if in_shoe and not self.link_up:
            self._end(
                Outcome.VOID_FAULT,
                "the link to the shoe did not return before the fault was cleared",
                "F2",
            )

    def wind_up(self, event: EventData) -> None:
        """A stop the operator asked for (F4): a round whose gate never opened closes as
        not played and its untouched deck stays in the shoe for the next start; one with
        cards at stake is void now rather than at the next start; dealt hands stay in play
        to be closed after the next start; faults stand."""
        rnd = self.round
        if rnd is None or rnd.outcome is not None:
            return
        if not rnd.gate_opened:
            self.deck_waiting = True
            self._end(
                Outcome.NOT_PLAYED,
                "the service stopped before the gate opened: no card was at stake",
                "F4",
            )
            return
        if self._origin() in ON_TABLE:
            # The stub was not confirmed as 4: the deck is suspect (D2).
            self.deck_must_change = True
        self._end(
            Outcome.VOID_FAULT,
            "the service stopped with cards of the round at stake (Section 10.13)",
            "F4",
        )
