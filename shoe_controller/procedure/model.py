"""The machine's model: the guards and side effects named in :mod:`.machine`'s table.

Callbacks receive the transitions event; an input's data travels as ``event.kwargs["data"]``.
Side effects only append decisions to :attr:`ProcedureModel.out`; nothing here does I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from firmware_protocol import Card, GateMode
from shoe_controller.procedure.decisions import (
    AskCroupier,
    AuditCard,
    BetsClosed,
    CardAssigned,
    Decision,
    DeterminationRecorded,
    FaultCleared,
    FaultCode,
    FaultRaised,
    GateCommand,
    Outcome,
    RoundClosed,
    RoundEnded,
    RoundOpened,
    SecurityEvent,
    StartPositionSet,
    StateChanged,
    StubCounted,
    WagerSettled,
)
from shoe_controller.procedure.machine import IN_SHOE, LIVE, ON_TABLE, PRE_DEAL, Phase
from shoe_controller.procedure.record import Irregularity, RoundRecord
from shoe_controller.procedure.start import StartPosition
from shoe_controller.procedure.table import TableRules

if TYPE_CHECKING:
    from transitions import EventData

_log = logging.getLogger(__name__)
_D = TypeVar("_D")


# --- the data each input carries through the machine --------------------------------


@dataclass(frozen=True, slots=True)
class Draw:
    draw_index: int
    card: Card
    gate: GateMode


@dataclass(frozen=True, slots=True)
class DeckLoad:
    round_id: str


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


@dataclass(frozen=True, slots=True)
class ShortDeck:
    drawn: int


@dataclass(frozen=True, slots=True)
class Determination:
    misdealt: bool


@dataclass(frozen=True, slots=True)
class Reconnect:
    events_lost: bool


@dataclass(frozen=True, slots=True)
class Reason:
    text: str


@dataclass(frozen=True, slots=True)
class Restart:
    round_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class ShoeFault:
    code: int
    text: str


@dataclass(frozen=True, slots=True)
class Clearance:
    by: str


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


Trigger = Callable[..., bool]


class ProcedureModel:
    """The model the machine drives. ``state`` and the triggers below are bound by
    :func:`shoe_controller.procedure.machine.build_machine`."""

    # Bound by transitions; declared so that the type checker sees them.
    state: str
    shoe_approved: Trigger
    shoe_unapproved: Trigger
    deck_loaded: Trigger
    deck_removed: Trigger
    no_more_bets: Trigger
    set_start: Trigger
    wager_settled: Trigger
    card_drawn: Trigger
    double_card: Trigger
    jam: Trigger
    shoe_fault: Trigger
    jam_cleared: Trigger
    door_opened: Trigger
    shoe_empty: Trigger
    stub_counted: Trigger
    misdeal_determination: Trigger
    close_round: Trigger
    link_lost: Trigger
    link_restored: Trigger
    restarted_mid_round: Trigger
    attendant_clear: Trigger
    internal_fault: Trigger

    def __init__(self, rules: TableRules) -> None:
        self.rules = rules
        self.out: list[Decision] = []
        # What the shoe reported of itself; the facade keeps these up to date.
        self.approved = False
        self.link_up = False
        self.jammed = False
        self.door_open = False
        #: D2/D3: the deck left the table; the next deck must be a different one.
        self.deck_must_change = False
        self.gate = GateMode.LOCKED
        #: The limit that goes with ``gate``: the draw index at which the shoe locks it.
        self.gate_limit = 0
        self.round: RoundRecord | None = None
        self.rounds_opened = 0
        self.proposal: Outcome | None = None
        self.fault_origin: Phase | None = None
        self.fault_codes: list[FaultCode] = []
        self.voided_in_fault = False
        self._round_end: RoundEnded | None = None

    @property
    def phase(self) -> Phase:
        return Phase(self.state)

    def _round(self) -> RoundRecord:
        if self.round is None:
            raise RuntimeError(f"no round in phase {self.state}")
        return self.round

    def _origin(self) -> Phase:
        """The phase a fault happened in: the current one, or the one before the fault."""
        if self.phase is Phase.FAULT and self.fault_origin is not None:
            return self.fault_origin
        return self.phase

    # --- machine-wide callbacks -------------------------------------------------------

    def record_state_change(self, event: EventData) -> None:
        transition = event.transition
        assert transition is not None
        self.out.append(StateChanged(transition.source, self.state, event.event.name))

    def sync_gate(self, event: EventData) -> None:
        """Set the gate this phase requires; on a fault, lock it even if it seems locked."""
        phase = self.phase
        if phase is Phase.DEALING:
            # The shoe's limit is a draw index: the deal's last card, wherever it resumes.
            rnd = self._round()
            mode, limit = GateMode.DEAL, rnd.dealt + rnd.remaining
        elif phase is Phase.STUB_COUNT:
            mode, limit = GateMode.STUB, 0
        else:
            mode, limit = GateMode.LOCKED, 0
        if mode is not GateMode.LOCKED:
            refusal = self.gate_refusal()
            if refusal is not None:
                raise GateRefused(refusal)
        self.gate_limit = limit
        if mode is not self.gate or phase is Phase.FAULT:
            self.gate = mode
            self.out.append(GateCommand(mode, limit))

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
            _log.error("procedure callback failed in %s", self.state, exc_info=error)
            irregularity = Irregularity(
                FaultCode.INTERNAL,
                f"the controller failed on {event.event.name}: {type(error).__name__}: {error}",
                "F1",
            )
        self._raise(irregularity)
        if self.phase is not Phase.FAULT:
            self.internal_fault()

    def publish_round_end(self, event: EventData) -> None:
        if self._round_end is not None:
            self.out.append(self._round_end)
            self._round_end = None

    # --- outcomes and faults ----------------------------------------------------------

    def _end(self, outcome: Outcome, reason: str, rule: str) -> None:
        rnd = self._round()
        rnd.outcome = outcome
        self._round_end = RoundEnded(
            round_id=rnd.round_id,
            outcome=outcome,
            reason=reason,
            rule=rule,
            start=rnd.start,
            cards_per_position=None if rnd.restarted else rnd.cards_per_position(),
            wagered=tuple(sorted(rnd.wagered)),
            collected_unseen=rnd.collected_unseen(outcome),
        )

    def _raise(self, irregularity: Irregularity, *, voids: bool = True) -> None:
        """Record a fault; it voids the round when the round still has cards in the shoe."""
        rnd = self.round
        voiding = (
            voids
            and rnd is not None
            and rnd.outcome is None
            and (self._origin() in IN_SHOE or rnd.restarted)
        )
        self.out.append(
            FaultRaised(irregularity.code, irregularity.reason, irregularity.rule, voiding)
        )
        self.fault_codes.append(irregularity.code)
        if irregularity.code is FaultCode.COMPOSITION:
            self.deck_must_change = True
        if voiding:
            self.voided_in_fault = True
            self._end(Outcome.VOID_FAULT, irregularity.reason, irregularity.rule)

    def enter_fault(self, event: EventData) -> None:
        transition = event.transition
        assert transition is not None
        self.fault_origin = Phase(transition.source)

    def leave_fault(self, event: EventData) -> None:
        self.fault_origin = None
        self.fault_codes = []
        self.voided_in_fault = False

    # --- A1: the shoe -----------------------------------------------------------------

    def forget_approval(self, event: EventData) -> None:
        self.approved = False

    def fault_not_approved(self, event: EventData) -> None:
        reason = _data(event, Reason).text
        self._raise(
            Irregularity(FaultCode.SHOE_NOT_APPROVED, f"the shoe is not approved: {reason}", "A1")
        )

    # --- A2: the deck -----------------------------------------------------------------

    def shoe_ready(self, event: EventData) -> bool:
        return self.gate_refusal() is None

    def open_round(self, event: EventData) -> None:
        round_id = _data(event, DeckLoad).round_id
        self.round = RoundRecord(round_id, self.rules)
        self.rounds_opened += 1
        self.deck_must_change = False
        self.door_open = False
        self.proposal = None
        self.out.append(RoundOpened(round_id))

    def fault_shoe_not_ready(self, event: EventData) -> None:
        refusal = self.gate_refusal()
        why = refusal.reason if refusal else "no approved shoe"
        code = refusal.code if refusal else FaultCode.SHOE_NOT_APPROVED
        rule = refusal.rule if refusal else "A1"
        self._raise(Irregularity(code, f"a deck was loaded but no round can start: {why}", rule))

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

    def fault_in_live_round(self, event: EventData) -> bool:
        return self.fault_origin in LIVE

    def fault_in_shoe_round(self, event: EventData) -> bool:
        return self.fault_origin in IN_SHOE

    # --- A3, B1, B2 -------------------------------------------------------------------

    def close_bets(self, event: EventData) -> None:
        wagered = _data(event, Wagers).wagered
        self._round().wagered = wagered
        self.out.append(BetsClosed(tuple(sorted(wagered))))

    def dice_wager_offered(self, event: EventData) -> bool:
        return self.rules.dice_wager

    def record_start(self, event: EventData) -> None:
        start = _data(event, Start).start
        self._round().set_start(start)
        self.out.append(StartPositionSet(start))

    def settle_wager(self, event: EventData) -> None:
        self.out.append(WagerSettled())

    # --- C1-C3, D3: cards -------------------------------------------------------------

    def deal_card_irregular(self, event: EventData) -> bool:
        draw = _data(event, Draw)
        return self._round().deal_irregularity(draw.draw_index, draw.card, draw.gate) is not None

    def deal_card_is_last(self, event: EventData) -> bool:
        return self._round().remaining == 1

    def assign_card(self, event: EventData) -> None:
        draw = _data(event, Draw)
        position = self._round().assign(draw.card)
        self.out.append(CardAssigned(draw.draw_index, position, not draw.card.is_unreadable))
        self.out.append(AuditCard(draw.draw_index, position, draw.card))

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
        self._round().record_stub_card(draw.draw_index, draw.card)
        self.out.append(AuditCard(draw.draw_index, "stub", draw.card))

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
                f"card {draw.draw_index} left the shoe in deal mode after the last card of "
                "the deal",
                "C2",
            )
        else:
            irregularity = self._unexpected(f"card {draw.draw_index} left the shoe")
        self._card_fault(draw, irregularity)

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
        self.out.append(AuditCard(draw.draw_index, "unassigned", draw.card))
        if irregularity.code is FaultCode.COMPOSITION:
            self.out.append(SecurityEvent(draw.draw_index, irregularity.reason, draw.card))
        self._raise(irregularity)

    # --- C4: double card, jam, door ---------------------------------------------------

    def end_on_double_card(self, event: EventData) -> None:
        index = _data(event, DoubleDraw).draw_index
        self._end(
            Outcome.VOID_MISDEAL,
            f"two cards left the shoe together at card {index}: a misdeal (Section 10.13)",
            "C4",
        )

    def note_stub_double(self, event: EventData) -> None:
        index = _data(event, DoubleDraw).draw_index
        self._round().note_stub(f"two stub cards passed the reader together at card {index}")

    def fault_unexpected_double(self, event: EventData) -> None:
        index = _data(event, DoubleDraw).draw_index
        self._raise(self._unexpected(f"two cards left the shoe together at card {index}"))

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
        count = _data(event, StubCount).count
        self._round().stub_count = count
        self.out.append(StubCounted(count, self.rules.stub_size))
        if count == self.rules.stub_size:
            self._end(
                Outcome.DEALT,
                f"the stub holds {count} cards: the hands are in play",
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
        self.out.append(
            AskCroupier(
                question=(
                    f"The stub holds {count} cards, not {self.rules.stub_size}: were the "
                    f"cards misdealt? ({finding})"
                ),
                evidence=evidence,
                proposal=self.proposal,
                rule="D2",
            )
        )

    def determined_misdealt(self, event: EventData) -> bool:
        return _data(event, Determination).misdealt

    def record_determination(self, event: EventData) -> None:
        misdealt = _data(event, Determination).misdealt
        count = self._round().stub_count
        self.out.append(DeterminationRecorded(misdealt, self.proposal))
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

    def require_new_deck(self, event: EventData) -> None:
        self.deck_must_change = True

    # --- E2 ---------------------------------------------------------------------------

    def publish_round_record(self, event: EventData) -> None:
        rnd = self._round()
        assert rnd.start is not None
        rnd.closed = True
        self.out.append(
            RoundClosed(rnd.round_id, rnd.start, tuple(sorted(rnd.wagered)), rnd.closed_hands())
        )

    # --- F1-F3 ------------------------------------------------------------------------

    def fault_link_lost(self, event: EventData) -> None:
        self._raise(
            Irregularity(
                FaultCode.LINK_LOST, "the link to the shoe was lost during the round", "F2"
            ),
            voids=False,
        )

    def events_lost(self, event: EventData) -> bool:
        return _data(event, Reconnect).events_lost

    def fault_events_lost(self, event: EventData) -> None:
        self._raise(
            Irregularity(
                FaultCode.EVENTS_LOST,
                "the shoe restarted and lost events not yet delivered",
                "F2",
            )
        )

    def fault_restart(self, event: EventData) -> None:
        restart = _data(event, Restart)
        self.round = RoundRecord(restart.round_id, self.rules, restarted=True)
        self.rounds_opened += 1
        self._raise(
            Irregularity(
                FaultCode.CONTROLLER_RESTARTED,
                f"the controller restarted during round {restart.round_id}: {restart.reason} "
                "(Section 10.13)",
                "F3",
            )
        )

    def clear_target(self) -> Phase:
        """Where clearing the current fault leads."""
        origin = self.fault_origin
        assert origin is not None
        if origin in ON_TABLE:
            return origin
        voided = self.voided_in_fault or (origin in IN_SHOE and not self.link_up)
        if not self.approved or not self.link_up:
            return Phase.NO_SHOE
        if voided:
            return Phase.DECK_REMOVED if self.deck_must_change else Phase.VOID_FAULT
        if origin is Phase.NO_SHOE:
            return Phase.DECK_REMOVED if self.deck_must_change else Phase.IDLE
        return origin

    def clear_leads_here(self, event: EventData) -> bool:
        transition = event.transition
        assert transition is not None
        return transition.dest == self.clear_target().value

    def clear_fault(self, event: EventData) -> None:
        by = _data(event, Clearance).by
        self.out.append(FaultCleared(by, tuple(self.fault_codes)))
        rnd = self.round
        if (
            self.fault_origin in IN_SHOE
            and not self.link_up
            and rnd is not None
            and rnd.outcome is None
        ):
            self._end(
                Outcome.VOID_FAULT,
                "the link to the shoe did not return before the fault was cleared",
                "F2",
            )
