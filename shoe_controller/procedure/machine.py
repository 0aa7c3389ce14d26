"""The procedure's states and transitions, as one table, and the machine built from it.

The production machine and the documentation's diagram are built by :func:`build_machine`
from this same table. Guards are the model's predicates (``conditions``), side effects run on
entering states, and an exception in any callback sends the machine to ``fault``.
"""

from __future__ import annotations

import enum
from typing import Any, Final

from transitions import Machine


class Phase(enum.StrEnum):
    #: No approved shoe: nothing may be dealt (A1).
    NO_SHOE = "no_shoe"
    #: An approved shoe and no deck.
    IDLE = "idle"
    #: A shuffled deck is in the shoe, door closed; bets are open (A2).
    DECK_LOADED = "deck_loaded"
    #: No more bets: the wagered positions are frozen (A3).
    BETS_CLOSED = "bets_closed"
    #: The starting position is set; the dice wager is being settled (B1, B2).
    START_SET = "start_set"
    #: The gate lets the deal's cards out, one per turn (C1-C4).
    DEALING = "dealing"
    #: The deal is complete; the remaining cards leave the shoe to be counted (D1).
    STUB_COUNT = "stub_count"
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


P = Phase
#: The deck is in the shoe and the deal has not begun: the gate is locked (A3).
PRE_DEAL: Final = (P.DECK_LOADED, P.BETS_CLOSED, P.START_SET)
#: Cards of the round are in the shoe and dealing has not ended: a fault here voids.
LIVE: Final = (*PRE_DEAL, P.DEALING)
#: The round still has cards in the shoe (including the stub).
IN_SHOE: Final = (*LIVE, P.STUB_COUNT)
#: Every card has left the shoe; the round is open on the table.
ON_TABLE: Final = (P.MISDEAL_REVIEW, P.DEALT)
ROUND: Final = (*IN_SHOE, *ON_TABLE)
#: Between rounds: a new deck may be loaded.
BETWEEN: Final = (P.IDLE, P.CLOSED, P.VOID_MISDEAL, P.VOID_FAULT)
QUIET: Final = (P.NO_SHOE, *BETWEEN, P.DECK_REMOVED)
NOT_FAULT: Final = (*QUIET, *ROUND)


def _names(*phases: Phase) -> list[str]:
    return [phase.value for phase in phases]


def _t(
    trigger: str,
    source: Phase | tuple[Phase, ...],
    dest: Phase | None,
    **options: Any,
) -> dict[str, Any]:
    sources = source if isinstance(source, tuple) else (source,)
    return {
        "trigger": trigger,
        "source": _names(*sources),
        "dest": dest.value if dest is not None else None,
        **options,
    }


def _without(phases: tuple[Phase, ...], *removed: Phase) -> tuple[Phase, ...]:
    return tuple(phase for phase in phases if phase not in removed)


# Transitions are tried in this order; the first whose conditions hold is taken.
TRANSITIONS: Final = (
    # A1: the shoe
    _t("shoe_approved", P.NO_SHOE, P.DECK_REMOVED, conditions="deck_must_change"),
    _t("shoe_approved", P.NO_SHOE, P.IDLE),
    _t("shoe_unapproved", (*BETWEEN, P.DECK_REMOVED), P.NO_SHOE),
    _t("shoe_unapproved", IN_SHOE, P.FAULT, before="fault_not_approved"),
    _t("shoe_unapproved", P.FAULT, None, before="fault_not_approved"),
    # A2: the deck
    _t(
        "deck_loaded",
        (*BETWEEN, P.DECK_REMOVED),
        P.DECK_LOADED,
        conditions="shoe_ready",
        before="open_round",
    ),
    _t("deck_loaded", QUIET, P.FAULT, before="fault_shoe_not_ready"),
    _t("deck_loaded", ROUND, P.FAULT, before="fault_unexpected_deck"),
    _t("deck_loaded", P.FAULT, None, before="fault_unexpected_deck"),
    _t("deck_removed", LIVE, P.FAULT, before="fault_deck_removed"),
    _t(
        "deck_removed", P.FAULT, None, conditions="fault_in_live_round", before="fault_deck_removed"
    ),
    # A3, B1, B2: before the first card
    _t("no_more_bets", P.DECK_LOADED, P.BETS_CLOSED, before="close_bets"),
    _t(
        "set_start",
        P.BETS_CLOSED,
        P.START_SET,
        conditions="dice_wager_offered",
        before="record_start",
    ),
    _t("set_start", P.BETS_CLOSED, P.DEALING, before="record_start"),
    _t("wager_settled", P.START_SET, P.DEALING, before="settle_wager"),
    # C1-C3, D3: cards
    _t(
        "card_drawn", P.DEALING, P.FAULT, conditions="deal_card_irregular", before="fault_deal_card"
    ),
    _t("card_drawn", P.DEALING, P.STUB_COUNT, conditions="deal_card_is_last", before="assign_card"),
    _t("card_drawn", P.DEALING, None, before="assign_card"),
    _t(
        "card_drawn",
        P.STUB_COUNT,
        P.FAULT,
        conditions=["card_in_stub_mode", "stub_card_irregular"],
        before="fault_stub_card",
    ),
    _t("card_drawn", P.STUB_COUNT, None, conditions="card_in_stub_mode", before="record_stub_card"),
    _t("card_drawn", _without(NOT_FAULT, P.DEALING), P.FAULT, before="fault_unexpected_card"),
    _t("card_drawn", P.FAULT, None, before="fault_unexpected_card"),
    # C4: double card, jam, door
    _t("double_card", P.DEALING, P.VOID_MISDEAL, before="end_on_double_card"),
    _t("double_card", P.STUB_COUNT, None, before="note_stub_double"),
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
    _t("door_opened", P.FAULT, None, conditions="fault_in_live_round", before="fault_door"),
    # D1, D2: the stub
    _t("shoe_empty", P.DEALING, P.DECK_REMOVED, before="end_on_short_deck"),
    _t("shoe_empty", PRE_DEAL, P.FAULT, before="fault_shoe_empty"),
    _t("shoe_empty", P.STUB_COUNT, P.DEALT, conditions="stub_complete", before="count_stub"),
    _t("shoe_empty", P.STUB_COUNT, P.MISDEAL_REVIEW, before="count_stub"),
    _t("stub_counted", P.STUB_COUNT, P.DEALT, conditions="stub_complete", before="count_stub"),
    _t("stub_counted", P.STUB_COUNT, P.MISDEAL_REVIEW, before="count_stub"),
    _t(
        "misdeal_determination",
        P.MISDEAL_REVIEW,
        P.VOID_MISDEAL,
        conditions="determined_misdealt",
        before="record_determination",
    ),
    _t("misdeal_determination", P.MISDEAL_REVIEW, P.DECK_REMOVED, before="record_determination"),
    # E2: the round record
    _t("close_round", P.DEALT, P.CLOSED, after="publish_round_record"),
    # F1-F3: faults
    _t("link_lost", IN_SHOE, P.FAULT, before="fault_link_lost"),
    _t("link_restored", IN_SHOE, P.FAULT, conditions="events_lost", before="fault_events_lost"),
    _t(
        "link_restored",
        P.FAULT,
        None,
        conditions=["events_lost", "fault_in_shoe_round"],
        before="fault_events_lost",
    ),
    _t("restarted_mid_round", (P.NO_SHOE, P.IDLE), P.FAULT, before="fault_restart"),
    *(
        _t("attendant_clear", P.FAULT, target, conditions="clear_leads_here", before="clear_fault")
        for target in NOT_FAULT
    ),
    _t("internal_fault", NOT_FAULT, P.FAULT),
)

#: What each state does on entry, after recording the change and setting the gate.
ON_ENTER: Final = {
    P.NO_SHOE: ["forget_approval"],
    P.MISDEAL_REVIEW: ["ask_misdeal"],
    P.DECK_REMOVED: ["require_new_deck"],
}


def build_machine(model: object, machine_cls: type[Machine] = Machine, **options: Any) -> Machine:
    """The procedure's machine for ``model``: queued, no automatic transitions, callbacks
    receiving the event, every exception routed to the model's ``route_exception``."""
    states = [
        {
            "name": phase.value,
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
        transitions=list(TRANSITIONS),
        initial=P.NO_SHOE.value,
        auto_transitions=False,
        queued=True,
        send_event=True,
        on_exception="route_exception",
        finalize_event="publish_round_end",
        **options,
    )
