"""The procedure's states and transitions, as one table, and the machine built from it.

The production machine and the documentation's diagram are built by :func:`build_machine`
from this same table. States are the :class:`Phase` enum; guards are the model's
predicates (``conditions``); side effects run on entering states; an exception in any
callback sends the machine to ``fault``. The attendant's clear has one transition to each
phase it may lead to, the model's :meth:`clear_destination` choosing by condition
(:class:`LeadsTo`). Only the public interface of ``transitions`` is used.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Final, Protocol, cast

from transitions import EventData, Machine


class Phase(enum.StrEnum):
    #: No approved shoe: nothing may be dealt (A1).
    NO_SHOE = "no_shoe"
    #: An approved shoe and no deck.
    IDLE = "idle"
    #: A deck is in the shoe: the croupier confirms its shuffle and cut (A2).
    SHUFFLE_CHECK = "shuffle_check"
    #: The round is open and bets are open: wagers are entered (A2, A3).
    DECK_LOADED = "deck_loaded"
    #: No more bets: the wagered positions are frozen (A3).
    BETS_CLOSED = "bets_closed"
    #: The starting position is set by dice; the dice wager is being settled (B1, B2).
    START_SET = "start_set"
    #: The gate lets the deal's cards out, one window at a time (C1-C4, F5).
    DEALING = "dealing"
    #: The deal is complete; the remaining cards pass the shoe's reader (D1).
    STUB_COUNT = "stub_count"
    #: The shoe finished the stub: the croupier counts it and enters the count (D1).
    STUB_CONFIRM = "stub_confirm"
    #: The figures disagree with the croupier's count: a supervisor accepts it (D1).
    STUB_DISPUTE = "stub_dispute"
    #: The stub is not 4: waiting for the croupier's determination (D2).
    MISDEAL_REVIEW = "misdeal_review"
    #: The hands are in play (outcome ``dealt``).
    DEALT = "dealt"
    #: The croupier closed the round; the round record is published (E2).
    CLOSED = "closed"
    VOID_MISDEAL = "void_misdeal"
    VOID_FAULT = "void_fault"
    #: The deck left the table (D2, D3): only a different deck leaves this state.
    DECK_REMOVED = "deck_removed"
    #: Dealing is blocked until an attendant clears the fault (F1).
    FAULT = "fault"
    #: The service stopped (F4); a new start begins again from ``no_shoe``.
    STOPPED = "stopped"


P = Phase
#: The round is open and the deal has not begun: the gate is locked (A3).
PRE_DEAL: Final = (P.DECK_LOADED, P.BETS_CLOSED, P.START_SET)
#: Cards of the round are in the shoe and dealing has not ended: a fault here voids.
LIVE: Final = (*PRE_DEAL, P.DEALING)
#: The round still has cards in the shoe (including the stub).
IN_SHOE: Final = (*LIVE, P.STUB_COUNT)
#: Every card has left the shoe; the round is open on the table.
ON_TABLE: Final = (P.STUB_CONFIRM, P.STUB_DISPUTE, P.MISDEAL_REVIEW, P.DEALT)
#: The round is open and its outcome not yet decided: a supervisor may end it void (F6).
UNDECIDED: Final = (*IN_SHOE, P.STUB_CONFIRM, P.STUB_DISPUTE, P.MISDEAL_REVIEW)
ROUND: Final = (*IN_SHOE, *ON_TABLE)
#: Between rounds: a new deck may be loaded.
BETWEEN: Final = (P.IDLE, P.CLOSED, P.VOID_MISDEAL, P.VOID_FAULT)
#: No round is open and nothing is wrong.
QUIET: Final = (P.NO_SHOE, *BETWEEN, P.SHUFFLE_CHECK, P.DECK_REMOVED)
NOT_FAULT: Final = (*QUIET, *ROUND)
#: Where the attendant's clear may lead (the diagram draws one edge to each).
CLEAR_TARGETS: Final = (
    P.NO_SHOE,
    *BETWEEN,
    P.SHUFFLE_CHECK,
    P.DECK_REMOVED,
    *ROUND,
)


#: What an attendant's clear needs, whatever it leads to (F1, F2).
CLEAR_GUARDS: Final = ("clear_allowed_by_shoe", "shoe_back_or_voiding")


class _Clears(Protocol):
    def clear_destination(self, event: EventData) -> Phase: ...


@dataclass(frozen=True)
class LeadsTo:
    """The condition of the attendant's clear to ``phase``: the model's
    ``clear_destination`` is ``phase``. The diagram names it by :attr:`__name__`."""

    phase: Phase

    @property
    def __name__(self) -> str:
        return "clear_target"

    def __call__(self, event: EventData) -> bool:
        model = cast(_Clears, event.model)
        return model.clear_destination(event) is self.phase


def _without(phases: tuple[Phase, ...], *removed: Phase) -> tuple[Phase, ...]:
    return tuple(phase for phase in phases if phase not in removed)


def _t(
    trigger: str,
    source: Phase | tuple[Phase, ...],
    dest: Phase | None,
    **options: Any,
) -> dict[str, Any]:
    sources = source if isinstance(source, tuple) else (source,)
    return {"trigger": trigger, "source": list(sources), "dest": dest, **options}


# Transitions are tried in this order; the first whose conditions hold is taken.
TRANSITIONS: Final = (
    # F3: the journal taken over at start-up
    _t("recover", P.NO_SHOE, P.FAULT, conditions="carry_needs_attendant", before="fault_restart"),
    _t("recover", P.NO_SHOE, P.DEALT, conditions="carry_hands_in_play"),
    _t(
        "recover",
        P.NO_SHOE,
        None,
        conditions="carry_crashed",
        before="note_unclean_stop",
        after="ask_shoe",
    ),
    _t("recover", P.NO_SHOE, None, after="ask_shoe"),
    # A1: the shoe
    _t("shoe_approved", P.NO_SHOE, P.DECK_REMOVED, conditions="deck_must_change"),
    _t("shoe_approved", P.NO_SHOE, P.SHUFFLE_CHECK, conditions="deck_is_waiting"),
    _t("shoe_approved", P.NO_SHOE, P.VOID_FAULT, conditions="deck_is_spent"),
    _t("shoe_approved", P.NO_SHOE, P.IDLE),
    _t("shoe_approved", P.FAULT, None, after="tell_clear_possible"),
    _t("shoe_unapproved", _without(QUIET, P.NO_SHOE), P.NO_SHOE),
    _t("shoe_unapproved", IN_SHOE, P.FAULT, before="fault_not_approved"),
    _t("shoe_unapproved", P.FAULT, None, before="fault_not_approved"),
    _t("shoe_changed", IN_SHOE, P.FAULT, before="fault_shoe_changed"),
    _t(
        "shoe_changed", P.FAULT, None, conditions="fault_round_in_shoe", before="fault_shoe_changed"
    ),
    _t("shoe_changed", P.SHUFFLE_CHECK, P.IDLE),
    # A2: the deck
    _t("deck_loaded", BETWEEN, P.SHUFFLE_CHECK),
    _t("deck_loaded", P.DECK_REMOVED, None, after="ask_new_deck"),
    _t("deck_loaded", IN_SHOE, P.FAULT, before="fault_unexpected_deck"),
    _t(
        "deck_loaded",
        P.FAULT,
        None,
        conditions="fault_round_in_shoe",
        before="fault_unexpected_deck",
    ),
    _t("deck_removed", LIVE, P.FAULT, before="fault_deck_removed"),
    _t("deck_removed", P.FAULT, None, conditions="fault_round_live", before="fault_deck_removed"),
    _t("deck_removed", P.STUB_COUNT, P.STUB_CONFIRM, before="note_stub_taken_out"),
    _t("deck_removed", P.SHUFFLE_CHECK, P.IDLE),
    _t("deck_ready", BETWEEN, P.SHUFFLE_CHECK, conditions="deck_is_waiting"),
    _t("await_shoe", BETWEEN, P.NO_SHOE),
    _t(
        "confirm_shuffle",
        P.SHUFFLE_CHECK,
        P.DECK_LOADED,
        conditions="clock_lets_round_open",
        before="open_round",
    ),
    _t(
        "confirm_new_deck",
        P.DECK_REMOVED,
        P.DECK_LOADED,
        conditions=["new_deck_waiting", "clock_lets_round_open"],
        before="open_round",
    ),
    # A3, B1, B2: before the first card
    _t("set_wagers", P.DECK_LOADED, None, before="record_wagers"),
    _t("ask_for_wagers", P.DECK_LOADED, None, before="ask_wagers_first"),
    _t("no_more_bets", P.DECK_LOADED, P.BETS_CLOSED, before="close_bets"),
    _t(
        "set_start",
        P.BETS_CLOSED,
        P.START_SET,
        conditions="dice_wager_due",
        before="record_start",
    ),
    _t("set_start", P.BETS_CLOSED, P.DEALING, before="record_start"),
    _t("wager_settled", P.START_SET, P.DEALING, before="settle_wager"),
    # C1-C3, D3: cards
    _t(
        "card_drawn", P.DEALING, P.FAULT, conditions="deal_card_irregular", before="fault_deal_card"
    ),
    _t("card_drawn", P.DEALING, P.STUB_COUNT, conditions="deal_card_is_last", before="assign_card"),
    _t("card_drawn", P.DEALING, None, before="assign_card", after="advance_gate"),
    _t(
        "card_drawn",
        P.STUB_COUNT,
        P.FAULT,
        conditions=["card_in_stub_mode", "stub_card_irregular"],
        before="fault_stub_card",
    ),
    _t(
        "card_drawn",
        P.STUB_COUNT,
        None,
        conditions="card_in_stub_mode",
        before="record_stub_card",
        after="advance_gate",
    ),
    _t("card_drawn", _without(NOT_FAULT, P.DEALING), P.FAULT, before="fault_unexpected_card"),
    _t("card_drawn", P.FAULT, None, before="fault_unexpected_card"),
    # C4: double card, jam, door
    _t("double_card", P.DEALING, P.VOID_MISDEAL, before="end_on_double_card"),
    _t("double_card", P.STUB_COUNT, None, before="note_stub_double", after="advance_gate"),
    _t(
        "double_card",
        _without(NOT_FAULT, P.DEALING, P.STUB_COUNT),
        P.FAULT,
        before="fault_unexpected_double",
    ),
    _t("double_card", P.FAULT, None, before="fault_unexpected_double"),
    _t("jam", NOT_FAULT, P.FAULT, before="fault_jam"),
    _t("jam", P.FAULT, None, before="fault_jam"),
    _t("shoe_fault", NOT_FAULT, P.FAULT, before="fault_reported_by_shoe"),
    _t("shoe_fault", P.FAULT, None, before="fault_reported_by_shoe"),
    _t("jam_cleared", P.STUB_COUNT, None, conditions="card_left", before="card_left_in_jam"),
    _t(
        "jam_cleared",
        _without(NOT_FAULT, P.STUB_COUNT),
        P.FAULT,
        conditions="card_left",
        before="card_left_in_jam",
    ),
    _t("jam_cleared", P.FAULT, None, conditions="card_left", before="card_left_in_jam"),
    _t("door_opened", LIVE, P.FAULT, before="fault_door"),
    _t("door_opened", P.FAULT, None, conditions="fault_round_live", before="fault_door"),
    # The shoe reports no jam and its door closed: the gate it refused is set again; in a
    # fault, the attendant may clear now.
    _t("shoe_ready", P.FAULT, None, conditions="shoe_is_free", after="tell_clear_possible"),
    _t(
        "shoe_ready",
        (P.DEALING, P.STUB_COUNT),
        None,
        conditions=["shoe_is_free", "gate_is_open"],
        before="resend_gate",
    ),
    # D1, D2, D3: the stub, the deck's count and composition
    _t("shoe_empty", P.DEALING, P.FAULT, conditions="deck_came_back", before="fault_deck_back"),
    _t("shoe_empty", P.DEALING, P.DECK_REMOVED, before="end_on_short_deck"),
    _t("shoe_empty", PRE_DEAL, P.FAULT, before="fault_shoe_empty"),
    _t("shoe_empty", P.STUB_COUNT, P.FAULT, conditions="deck_came_back", before="fault_deck_back"),
    _t("shoe_empty", P.STUB_COUNT, P.STUB_CONFIRM, before="count_stub_by_shoe"),
    _t("stub_counted", P.STUB_CONFIRM, P.DEALT, conditions="stub_agrees", before="count_stub"),
    _t("stub_counted", P.STUB_CONFIRM, P.STUB_DISPUTE, before="count_stub"),
    _t("stub_counted", P.STUB_DISPUTE, P.DEALT, conditions="stub_agrees", before="count_stub"),
    _t("stub_counted", P.STUB_DISPUTE, None, before="count_stub", after="ask_stub_accepted"),
    _t(
        "accept_stub_count",
        P.STUB_DISPUTE,
        P.DEALT,
        conditions=["accepted_by_another", "accepted_stub_complete"],
        before="accept_stub",
    ),
    _t(
        "accept_stub_count",
        P.STUB_DISPUTE,
        P.MISDEAL_REVIEW,
        conditions="accepted_by_another",
        before="accept_stub",
    ),
    _t(
        "misdeal_determination",
        P.MISDEAL_REVIEW,
        P.VOID_MISDEAL,
        conditions="determined_misdealt",
        unless="deck_leaves_whatever_determined",
        before="record_determination",
    ),
    _t("misdeal_determination", P.MISDEAL_REVIEW, P.DECK_REMOVED, before="record_determination"),
    # E2: the round record
    _t("close_round", P.DEALT, P.CLOSED, after="publish_round_record"),
    # F1-F5: faults, the link, stopping
    _t("link_timeout", IN_SHOE, P.FAULT, before="fault_link_lost"),
    _t("events_lost", IN_SHOE, P.FAULT, before="fault_events_lost"),
    _t("events_lost", P.FAULT, None, conditions="fault_round_in_shoe", before="fault_events_lost"),
    _t("events_lost", P.SHUFFLE_CHECK, P.IDLE, before="note_events_lost_between_rounds"),
    _t(
        "events_lost",
        _without(QUIET, P.SHUFFLE_CHECK),
        None,
        before="note_events_lost_between_rounds",
    ),
    _t("gate_refused", (P.DEALING, P.STUB_COUNT), P.FAULT, before="fault_gate_refused"),
    _t("gate_refused", P.FAULT, None, before="fault_gate_refused"),
    *(
        _t(
            "attendant_clear",
            P.FAULT,
            phase,
            conditions=[*CLEAR_GUARDS, LeadsTo(phase)],
            before="clear_fault",
        )
        for phase in CLEAR_TARGETS
    ),
    # F6: a supervisor ends an undecided round void, with a reason
    _t("void_round", IN_SHOE, P.VOID_FAULT, before="end_void"),
    _t("void_round", _without(UNDECIDED, *IN_SHOE), P.DECK_REMOVED, before="end_void"),
    _t("internal_fault", NOT_FAULT, P.FAULT),
    _t("stop", (*NOT_FAULT, P.FAULT), P.STOPPED, before="wind_up"),
)

#: What the shoe and the link report of themselves: taken in every phase but ``stopped``
#: (where nothing else is done with it, the machine only notes it), so that the shoe's
#: condition is always the one it last reported.
REPORTS: Final = (
    "clock",
    "time",
    "link_up",
    "link_lost",
    "shoe_approved",
    "shoe_unapproved",
    "events_lost",
    "deck_loaded",
    "deck_removed",
    "jam",
    "jam_cleared",
    "door_opened",
    "door_closed",
)
#: The model's method that notes what an input reports, before any transition is tried
#: (the machine's ``prepare_event``).
INTAKE: Final = {
    "recover": "take_over",
    "clock": "note_clock",
    "time": "note_time_passed",
    "link_up": "note_link_up",
    "link_lost": "note_link_lost",
    "link_timeout": "note_link_timeout",
    "shoe_approved": "note_approved",
    "shoe_unapproved": "note_unapproved",
    "events_lost": "note_events_lost",
    "deck_loaded": "note_deck_loaded",
    "deck_removed": "note_deck_removed",
    "jam": "note_jam",
    "jam_cleared": "note_jam_cleared",
    "door_opened": "note_door_opened",
    "door_closed": "note_door_closed",
}
#: A gate command refused by a shoe that reports a jam or its door open is expected: it is
#: noted and sent again when that ends (tried first, in every phase but ``stopped``).
HELD_GATE: Final = _t(
    "gate_refused", (*NOT_FAULT, P.FAULT), None, conditions="shoe_is_held", before="defer_gate"
)


def _noted() -> tuple[dict[str, Any], ...]:
    """For each report, a transition that only notes it from the phases where nothing
    else happens."""
    noted = []
    for trigger in REPORTS:
        taken = {
            source
            for transition in TRANSITIONS
            if transition["trigger"] == trigger
            for source in transition["source"]
        }
        rest = tuple(p for p in Phase if p is not P.STOPPED and p not in taken)
        if rest:
            noted.append(_t(trigger, rest, None))
    return tuple(noted)


NOTED: Final = _noted()

#: What each state does on entry, after recording the change and setting the gate.
ON_ENTER: Final = {
    P.NO_SHOE: ["forget_approval", "ask_shoe"],
    P.SHUFFLE_CHECK: ["ask_shuffle"],
    P.DECK_LOADED: ["ask_wagers"],
    P.BETS_CLOSED: ["ask_start"],
    P.START_SET: ["ask_wager_settled"],
    P.DEALING: ["mark_gate_opened", "ask_deal"],
    P.STUB_COUNT: ["ask_wait_stub"],
    P.STUB_CONFIRM: ["ask_stub_count"],
    P.STUB_DISPUTE: ["ask_stub_accepted"],
    P.MISDEAL_REVIEW: ["ask_misdeal"],
    P.DEALT: ["ask_close"],
    P.CLOSED: ["next_deck"],
    P.VOID_MISDEAL: ["next_deck"],
    P.VOID_FAULT: ["next_deck"],
    P.IDLE: ["next_deck"],
    P.DECK_REMOVED: ["require_new_deck"],
    P.FAULT: ["ask_attendant"],
}


def build_machine(
    model: object, machine_cls: type[Machine] = Machine, *, drawn: bool = False, **options: Any
) -> Machine:
    """The procedure's machine for ``model``: queued, no automatic transitions, callbacks
    receiving the event, every exception routed to the model's ``route_exception``.

    For a diagram (``drawn``), the transitions that only note a report, and those every
    phase has (:data:`UNDRAWN`), are left out."""
    table = [HELD_GATE, *TRANSITIONS, *NOTED]
    if drawn:
        table = [t for t in TRANSITIONS if t["trigger"] not in UNDRAWN]
    states = [
        {
            "name": phase,
            "on_enter": [
                "record_state_change",
                *(["enter_fault"] if phase is P.FAULT else []),
                "sync_gate",
                *ON_ENTER.get(phase, []),
            ],
            **({"on_exit": ["leave_fault"]} if phase is P.FAULT else {}),
        }
        for phase in Phase
    ]
    return machine_cls(
        model=model,
        states=states,
        transitions=table,
        initial=P.NO_SHOE,
        auto_transitions=False,
        queued=True,
        send_event=True,
        prepare_event="take_input",
        on_exception="route_exception",
        finalize_event="finish_step",
        **options,
    )


#: Triggers left out of the diagram: every phase leads to ``stopped`` and to ``fault``
#: by them, which docs/procedure.md says in words.
UNDRAWN: Final = ("stop", "internal_fault")


def callback_names() -> set[str]:
    """Every model method the table names (callbacks, conditions): a test checks that each
    exists, so a misspelt name fails in CI rather than as a fault at a table."""
    names = {"take_input", "route_exception", "finish_step", "record_state_change"}
    names.add("clear_destination")  # what LeadsTo asks
    names |= {"enter_fault", "sync_gate", "leave_fault", *INTAKE.values()}
    for callbacks in ON_ENTER.values():
        names.update(callbacks)
    for transition in (HELD_GATE, *TRANSITIONS):
        for key in ("conditions", "unless", "before", "after"):
            value = transition.get(key)
            if isinstance(value, str):
                names.add(value)
            elif isinstance(value, list):
                names.update(name for name in value if isinstance(name, str))
    return names
