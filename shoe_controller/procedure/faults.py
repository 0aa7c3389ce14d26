"""Faults and their way out (F1, F3, F4): entering and leaving the fault phase, the
attendant's clear and where it leads, the journal taken over at start-up, and the stop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from shoe_controller.procedure.core import ModelCore, phase_of
from shoe_controller.procedure.decisions import (
    FaultCleared,
    FaultCode,
    FaultRaised,
    Notice,
    NoticeCode,
    Outcome,
)
from shoe_controller.procedure.inputs import Carry, Clearance, Voiding, data
from shoe_controller.procedure.machine import BETWEEN, IN_SHOE, LIVE, ON_TABLE, Phase
from shoe_controller.procedure.record import RoundRecord

if TYPE_CHECKING:
    from transitions import EventData


@dataclass(frozen=True, slots=True)
class Clearing:
    """What an attendant's clear does (:meth:`FaultCallbacks.clearing`)."""

    #: The reason and the rule of the void it ends the round with, if it does.
    voiding: tuple[str, str] | None
    #: The deck must leave the table afterwards (D2).
    condemns_deck: bool
    #: The phase the table goes to.
    target: Phase


class FaultCallbacks(ModelCore):
    """The machine's callbacks (guards and side effects) for faults and their way out (F1, F3,
    F4, F6): a part of :class:`~.model.ProcedureModel`, named in the table of
    :mod:`.machine`."""

    # --- the fault phase --------------------------------------------------------------

    def enter_fault(self, event: EventData) -> None:
        transition = event.transition
        assert transition is not None
        self.fault.entered(phase_of(transition.source))

    def leave_fault(self, event: EventData) -> None:
        if event.event.name == "stop":
            return  # the faults stand across the stop (F3)
        self.fault.cleared()

    def fault_round_in_shoe(self, event: EventData) -> bool:
        rnd = self.round
        return self.fault.origin in IN_SHOE and rnd is not None and rnd.outcome is None

    def fault_round_live(self, event: EventData) -> bool:
        rnd = self.round
        return self.fault.origin in LIVE and rnd is not None and rnd.outcome is None

    # --- F1: the attendant's clear ----------------------------------------------------

    def clear_allowed_by_shoe(self, event: EventData) -> bool:
        """A shoe that still reports a jam keeps the fault (C4, F1)."""
        return not (self.condition.jammed and self.condition.link_up)

    def shoe_back_or_voiding(self, event: EventData) -> bool:
        """While the shoe is away with cards of the round at stake, only a clear that
        voids the round is taken: the shoe may still send what it holds (F2)."""
        return (
            self.condition.link_up or not self.round_at_stake() or data(event, Clearance).void_round
        )

    def clearing(self, clearance: Clearance) -> Clearing:
        """What ``clearance`` does, decided before anything changes: whether it ends the
        round void, whether the deck must then leave the table, and where the table goes
        (the machine's conditions, :class:`~.machine.LeadsTo`, take the destination from
        it; :meth:`clear_fault` does the rest)."""
        origin = self.fault.origin
        assert origin is not None
        rnd = self.round
        round_open = rnd is not None and rnd.outcome is None
        voiding: tuple[str, str] | None = None
        if round_open and clearance.void_round:
            away = "" if self.condition.link_up else " while the shoe was away"
            voiding = (
                f"{clearance.by} cleared the fault{away} choosing to void the round",
                "F2" if not self.condition.link_up else "F6",
            )
        elif round_open and origin in IN_SHOE and not self.condition.link_up:
            voiding = ("the link to the shoe did not return before the fault was cleared", "F2")
        # The stub of hands on the table was never confirmed as 4 (D2).
        condemns = round_open and clearance.void_round and origin in ON_TABLE
        outcome = Outcome.VOID_FAULT if voiding is not None else rnd.outcome if rnd else None
        spent = self.deck.spent or (voiding is not None and rnd is not None and rnd.gate_opened)
        target = self._clear_target(
            origin,
            round_found=rnd is not None,
            outcome=outcome,
            voided=self.fault.voided or (round_open and clearance.void_round),
            must_change=self.deck.must_change or condemns,
            spent=spent,
        )
        return Clearing(voiding, condemns, target)

    def clear_destination(self, event: EventData) -> Phase:
        return self.clearing(data(event, Clearance)).target

    def _clear_target(
        self,
        origin: Phase,
        *,
        round_found: bool,
        outcome: Outcome | None,
        voided: bool,
        must_change: bool,
        spent: bool,
    ) -> Phase:
        """Where the clear leads: back to the hands on the table, back to the deal when no
        card was lost, else between rounds (F1, F2, F3)."""
        if origin in ON_TABLE and round_found and outcome in (None, Outcome.DEALT):
            return origin
        if not self.condition.approved or not self.condition.link_up:
            return Phase.NO_SHOE
        round_alive = round_found and outcome is None and not voided
        if origin in IN_SHOE and round_alive:
            return origin
        if must_change:
            return Phase.DECK_REMOVED
        if origin in IN_SHOE or origin in ON_TABLE:
            return Phase.VOID_FAULT
        if origin in BETWEEN:
            return origin
        if origin is Phase.SHUFFLE_CHECK and self.deck.waiting:
            return Phase.SHUFFLE_CHECK
        # No shoe or no phase to go back to (a start-up, a deck that came out meanwhile):
        # between rounds, with the void round's deck still to take out if there is one.
        return Phase.VOID_FAULT if spent else Phase.IDLE

    def clear_fault(self, event: EventData) -> None:
        clearance = data(event, Clearance)
        clearing = self.clearing(clearance)
        self.emit(FaultCleared(clearance.by, tuple(self.fault.codes)))
        if clearance.void_round and clearing.voiding is not None:
            self.fault.void()
        if clearing.condemns_deck:
            self.deck.condemn()
        if clearing.voiding is not None:
            reason, rule = clearing.voiding
            self.end_round(Outcome.VOID_FAULT, reason, rule)

    # --- F6: a supervisor ends the round void -----------------------------------------

    def end_void(self, event: EventData) -> None:
        voiding = data(event, Voiding)
        self.end_round(
            Outcome.VOID_FAULT,
            f"{voiding.by} ended the round void: {voiding.reason} (Section 10.13)",
            "F6",
        )

    # --- F3: start-up -----------------------------------------------------------------

    def take_over(self, event: EventData) -> None:
        """What the journal says the table was doing becomes the table's state."""
        carry = data(event, Carry)
        self.recovered = True
        self.deck.remember_only(list(carry.removed_decks))
        facts = carry.facts
        if facts is not None:
            self.deck.restore(
                must_change=facts.deck_must_change,
                waiting=facts.deck_waiting,
                spent=facts.deck_spent,
            )
            self.condition.shoe = facts.shoe
        rnd = carry.round
        if rnd is not None:
            self.round = RoundRecord.restore(
                rnd.round_id,
                self.rules,
                start=rnd.start,
                wagered=rnd.wagered,
                cards=rnd.cards,
                stub_count=rnd.stub_count,
            )
            self.round.outcome = rnd.outcome
            if rnd.outcome is None and carry.origin() in ON_TABLE:
                self.deck.condemn()  # the stub was never confirmed as 4 (D2)

    def carry_needs_attendant(self, event: EventData) -> bool:
        carry = data(event, Carry)
        return bool(carry.faults) or (carry.crashed and carry.round is not None)

    def carry_hands_in_play(self, event: EventData) -> bool:
        rnd = data(event, Carry).round
        return rnd is not None and rnd.outcome is Outcome.DEALT

    def carry_crashed(self, event: EventData) -> bool:
        return data(event, Carry).crashed

    def note_unclean_stop(self, event: EventData) -> None:
        self.emit(
            Notice(
                NoticeCode.UNCLEAN_STOP,
                "the controller had stopped without being asked to; no round was open",
                "F3",
            )
        )

    def fault_restart(self, event: EventData) -> None:
        carry = data(event, Carry)
        self.fault.restore(carry.faults, carry.origin() or Phase.NO_SHOE)
        rnd = self.round
        if not carry.crashed:
            return
        what = f"during round {rnd.round_id}" if rnd is not None else "between rounds"
        reason = f"the controller restarted {what}"
        if rnd is not None and rnd.outcome is None:
            reason = f"the controller stopped while round {rnd.round_id} was open"
        reason = f"{reason} (Section 10.13)"
        voiding = rnd is not None and rnd.outcome is None
        self.emit(FaultRaised(FaultCode.CONTROLLER_RESTARTED, reason, "F3", voiding))
        self.fault.raised(FaultCode.CONTROLLER_RESTARTED)
        if voiding:
            self.fault.void()
            self.end_round(Outcome.VOID_FAULT, reason, "F3")

    # --- F4: the stop -----------------------------------------------------------------

    def wind_up(self, event: EventData) -> None:
        """A stop the operator asked for (F4): a round whose gate never opened closes as
        not played and its untouched deck stays in the shoe for the next start; one with
        cards at stake is void now rather than at the next start; dealt hands stay in play
        to be closed after the next start; faults stand."""
        rnd = self.round
        if rnd is None or rnd.outcome is not None:
            return
        if not rnd.gate_opened:
            self.deck.kept_for_next_start()
            self.end_round(
                Outcome.NOT_PLAYED,
                "the service stopped before the gate opened: no card was at stake",
                "F4",
            )
            return
        if self.origin() in ON_TABLE:
            # The stub was not confirmed as 4: the deck is suspect (D2).
            self.deck.condemn()
        self.end_round(
            Outcome.VOID_FAULT,
            "the service stopped with cards of the round at stake (Section 10.13)",
            "F4",
        )
