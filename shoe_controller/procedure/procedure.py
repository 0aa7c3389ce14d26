"""The dealing procedure of one table: inputs in, decisions out.

Two kinds of bad input, kept apart on purpose:

* a person's input that the procedure does not accept now (a second starting position, a
  stub count during the deal, closing a round that is not dealt...) raises
  :class:`~shoe_controller.errors.ProcedureError` and changes nothing;
* a physical event that breaks the procedure (a card while the gate should be locked, a
  50th card, a door opened during the deal...) is a fault: the gate locks, the round is void
  when it has cards at stake, and only an attendant's clear lets dealing go on (F1).

Events from the shoe and the link never raise: one that means nothing in the current phase
(the door opened between rounds, say) returns no decision; the caller journals every input
anyway. The rules for stopping (F4), restarting (F3), the link's grace (F2) and the gate's
window (F5) live here too: time is passed in (``now``, monotonic seconds), never read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Final

from transitions import EventData

from firmware_protocol import UNREADABLE, Card, GateMode
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import authority, refusals
from shoe_controller.procedure.authority import Person, Role
from shoe_controller.procedure.core import LINK_GRACE
from shoe_controller.procedure.decisions import (
    Decision,
    FaultCode,
    GateCommand,
    Outcome,
    Prompt,
    TableFacts,
)
from shoe_controller.procedure.inputs import (
    MAX_TEXT,
    Acceptance,
    Carry,
    Clearance,
    ClockState,
    Determination,
    DoubleDraw,
    Draw,
    EmptyShoe,
    Hello,
    JamEnd,
    Moment,
    Reason,
    RoundFacts,
    ShoeFault,
    ShoeId,
    Start,
    StubCount,
    Voiding,
    Wagers,
)
from shoe_controller.procedure.machine import IN_SHOE, Phase, build_machine
from shoe_controller.procedure.model import ProcedureModel
from shoe_controller.procedure.refusals import Refusal, refusal
from shoe_controller.procedure.start import (
    RandomSource,
    StartMethod,
    StartPosition,
    draw_rng,
    start_from_dice,
    start_from_rng,
)
from shoe_controller.procedure.table import TableRules, WagerDecider

__all__ = ["LINK_GRACE", "Carry", "Procedure", "RoundFacts"]

#: The shoe the convenience method :meth:`Procedure.shoe_approved` names when none is given.
SOME_SHOE: ShoeId = ("ES-7", "SN-0001")
#: The wall clock is passed on to the machine when it moved at least this much (seconds):
#: the deck's memory counts in hours (D3), and a card should not pay for it.
WALL_RESOLUTION = 60.0
#: The declared input each way of setting the start is (E4).
_START_INPUT: Final = {
    StartMethod.DICE: "start_by_dice",
    StartMethod.CONTROLLER_RNG: "start_by_rng",
    StartMethod.EXTERNAL_RNG: "start_by_external_rng",
}


def _counting_round_ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"r{next(counter)}"


class Procedure:
    """The procedure's state machine behind plain methods. Drive it from one thread.

    Every input returns the decisions it produced, in order. The caller journals them
    before acting on any of them or acknowledging the input to anyone (E3), and publishes
    only those whose ``disclosure`` allows it (E1, E2). The state lives in the machine's
    model (:mod:`.core`); this class checks a person's values, fires the input and hands
    back what the machine decided.
    """

    def __init__(
        self,
        rules: TableRules | None = None,
        *,
        round_ids: Callable[[], str] | None = None,
        link_grace: float = LINK_GRACE,
    ) -> None:
        self._rules = rules if rules is not None else TableRules()
        self._model = ProcedureModel(self._rules, round_ids or _counting_round_ids(), link_grace)
        self._machine = build_machine(self._model)
        #: The triggers each phase has a transition for, as the machine lists them.
        self._triggers: dict[str, frozenset[str]] = {}

    # --- what the caller may read ------------------------------------------------------

    @property
    def rules(self) -> TableRules:
        return self._rules

    @property
    def phase(self) -> Phase:
        return self._model.phase

    @property
    def gate(self) -> GateMode:
        """The gate mode last commanded."""
        return self._model.gate

    def gate_command(self) -> GateCommand:
        """The gate as the procedure last set it. The limit is a draw index, so sending this
        again (after a reconnection, a shoe restart or a refused command) lets no more
        cards out than the procedure allows."""
        return GateCommand(self._model.gate, self._model.gate_limit)

    @property
    def round_id(self) -> str | None:
        rnd = self._model.round
        return rnd.round_id if rnd is not None else None

    @property
    def count_entered_by(self) -> str | None:
        """Who entered the stub count waiting to be accepted (E5)."""
        rnd = self._model.round
        return rnd.count_entered_by if rnd is not None else None

    @property
    def round_open(self) -> bool:
        """True from the round's opening until it is closed or void: no card identity may
        be shown meanwhile (E1)."""
        rnd = self._model.round
        if rnd is None or rnd.closed:
            return False
        return rnd.outcome in (None, Outcome.DEALT)

    @property
    def cards_dealt(self) -> int:
        rnd = self._model.round
        return rnd.dealt if rnd is not None else 0

    @property
    def faults(self) -> tuple[FaultCode, ...]:
        """The faults waiting for an attendant's clear (empty outside the fault phase)."""
        return tuple(self._model.fault.codes)

    @property
    def wagers_entered(self) -> frozenset[int] | None:
        return self._model.wagers_entered

    def facts(self) -> TableFacts:
        return self._model.facts()

    def accepts(self, trigger: str) -> bool:
        """Whether the input named ``trigger`` has any transition from the current phase."""
        state = self._model.state
        triggers = self._triggers.get(state)
        if triggers is None:
            # The table is fixed once built; asking the machine scans every transition,
            # which every card would pay for.
            triggers = self._triggers[state] = frozenset(self._machine.get_triggers(state))
        return trigger in triggers

    def next_deadline(self) -> float | None:
        """When :meth:`tick` must be called next (monotonic seconds), or None."""
        condition = self._model.condition
        since = condition.outage_since
        if since is None or condition.outage_faulted or self.phase not in IN_SHOE:
            return None
        return since + self._model.link_grace

    @property
    def prompt(self) -> Prompt | None:
        """The latest prompt of the current phase: what is asked now, and of whom."""
        return self._model.prompt

    @property
    def display(self) -> str:
        """What the shoe's display must show now (never a card)."""
        return self._model.display()

    # --- start-up and stop (F3, F4) ----------------------------------------------------

    def recover(self, carry: Carry) -> list[Decision]:
        """At start-up, before anything else: take over what the journal says the table
        was doing. A round left open by a controller that did not stop cleanly is void and
        the gate stays locked until an attendant clears (F3); faults nobody cleared stand;
        dealt hands stay in play to be closed; a deck waiting in the shoe is remembered, and
        so are the decks removed recently with a known defect (D3)."""
        if self._model.recovered or self.phase is not Phase.NO_SHOE:
            raise ProcedureError("the journal's state is taken over only at start-up (F3)")
        return self._event("recover", carry)

    def stop(self) -> list[Decision]:
        """A stop the operator asked for (F4): nothing is stranded (see docs/procedure.md)."""
        return self._event("stop", None)

    def clock(self, synchronized: bool | None, source: str) -> list[Decision]:
        """What the system clock's synchronisation is now (``None``: it cannot be read):
        a notice when it is not, at the first reading or when it is lost, and again when it
        is back."""
        return self._event("clock", ClockState(synchronized, source))

    # --- A1, F2: the shoe and the link -------------------------------------------------

    def shoe_connected(self, shoe: ShoeId, *, approved: bool, reason: str) -> list[Decision]:
        """The link is up with ``shoe`` (model, serial number), approved or not (A1). A
        different shoe while cards are at stake voids the round (F2); the same shoe back
        within the link's grace goes on as if nothing happened."""
        previous = self._model.condition.shoe
        decisions = self._event("link_up", Hello(shoe))
        if previous is not None and shoe != previous:
            decisions += self._event(
                "shoe_changed",
                Reason(f"{shoe[0]} serial {shoe[1]} instead of {previous[0]} serial {previous[1]}"),
            )
        if approved:
            decisions += self._event("shoe_approved", Hello(shoe))
        else:
            decisions += self._event("shoe_unapproved", Reason(reason))
        return decisions

    def shoe_approved(self, shoe: ShoeId = SOME_SHOE) -> list[Decision]:
        """The link is up and ``shoe`` is on the approved list (A1)."""
        return self.shoe_connected(shoe, approved=True, reason="approved")

    def shoe_unapproved(self, reason: str) -> list[Decision]:
        """The connected shoe is not, or no longer, approved or verified (A1, F1)."""
        return self._event("shoe_unapproved", Reason(reason))

    def link_lost(self, now: float) -> list[Decision]:
        """The link to the shoe is down. The outage counts from its first loss; past the
        grace, with cards at stake, it is a fault (F2)."""
        return self._event("link_lost", Moment(now)) + self.tick(now)

    def tick(self, now: float, *, wall: float | None = None) -> list[Decision]:
        """Let time pass (``now`` monotonic seconds; ``wall`` the wall clock's, when known):
        an outage longer than the grace is a fault (F2); a deck removed longer ago than a
        day is forgotten (D3)."""
        decisions: list[Decision] = []
        known = self._model.wall
        if wall is not None and (known is None or abs(wall - known) >= WALL_RESOLUTION):
            decisions += self._event("time", Moment(now, wall))
        deadline = self.next_deadline()
        if deadline is None or now < deadline:
            return decisions
        return decisions + self._event("link_timeout", Moment(now))

    def events_lost(self, detail: str) -> list[Decision]:
        """The shoe can no longer send events it issued (it restarted without keeping
        them, or numbered afresh): a round with cards in the shoe is void (F2). What the
        shoe reported of a jam, an open door or a deck waiting in it is forgotten (see
        :meth:`~.shoe.ShoeCallbacks.note_events_lost`)."""
        return self._event("events_lost", Reason(detail))

    def gate_refused(self, detail: str) -> list[Decision]:
        """The shoe refused a gate command, or never answered it, after every attempt.
        While it reports its door open or a jam that is expected: the gate is set again
        when that ends. Otherwise dealing cannot go on: a fault (F1)."""
        return self._event("gate_refused", Reason(detail))

    # --- A2: the deck ------------------------------------------------------------------

    def deck_loaded(self) -> list[Decision]:
        """The shoe reports a deck loaded and its door closed. Between rounds it goes to
        its shuffle check (A2); while a round's hands are in play, after a deck left the
        table, or during a fault, it waits in the shoe."""
        return self._event("deck_loaded", None)

    def deck_removed(self) -> list[Decision]:
        return self._event("deck_removed", None)

    def confirm_shuffle(self, *, by: Person) -> list[Decision]:
        """The croupier confirms the deck in the shoe was shuffled and cut (Section 10.4):
        the round opens and bets are open (A2)."""
        self._require("confirm_shuffle", by)
        return self._step("confirm_shuffle", None)

    def confirm_new_deck(self, *, by: Person) -> list[Decision]:
        """After a deck left the table (D2, D3): a supervisor determines that the deck now
        in the shoe is a different one, shuffled and cut; the round opens."""
        self._require("confirm_new_deck", by)
        return self._step("confirm_new_deck", None)

    # --- A3, B1, B2 --------------------------------------------------------------------

    def set_wagers(self, positions: Iterable[int], *, by: Person) -> list[Decision]:
        """The positions a dealer entered as holding a wager, while bets are open (A3)."""
        items = self._positions(positions)
        self._require("set_wagers", by)
        return self._step("set_wagers", Wagers(frozenset(items)))

    def no_more_bets(self, wagered: Iterable[int] | None = None, *, by: Person) -> list[Decision]:
        """Freeze the positions that hold a wager: those given, or else those entered with
        :meth:`set_wagers`; never assumed (A3)."""
        if wagered is not None:
            items = frozenset(self._positions(wagered))
            self._require("no_more_bets", by)
        else:
            self._require("no_more_bets", by)
            entered = self._model.wagers_entered
            if entered is None:
                raise refusals.no_wagers_entered(self.round_id).error()
            items = entered
        return self._step("no_more_bets", Wagers(items))

    def no_more_bets_button(self, *, by: Person) -> list[Decision]:
        """The shoe's "no more bets" button, for the dealer signed in at the table: closes
        the bets with the wagers entered, and asks for them when none were (A3)."""
        self._require("no_more_bets", by)
        if self._model.wagers_entered is None:
            return self._event("ask_for_wagers", None)
        return self.no_more_bets(by=by)

    def set_start(self, start: StartPosition, *, by: Person) -> list[Decision]:
        """Record the starting position, however it was obtained (B1). While the table
        offers a dice wager that the dice decide, the start is by dice (B2)."""
        if not 1 <= start.position <= self._rules.positions:
            raise refusals.not_a_start_position(start.position, self._rules.positions).error()
        self._require("set_start", by, given=_START_INPUT[start.method])
        rules = self._rules
        if (
            start.method is not StartMethod.DICE
            and rules.dice_wager
            and rules.dice_wager_decided_by is WagerDecider.DICE
        ):
            raise refusals.dice_required().error()
        return self._step("set_start", Start(start))

    def start_by_dice(self, d1: int, d2: int, d3: int, *, by: Person) -> list[Decision]:
        return self.set_start(start_from_dice(d1, d2, d3, positions=self._rules.positions), by=by)

    def start_by_external_rng(self, number: int, *, by: Person) -> list[Decision]:
        """A number 1..N from an external approved generator, entered by the croupier."""
        return self.set_start(start_from_rng(number, positions=self._rules.positions), by=by)

    def start_by_rng(self, source: RandomSource | None = None, *, by: Person) -> list[Decision]:
        """Draw the starting position from the controller's own generator."""
        self._require("set_start", by, given="start_by_rng")
        return self.set_start(draw_rng(source, positions=self._rules.positions), by=by)

    def wager_settled(self, *, by: Person) -> list[Decision]:
        """The croupier marked the dice wager settled; the deal may begin (B2)."""
        self._require("wager_settled", by)
        return self._step("wager_settled", None)

    # --- C: cards ----------------------------------------------------------------------

    def card_drawn(self, draw_index: int, card: Card | None, gate_mode: GateMode) -> list[Decision]:
        """A card left the shoe; ``card`` None (or the unreadable code) when unread."""
        draw = Draw(draw_index, card if card is not None else UNREADABLE, GateMode(gate_mode))
        return self._event("card_drawn", draw)

    def stub_card(self, draw_index: int, card: Card | None) -> list[Decision]:
        """A card passed the reader in stub mode (D1)."""
        return self.card_drawn(draw_index, card, GateMode.STUB)

    def double_card(self, draw_index: int) -> list[Decision]:
        return self._event("double_card", DoubleDraw(draw_index))

    def jam(self) -> list[Decision]:
        return self._event("jam", None)

    def shoe_fault(self, code: int, text: str) -> list[Decision]:
        """The shoe reports a fault in itself: dealing stops until an attendant clears it
        (F1). Cards it let out unread show as their own events (C3)."""
        return self._event("shoe_fault", ShoeFault(code, text))

    def jam_cleared(self, card_left: bool) -> list[Decision]:
        return self._event("jam_cleared", JamEnd(card_left)) + self._event("shoe_ready", None)

    def door_opened(self) -> list[Decision]:
        return self._event("door_opened", None)

    def door_closed(self) -> list[Decision]:
        return self._event("door_closed", None) + self._event("shoe_ready", None)

    # --- D: the stub -------------------------------------------------------------------

    def shoe_empty(self, drawn: int) -> list[Decision]:
        """The shoe reports no card left after ``drawn`` cards: during the stub this is
        the shoe's count, the proposal for the croupier's (D1); during the deal, a short
        deck (D2)."""
        return self._event("shoe_empty", EmptyShoe(drawn))

    def stub_counted(self, count: int, *, by: Person) -> list[Decision]:
        """The croupier's count of the stub, once the shoe has finished it (D1): checked
        against the shoe's count, the stub cards read and the deck's size minus the cards
        dealt; where any of them disagrees, a supervisor accepts it."""
        if type(count) is not int or not 0 <= count <= self._rules.deck_size:
            raise refusals.stub_count_range(count, self._rules.deck_size).error()
        self._require("stub_counted", by)
        return self._step("stub_counted", StubCount(count, "croupier", by.name))

    def accept_stub_count(self, *, by: Person) -> list[Decision]:
        """A supervisor accepts the croupier's count that the figures disagree with (D1):
        another person than the one who entered it (E5). A conclusive reading of a deck
        of the wrong size decides the stub whatever is accepted (D4)."""
        self._require("accept_stub_count", by)
        return self._step("accept_stub_count", Acceptance(by.name))

    def misdeal_determination(self, misdealt: bool, *, by: Person) -> list[Decision]:
        """The croupier's determination for a stub that is not 4 (D2). One that
        contradicts a conclusive record is a supervisor's, recorded as contradicting it."""
        self._require("misdeal_determination", by, contradicts=self._contradicts(misdealt))
        return self._step("misdeal_determination", Determination(bool(misdealt)))

    # --- E2 ----------------------------------------------------------------------------

    def close_round(self, *, by: Person) -> list[Decision]:
        """Settlement is done: publish the round record (E2)."""
        self._require("close_round", by)
        return self._step("close_round", None)

    # --- F1, F2, F6 --------------------------------------------------------------------

    def clear_fault(self, *, by: Person, void_round: bool = False) -> list[Decision]:
        """A supervisor clears the fault, after which dealing may go on (F1). While the
        shoe is away with cards of the round at stake, the clear is refused unless the
        supervisor chooses to void the round (F2)."""
        self._require("attendant_clear", by, given="clear_fault")
        return self._step("attendant_clear", Clearance(by.name, bool(void_round)))

    def void_round(self, reason: str, *, by: Person) -> list[Decision]:
        """A supervisor ends the round void, with a reason, whatever phase it is in before
        its outcome (F6)."""
        if not isinstance(reason, str) or not reason.strip():
            raise refusals.no_void_reason().error()
        too_long = refusals.void_reason_too_long(reason, MAX_TEXT)
        if too_long is not None:
            raise too_long.error()
        self._require("void_round", by)
        return self._step("void_round", Voiding(by.name, reason.strip()))

    # --- the shoe's confirm button (E4) ------------------------------------------------

    def confirm_button(self, *, by: Person) -> list[Decision]:
        """The shoe's confirm button, pressed for the dealer signed in at the table: it
        answers what is asked now with what the controller proposes (the shuffle, a start by
        the controller's RNG, the dice wager settled, the shoe's count of the stub, the
        record's determination, closing the round), never what a supervisor gives."""
        prompt = self._model.prompt
        need = prompt.need if prompt is not None else None
        dealer = Person(by.name, Role.DEALER)
        if need == "confirm_shuffle":
            return self.confirm_shuffle(by=dealer)
        if need == "start_position":
            return self.start_by_rng(by=dealer)
        if need == "wager_settled":
            return self.wager_settled(by=dealer)
        if need == "close_round":
            return self.close_round(by=dealer)
        if need == "no_more_bets":
            return self.no_more_bets_button(by=dealer)
        if need == "stub_count" and prompt is not None and isinstance(prompt.proposal, int):
            return self.stub_counted(prompt.proposal, by=dealer)
        if need == "misdeal_determination" and prompt is not None and prompt.proposal is not None:
            return self.misdeal_determination(prompt.proposal is Outcome.VOID_MISDEAL, by=dealer)
        what = f"'{need}'" if need is not None else "nothing asked now"
        raise ProcedureError(
            f"the shoe's confirm button cannot answer {what}: answer it at the console "
            "(a supervisor's input, or one with no proposal to confirm) (E4)"
        )

    # --- plumbing ----------------------------------------------------------------------

    def _positions(self, positions: Iterable[int]) -> list[int]:
        items = list(positions)
        allowed = self._rules.betting_positions
        for position in items:
            if type(position) is not int or position not in allowed:
                raise refusals.not_a_betting_position(position, allowed).error()
        return items

    def _step(self, trigger: str, data: object) -> list[Decision]:
        """A person's input, checked (:meth:`_require`): the machine takes it, or refuses
        it when none of its transitions' conditions hold, saying which is not met."""
        if not self._model.may_trigger(trigger, data=data):
            raise refusals.unmet(self, self._unmet_condition(trigger, data)).error()
        self._model.trigger(trigger, data=data)
        return self._model.take_decisions()

    def _unmet_condition(self, trigger: str, data: object) -> str:
        """The first condition that refuses ``trigger`` with ``data`` now, by name."""
        machine = self._machine
        state = machine.get_model_state(self._model)
        event = EventData(state, machine.events[trigger], machine, self._model, (), {"data": data})
        for transition in machine.get_transitions(trigger, source=state.name):
            for condition in transition.conditions:
                if not condition.check(event):
                    if isinstance(condition.func, str):
                        return condition.func
                    break  # a destination's own condition: the next transition is tried
        raise LookupError(f"{trigger} is refused in {self.phase} by no condition of its own")

    def _event(self, trigger: str, data: object) -> list[Decision]:
        """An event of the shoe, the link or the clock: taken where it means something."""
        if self.accepts(trigger):
            self._model.trigger(trigger, data=data)
        return self._model.take_decisions()

    def _require(
        self, name: str, by: Person, *, contradicts: bool = False, given: str | None = None
    ) -> None:
        """Refuse a person's input the phase does not take (its trigger ``name``), or the
        person may not give (the declared input ``given``, by default ``name``)."""
        if not self.accepts(name):
            raise self._refusal(name).error()
        authority.require(given or name, by, contradicts=contradicts)

    def _contradicts(self, misdealt: bool) -> bool:
        """A misdeal determination against a record that rules a misdeal out (D2)."""
        rnd = self._model.round
        return bool(misdealt) and rnd is not None and rnd.misdeal_excluded(rnd.stub_count)

    def _refusal(self, name: str) -> Refusal:
        return refusal(self, name)
