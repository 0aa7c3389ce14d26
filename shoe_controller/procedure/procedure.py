"""The dealing procedure of one table: inputs in, decisions out.

Two kinds of bad input, kept apart on purpose:

* a person's input that the procedure does not accept now (a second starting position, a
  stub count during the deal, closing a round that is not dealt...) raises
  :class:`~shoe_controller.errors.ProcedureError` and changes nothing;
* a physical event that breaks the procedure (a card while the gate should be locked, a
  50th card, a door opened during the deal...) is a fault: the gate locks, the round is void
  when it has cards at stake, and only an attendant's clear lets dealing go on (F1).

Events from the shoe never raise: one that means nothing in the current phase (the door
opened between rounds, say) returns no decision; the caller journals every input anyway.
"""

from __future__ import annotations

from collections.abc import Iterable

from firmware_protocol import UNREADABLE, Card, GateMode
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure.decisions import Decision, FaultCode, GateCommand, Outcome
from shoe_controller.procedure.machine import IN_SHOE, ON_TABLE, ROUND, Phase, build_machine
from shoe_controller.procedure.model import (
    Clearance,
    DeckLoad,
    Determination,
    DoubleDraw,
    Draw,
    JamEnd,
    ProcedureModel,
    Reason,
    Reconnect,
    Restart,
    ShoeFault,
    ShortDeck,
    Start,
    StubCount,
    Trigger,
    Wagers,
)
from shoe_controller.procedure.start import (
    RandomSource,
    StartPosition,
    draw_rng,
    start_from_dice,
    start_from_rng,
)
from shoe_controller.procedure.table import TableRules

_WHAT = {
    "no_more_bets": "announcing no more bets",
    "set_start": "setting the starting position",
    "wager_settled": "settling the dice wager",
    "stub_counted": "counting the stub",
    "misdeal_determination": "recording a misdeal determination",
    "close_round": "closing the round",
}


class Procedure:
    """The procedure's state machine behind plain methods. Drive it from one thread.

    Every input returns the decisions it produced, in order. The caller journals them
    before acting on any of them or acknowledging the input to anyone (E3), and publishes
    only those whose ``disclosure`` allows it (E1, E2).
    """

    def __init__(self, rules: TableRules | None = None) -> None:
        self._rules = rules if rules is not None else TableRules()
        self._model = ProcedureModel(self._rules)
        self._machine = build_machine(self._model)

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
    def round_open(self) -> bool:
        """True from the deck's loading until the round is closed or void: no card
        identity may be shown meanwhile (E1)."""
        rnd = self._model.round
        if rnd is None or rnd.restarted or rnd.closed:
            return False
        return rnd.outcome in (None, Outcome.DEALT)

    @property
    def cards_dealt(self) -> int:
        rnd = self._model.round
        return rnd.dealt if rnd is not None else 0

    @property
    def faults(self) -> tuple[FaultCode, ...]:
        """The faults waiting for an attendant's clear (empty outside the fault phase)."""
        return tuple(self._model.fault_codes)

    def accepts(self, trigger: str) -> bool:
        """Whether the input named ``trigger`` has any transition from the current phase."""
        return trigger in self._machine.get_triggers(self._model.state)

    # --- A1: the shoe ------------------------------------------------------------------

    def shoe_approved(self) -> list[Decision]:
        """The link is up and the shoe's identity is on the approved list (A1)."""
        self._model.approved = True
        self._model.link_up = True
        return self._maybe(self._model.shoe_approved, None, "shoe_approved")

    def shoe_unapproved(self, reason: str) -> list[Decision]:
        """The shoe is not, or no longer, approved or verified (A1, F1)."""
        self._model.approved = False
        return self._maybe(self._model.shoe_unapproved, Reason(reason), "shoe_unapproved")

    # --- A2: the deck ------------------------------------------------------------------

    def deck_loaded(self, round_id: str, *, new_deck: bool = False) -> list[Decision]:
        """The shoe reports a deck loaded and its door closed; ``round_id`` names the round
        it starts. After a deck left the table (D2, D3), ``new_deck`` must confirm that the
        croupier loaded a different deck."""
        if not isinstance(round_id, str) or not round_id.strip():
            raise ProcedureError("a round needs a non-empty round id (A2)")
        model = self._model
        if model.deck_must_change and not new_deck and self.phase is Phase.DECK_REMOVED:
            raise ProcedureError(
                "the previous deck was removed from the table: load a different deck and "
                "confirm it as a new deck (D2, D3)"
            )
        model.door_open = False
        return self._fire(model.deck_loaded, DeckLoad(round_id.strip()))

    def deck_removed(self) -> list[Decision]:
        return self._maybe(self._model.deck_removed, None, "deck_removed")

    # --- A3, B1, B2 --------------------------------------------------------------------

    def no_more_bets(self, wagered: Iterable[int]) -> list[Decision]:
        """Freeze the positions that hold a wager: betting positions 2..N (A3)."""
        items = list(wagered)
        allowed = self._rules.betting_positions
        for position in items:
            if type(position) is not int or position not in allowed:
                raise ProcedureError(
                    f"position {position!r} cannot hold a wager: list betting positions "
                    f"{allowed[0]} to {allowed[-1]} (the banker, 1, is always in play) (A3)"
                )
        self._require("no_more_bets")
        return self._fire(self._model.no_more_bets, Wagers(frozenset(items)))

    def set_start(self, start: StartPosition) -> list[Decision]:
        """Record the starting position, however it was obtained (B1)."""
        if not 1 <= start.position <= self._rules.positions:
            raise ProcedureError(
                f"starting position {start.position} is not a position of this table "
                f"(1 to {self._rules.positions}) (B1)"
            )
        self._require("set_start")
        return self._fire(self._model.set_start, Start(start))

    def set_start_dice(self, d1: int, d2: int, d3: int) -> list[Decision]:
        return self.set_start(start_from_dice(d1, d2, d3, positions=self._rules.positions))

    def set_start_rng(self, number: int) -> list[Decision]:
        """A number 1..N from an external approved generator, entered by the croupier."""
        return self.set_start(start_from_rng(number, positions=self._rules.positions))

    def draw_start(self, source: RandomSource | None = None) -> list[Decision]:
        """Draw the starting position from the controller's own generator."""
        self._require("set_start")
        return self.set_start(draw_rng(source, positions=self._rules.positions))

    def wager_settled(self) -> list[Decision]:
        """The croupier marked the dice wager settled; the deal may begin (B2)."""
        self._require("wager_settled")
        return self._fire(self._model.wager_settled, None)

    # --- C: cards ----------------------------------------------------------------------

    def card_drawn(self, draw_index: int, card: Card | None, gate_mode: GateMode) -> list[Decision]:
        """A card left the shoe; ``card`` None (or the unreadable code) when unread."""
        draw = Draw(draw_index, card if card is not None else UNREADABLE, GateMode(gate_mode))
        return self._fire(self._model.card_drawn, draw)

    def stub_card(self, draw_index: int, card: Card | None) -> list[Decision]:
        """A card passed the reader in stub mode (D1)."""
        return self.card_drawn(draw_index, card, GateMode.STUB)

    def double_card(self, draw_index: int) -> list[Decision]:
        return self._fire(self._model.double_card, DoubleDraw(draw_index))

    def jam(self) -> list[Decision]:
        self._model.jammed = True
        return self._fire(self._model.jam, None)

    def shoe_fault(self, code: int, text: str) -> list[Decision]:
        """The shoe reports a fault in itself: dealing stops until an attendant clears it
        (F1). Cards it let out unread show as their own events (C3)."""
        return self._fire(self._model.shoe_fault, ShoeFault(code, text))

    def jam_cleared(self, card_left: bool) -> list[Decision]:
        self._model.jammed = False
        return self._maybe(self._model.jam_cleared, JamEnd(card_left), "jam_cleared")

    def door_opened(self) -> list[Decision]:
        self._model.door_open = True
        return self._maybe(self._model.door_opened, None, "door_opened")

    def door_closed(self) -> list[Decision]:
        self._model.door_open = False
        return []

    # --- D: the stub -------------------------------------------------------------------

    def shoe_empty(self, drawn: int) -> list[Decision]:
        """The shoe reports no card left after ``drawn`` cards: during the stub this is
        the stub count (D1); during the deal, a short deck (D2)."""
        rnd = self._model.round
        if self.phase is Phase.STUB_COUNT and rnd is not None:
            if drawn < rnd.dealt:
                rnd.note_stub(f"the shoe reports {drawn} cards drawn but {rnd.dealt} were dealt")
            return self._fire(self._model.shoe_empty, StubCount(max(drawn - rnd.dealt, 0)))
        return self._maybe(self._model.shoe_empty, ShortDeck(drawn), "shoe_empty")

    def stub_counted(self, count: int) -> list[Decision]:
        """The croupier entered the number of cards left in the shoe (D1)."""
        if type(count) is not int or not 0 <= count <= self._rules.deck_size:
            raise ProcedureError(
                f"stub count {count!r} is not a number of cards from 0 to "
                f"{self._rules.deck_size}: count the remaining cards again (D1)"
            )
        self._require("stub_counted")
        return self._fire(self._model.stub_counted, StubCount(count))

    def misdeal_determination(self, misdealt: bool) -> list[Decision]:
        """The croupier's determination for a stub that is not 4 (D2)."""
        self._require("misdeal_determination")
        return self._fire(self._model.misdeal_determination, Determination(bool(misdealt)))

    # --- E2 ----------------------------------------------------------------------------

    def close_round(self) -> list[Decision]:
        """Settlement is done: publish the round record (E2)."""
        self._require("close_round")
        return self._fire(self._model.close_round, None)

    # --- F: faults ---------------------------------------------------------------------

    def attendant_clear(self, attendant_id: str) -> list[Decision]:
        """An attendant clears the fault, after which dealing may go on (F1)."""
        if not isinstance(attendant_id, str) or not attendant_id.strip():
            raise ProcedureError("clearing a fault needs the attendant's id (F1)")
        model = self._model
        if self.phase is not Phase.FAULT:
            raise ProcedureError("there is no fault to clear (F1)")
        if model.jammed and model.link_up:
            raise ProcedureError(
                "the shoe still reports a jam: clear the jam at the shoe, then clear the "
                "fault (C4, F1)"
            )
        return self._fire(model.attendant_clear, Clearance(attendant_id.strip()))

    def link_lost(self) -> list[Decision]:
        self._model.link_up = False
        return self._maybe(self._model.link_lost, None, "link_lost")

    def link_restored(self, events_lost: bool) -> list[Decision]:
        """The same shoe is back; ``events_lost`` when it restarted and lost events it had
        not delivered (F2). A different or unverified shoe is :meth:`shoe_unapproved`."""
        model = self._model
        model.link_up = True
        if events_lost:
            # The shoe restarted: what it reported before about itself no longer stands.
            model.jammed = False
            model.door_open = False
        return self._maybe(model.link_restored, Reconnect(bool(events_lost)), "link_restored")

    def restarted_mid_round(self, round_id: str, reason: str) -> list[Decision]:
        """At start-up: the journal shows ``round_id`` open when the controller stopped.
        The round is void, the gate stays locked, and an attendant must clear (F3)."""
        if not round_id.strip() or not reason.strip():
            raise ProcedureError("recording a restart needs the round id and the reason (F3)")
        if self._model.rounds_opened or self.phase not in (Phase.NO_SHOE, Phase.IDLE):
            raise ProcedureError(
                "a controller restart is recorded only at start-up, before any round (F3)"
            )
        return self._fire(self._model.restarted_mid_round, Restart(round_id, reason))

    # --- plumbing ----------------------------------------------------------------------

    def _fire(self, trigger: Trigger, data: object) -> list[Decision]:
        model = self._model
        model.out = []
        trigger(data=data)
        decisions, model.out = model.out, []
        return decisions

    def _maybe(self, trigger: Trigger, data: object, name: str) -> list[Decision]:
        """Fire an event from the shoe or the link only where it means something."""
        if not self.accepts(name):
            return []
        return self._fire(trigger, data)

    def _require(self, name: str) -> None:
        if not self.accepts(name):
            raise ProcedureError(self._refusal(name))

    def _refusal(self, name: str) -> str:
        phase = self.phase
        what = _WHAT.get(name, name.replace("_", " "))
        round_id = self.round_id
        if phase is Phase.FAULT:
            codes = ", ".join(self.faults) or "fault"
            return f"{what} is blocked by a fault ({codes}): an attendant must clear it (F1)"
        in_round = phase in ROUND
        if name in ("no_more_bets", "set_start") and phase is Phase.NO_SHOE:
            return f"{what} needs an approved shoe: connect a shoe on the approved list (A1)"
        if name == "no_more_bets":
            if in_round:
                return (
                    f"bets are already closed for round {round_id}: the wagered positions "
                    "are frozen (A3)"
                )
            return "no deck is loaded: load a shuffled deck before no more bets (A2)"
        if name == "set_start":
            if phase is Phase.DECK_LOADED:
                return "announce no more bets before setting the starting position (A3)"
            if in_round:
                return (
                    f"the starting position of round {round_id} is already set; it cannot "
                    "be set twice (B1)"
                )
            return "no round is open: load a deck and close the bets first (A2, A3)"
        if name == "wager_settled":
            if not self._rules.dice_wager:
                return "this table does not offer the dice wager (table.dice_wager) (B2)"
            if phase in (Phase.DECK_LOADED, Phase.BETS_CLOSED):
                return "set the starting position before settling the dice wager (B1, B2)"
            return "no dice wager is waiting to be settled (B2)"
        if name == "stub_counted":
            if phase is Phase.DEALING:
                return (
                    f"the deal is not complete: {self.cards_dealt} of "
                    f"{self._rules.deal_size} cards dealt; count the stub after the last "
                    "card (D1)"
                )
            if phase in ON_TABLE:
                return f"the stub of round {round_id} is already counted (D1)"
            return "no stub count is expected now (D1)"
        if name == "misdeal_determination":
            return (
                "no misdeal determination is pending: it is asked when the stub is not "
                f"{self._rules.stub_size} (D2)"
            )
        if phase is Phase.MISDEAL_REVIEW:
            return "determine whether the cards were misdealt first (D2)"
        if phase in IN_SHOE:
            return "the deal and the stub count are not finished: nothing to close yet (E2)"
        return "there is no dealt round to close (E2)"
