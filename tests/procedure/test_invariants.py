"""Invariants that hold after any sequence of inputs, regular or not (hypothesis stateful).

Whatever the shoe, the link and the people do: the gate opens only for an approved shoe on
a live link (A1, F2), a fault always holds the gate locked (F1), no public decision carries
an identity (E1), a short deck the shoe read whole never ends dealt whatever anyone counts
(D4), the person who entered a stub count never also accepts it (E5), the round record
shows only the banker and the wagered hands (E2), cards go round in order and never beyond
the deal (C1, C2), a refused input changes nothing, and the state changes form one unbroken
chain (E3).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from firmware_protocol import Card, GateMode
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import (
    LINK_GRACE,
    CardAssigned,
    Decision,
    Disclosure,
    GateCommand,
    Outcome,
    Phase,
    Procedure,
    RoundClosed,
    RoundEnded,
    RoundOpened,
    StartPositionSet,
    StateChanged,
    StubAccepted,
    StubCounted,
    TableRules,
    UnreadCardPolicy,
)
from shoe_controller.procedure.declarations import DECLARATIONS
from tests.procedure.people import DEALER, SUPERVISOR, supervisor

#: The declared input each of the model's inputs gives, where the names differ.
DECLARED = {"set_start": "start_by_dice", "attendant_clear": "clear_fault"}

DECK = TableRules().deck
#: The people at the table: a dealer and two supervisors (E5 needs two people).
COUNTERS = (DEALER, SUPERVISOR, supervisor("super-2"))
ACCEPTERS = (SUPERVISOR, supervisor("super-2"))


def _cards_in(value: object) -> Iterator[Card]:
    if isinstance(value, Card):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _cards_in(getattr(value, field.name))
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _cards_in(item)


class ProcedureMachine(RuleBasedStateMachine):
    @initialize(dice_wager=st.booleans(), record_unknown=st.booleans(), short=st.booleans())
    def setup(self, dice_wager: bool, record_unknown: bool, short: bool) -> None:
        policy = UnreadCardPolicy.RECORD_UNKNOWN if record_unknown else UnreadCardPolicy.VOID
        self.rules = TableRules(dice_wager=dice_wager, unread_card_policy=policy)
        self.procedure = Procedure(self.rules)
        self.approved = False
        self.link_up = False
        self.now = 0.0
        self.drawn = 0
        self.round_id = 0
        self.phase = Phase.NO_SHOE.value
        self.wagered: tuple[int, ...] = ()
        self.start = 0
        self.assigned = 0
        self.ended_rounds: set[str] = set()
        self.current = ""
        # Every deck of a short run lacks one card (the card-removal scam, D4).
        self.short = short
        self.deck = tuple(c for c in DECK if c != DECK[17]) if short else DECK
        # Nothing irregular happened since the round opened: the shoe read it whole.
        self.clean = False
        self.counting = ""
        self.counted_by = ""
        self.accepting = ""

    # --- applying an input and checking what came out ---------------------------------

    def _apply(self, name: str, call: Callable[[], list[Decision]]) -> None:
        p = self.procedure
        before = (p.phase, p.gate, p.round_id, p.cards_dealt, p.faults)
        try:
            decisions = call()
        except ProcedureError as refused:
            assert (p.phase, p.gate, p.round_id, p.cards_dealt, p.faults) == before
            given = DECLARED.get(name, name)
            if given in DECLARATIONS:
                # Each input meets only the refusals its declaration names (the API's
                # x-refusals, which the console has words for).
                allowed = {code.value for code in DECLARATIONS[given].may_refuse}
                assert refused.code in allowed, f"{given} refused with {refused.code}"
            return
        for decision in decisions:
            self._check(name, decision)

    def _check(self, name: str, decision: Decision) -> None:
        if decision.disclosure is Disclosure.PUBLIC:
            assert not list(_cards_in(decision)), decision
        if isinstance(decision, StateChanged):
            assert decision.old == self.phase
            self.phase = decision.new
        elif isinstance(decision, GateCommand) and decision.mode is not GateMode.LOCKED:
            assert self.approved and self.link_up, decision
            if decision.mode is GateMode.DEAL:
                # F5: never more than the window ahead of the cards decided so far.
                window = self.rules.gate_window
                assert decision.limit <= self.assigned + window, (decision, self.assigned)
        elif isinstance(decision, RoundOpened):
            self.current = decision.round_id
            self.assigned = 0
            self.clean = True
        elif isinstance(decision, StubCounted) and decision.source == "croupier":
            self.counted_by = self.counting
        elif isinstance(decision, StubAccepted):
            # E5: another person than the one who entered the count accepts it.
            assert self.accepting != self.counted_by, (self.accepting, self.counted_by)
        elif isinstance(decision, StartPositionSet):
            self.start = decision.start.position
        elif isinstance(decision, CardAssigned):
            assert self.current not in self.ended_rounds
            expected = (self.start - 1 + self.assigned) % 7 + 1
            assert decision.position == expected
            self.assigned += 1
            assert self.assigned <= 49
        elif isinstance(decision, RoundEnded):
            # D4: a short deck read whole is no dealt round, whoever counts what.
            assert not (self.clean and self.short and decision.outcome is Outcome.DEALT)
            assert decision.round_id not in self.ended_rounds
            self.ended_rounds.add(decision.round_id)
        elif isinstance(decision, RoundClosed):
            assert name == "close_round"
            assert [h.position for h in decision.hands] == [1, *decision.wagered]

    @invariant()
    def gate_locked_outside_the_deal(self) -> None:
        p = self.procedure
        if p.phase not in (Phase.DEALING, Phase.STUB_COUNT):
            assert p.gate is GateMode.LOCKED
        assert p.phase.value == self.phase

    # --- inputs -------------------------------------------------------------------------

    def _draw(self, card: Card | None, gate: GateMode, index: int) -> None:
        self._apply("card", lambda: self.procedure.card_drawn(index, card, gate))

    def _next_card(self, gate: GateMode) -> None:
        self.drawn += 1
        self._draw(self.deck[(self.drawn - 1) % len(self.deck)], gate, self.drawn)

    def _event(self, name: str, data: st.DataObject) -> None:
        p = self.procedure
        if name == "approve":
            self.approved = self.link_up = True
            self._apply(name, p.shoe_approved)
        elif name == "unapprove":
            self.approved = False
            self._apply(name, lambda: p.shoe_unapproved("not on the list"))
        elif name == "link_lost":
            self.link_up = False
            now = self.now
            self._apply(name, lambda: p.link_lost(now))
        elif name == "time_passes":
            self.now += data.draw(st.sampled_from([0.5, 3.0, LINK_GRACE]))
            now = self.now
            self._apply(name, lambda: p.tick(now))
        elif name == "events_lost":
            self._apply(name, lambda: p.events_lost("the shoe restarted"))
        elif name == "deck_loaded":
            self.drawn = 0
            self._apply(name, p.deck_loaded)
        elif name == "shoe_fault":
            self._apply(name, lambda: p.shoe_fault(3, "reader"))
        elif name == "jam_cleared":
            left = data.draw(st.booleans())
            self._apply(name, lambda: p.jam_cleared(left))
        elif name == "stray_card":
            card = data.draw(st.one_of(st.none(), st.sampled_from(DECK)))
            gate = data.draw(st.sampled_from(GateMode))
            self.drawn += 1
            self._draw(card, gate, self.drawn + data.draw(st.integers(-2, 2)))
        elif name == "double_card":
            index = self.drawn + 1
            self._apply(name, lambda: p.double_card(index))
        elif name == "shoe_empty":
            drawn = self.drawn
            self._apply(name, lambda: p.shoe_empty(drawn))
        else:
            self._apply(name, getattr(p, name))

    def _croupier(self, name: str, data: st.DataObject) -> None:
        p = self.procedure
        if name == "no_more_bets":
            wagered = data.draw(st.sets(st.integers(2, 7)))
            self._apply(name, lambda: p.no_more_bets(wagered, by=DEALER))
        elif name == "set_start":
            dice = data.draw(st.tuples(*[st.integers(1, 6)] * 3))
            self._apply(name, lambda: p.start_by_dice(*dice, by=DEALER))
        elif name == "stub_counted":
            count = data.draw(st.integers(0, 6))
            counter = data.draw(st.sampled_from(COUNTERS))
            self.counting = counter.name
            self._apply(name, lambda: p.stub_counted(count, by=counter))
        elif name == "accept_stub_count":
            accepter = data.draw(st.sampled_from(ACCEPTERS))
            self.accepting = accepter.name
            self._apply(name, lambda: p.accept_stub_count(by=accepter))
        elif name == "misdeal_determination":
            misdealt = data.draw(st.booleans())
            self._apply(name, lambda: p.misdeal_determination(misdealt, by=SUPERVISOR))
        elif name == "attendant_clear":
            void = data.draw(st.booleans())
            self._apply(name, lambda: p.clear_fault(by=supervisor("att"), void_round=void))
        elif name == "set_wagers":
            wagered = data.draw(st.sets(st.integers(2, 7)))
            self._apply(name, lambda: p.set_wagers(wagered, by=DEALER))
        elif name == "void_round":
            self._apply(name, lambda: p.void_round("a card face up", by=SUPERVISOR))
        elif name == "confirm_new_deck":
            self._apply(name, lambda: getattr(p, name)(by=SUPERVISOR))
        else:
            self._apply(name, lambda: getattr(p, name)(by=DEALER))

    @rule(data=st.data(), steps=st.integers(1, 12))
    def advance(self, data: st.DataObject, steps: int) -> None:  # noqa: C901 (one branch per input the model may give)
        """The regular next steps: what a well-run table does in the current phase."""
        for _ in range(steps):
            phase = self.procedure.phase
            if phase is Phase.NO_SHOE:
                self._event("approve", data)
            elif phase in (Phase.IDLE, Phase.CLOSED, Phase.VOID_MISDEAL, Phase.VOID_FAULT):
                self._event("deck_loaded", data)
            elif phase is Phase.SHUFFLE_CHECK:
                self._croupier("confirm_shuffle", data)
            elif phase is Phase.DECK_REMOVED:
                self._event("deck_loaded", data)
                self._croupier("confirm_new_deck", data)
            elif phase is Phase.DECK_LOADED:
                self._croupier("no_more_bets", data)
            elif phase is Phase.BETS_CLOSED:
                self._croupier("set_start", data)
            elif phase is Phase.START_SET:
                self._croupier("wager_settled", data)
            elif phase is Phase.DEALING:
                for _ in range(data.draw(st.integers(1, 49))):
                    if self.procedure.phase is Phase.DEALING:
                        self._next_card(GateMode.DEAL)
            elif phase is Phase.STUB_COUNT:
                if self.drawn >= len(self.deck):
                    self._event("shoe_empty", data)
                elif data.draw(st.booleans()):
                    self._next_card(GateMode.STUB)
                else:
                    # The shoe says empty with cards still in it: not a whole reading.
                    self.clean = False
                    self._event("shoe_empty", data)
            elif phase is Phase.STUB_CONFIRM:
                self._croupier("stub_counted", data)
            elif phase is Phase.STUB_DISPUTE:
                self._croupier("accept_stub_count", data)
            elif phase is Phase.MISDEAL_REVIEW:
                self._croupier("misdeal_determination", data)
            elif phase is Phase.DEALT:
                self._croupier("close_round", data)
            else:
                self.clean = False
                for resolve in ("jam_cleared", "door_closed", "approve"):
                    if resolve == "jam_cleared":
                        self._apply(resolve, lambda: self.procedure.jam_cleared(False))
                    else:
                        self._event(resolve, data)
                self._croupier("attendant_clear", data)

    @rule(
        data=st.data(),
        name=st.sampled_from(
            [
                "approve",
                "unapprove",
                "link_lost",
                "time_passes",
                "events_lost",
                "jam",
                "jam_cleared",
                "shoe_fault",
                "door_opened",
                "door_closed",
                "deck_loaded",
                "deck_removed",
                "stray_card",
                "double_card",
                "shoe_empty",
            ]
        ),
    )
    def irregular(self, data: st.DataObject, name: str) -> None:
        """Something happens at the shoe or on the link, expected or not."""
        self.clean = False
        self._event(name, data)

    @rule(
        data=st.data(),
        name=st.sampled_from(
            [
                "confirm_shuffle",
                "confirm_new_deck",
                "set_wagers",
                "no_more_bets",
                "set_start",
                "wager_settled",
                "stub_counted",
                "accept_stub_count",
                "misdeal_determination",
                "close_round",
                "attendant_clear",
                "void_round",
            ]
        ),
    )
    def croupier(self, data: st.DataObject, name: str) -> None:
        """A person's input, in turn or not."""
        self._croupier(name, data)


ProcedureMachine.TestCase.settings = settings(
    max_examples=120,
    stateful_step_count=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class TestProcedureInvariants(ProcedureMachine.TestCase):  # type: ignore[misc,name-defined]
    pytestmark = [
        pytest.mark.rule("A1"),
        pytest.mark.rule("C1"),
        pytest.mark.rule("C2"),
        pytest.mark.rule("D4"),
        pytest.mark.rule("E1"),
        pytest.mark.rule("E2"),
        pytest.mark.rule("E3"),
        pytest.mark.rule("E5"),
        pytest.mark.rule("F1"),
        pytest.mark.rule("F2"),
        pytest.mark.rule("F5"),
    ]
