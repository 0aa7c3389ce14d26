"""Why the procedure refuses a person's input now: one line naming the rule and what to do.

Each input has its own function; the phases in which no input is possible (a fault, a
stopped table) are answered first, for every input alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from shoe_controller.procedure.machine import IN_SHOE, ROUND, Phase

if TYPE_CHECKING:
    from shoe_controller.procedure.procedure import Procedure

_WHAT = {
    "set_wagers": "entering wagers",
    "no_more_bets": "announcing no more bets",
    "confirm_shuffle": "confirming the shuffle",
    "confirm_new_deck": "confirming a new deck",
    "set_start": "setting the starting position",
    "wager_settled": "settling the dice wager",
    "stub_counted": "counting the stub",
    "accept_stub_count": "accepting the stub's count",
    "misdeal_determination": "recording a misdeal determination",
    "close_round": "closing the round",
    "void_round": "ending the round void",
}


def refusal(procedure: Procedure, name: str) -> str:
    """Why ``procedure`` does not accept the input ``name`` in its current phase."""
    phase = procedure.phase
    what = _WHAT.get(name, name.replace("_", " "))
    if phase is Phase.FAULT:
        codes = ", ".join(procedure.faults) or "fault"
        return f"{what} is blocked by a fault ({codes}): an attendant must clear it (F1)"
    if phase is Phase.STOPPED:
        return f"{what} is not possible: the table controller has stopped (F4)"
    if name in ("no_more_bets", "set_wagers", "set_start") and phase is Phase.NO_SHOE:
        return f"{what} needs an approved shoe: connect a shoe on the approved list (A1)"
    return _BY_INPUT.get(name, _close_round)(procedure)


def _confirm_shuffle(procedure: Procedure) -> str:
    if procedure.phase is Phase.DECK_REMOVED:
        return "the deck must change: load a different deck and confirm it as new (D2)"
    if procedure.phase in ROUND:
        return f"round {procedure.round_id} is already open: its deck was confirmed (A2)"
    return "no deck is waiting in the shoe: load a shuffled deck first (A2)"


def _confirm_new_deck(procedure: Procedure) -> str:
    return "no deck had to leave the table: confirm the shuffle instead (A2)"


def _wagers(procedure: Procedure) -> str:
    if procedure.phase in ROUND:
        return (
            f"bets are already closed for round {procedure.round_id}: the wagered positions "
            "are frozen (A3)"
        )
    if procedure.phase is Phase.SHUFFLE_CHECK:
        return "confirm the shuffle and cut of the deck in the shoe first (A2)"
    return "no deck is loaded: load a shuffled deck before no more bets (A2)"


def _set_start(procedure: Procedure) -> str:
    if procedure.phase is Phase.DECK_LOADED:
        return "announce no more bets before setting the starting position (A3)"
    if procedure.phase in ROUND:
        return (
            f"the starting position of round {procedure.round_id} is already set; it cannot "
            "be set twice (B1)"
        )
    return "no round is open: load a deck and close the bets first (A2, A3)"


def _wager_settled(procedure: Procedure) -> str:
    if not procedure.rules.dice_wager:
        return "this table does not offer the dice wager (table.dice_wager) (B2)"
    if procedure.phase in (Phase.DECK_LOADED, Phase.BETS_CLOSED):
        return "set the starting position before settling the dice wager (B1, B2)"
    return "no dice wager is waiting to be settled (B2)"


def _stub_counted(procedure: Procedure) -> str:
    rules = procedure.rules
    if procedure.phase is Phase.DEALING:
        return (
            f"the deal is not complete: {procedure.cards_dealt} of {rules.deal_size} cards "
            "dealt; count the stub after the last card (D1)"
        )
    if procedure.phase is Phase.STUB_COUNT:
        return (
            "the shoe has not finished the stub: wait until it reports itself empty, or take "
            "the remaining cards out of the shoe, then count them (D1)"
        )
    if procedure.phase in (Phase.MISDEAL_REVIEW, Phase.DEALT):
        return f"the stub of round {procedure.round_id} is already counted (D1)"
    return "no stub count is expected now (D1)"


def _accept_stub_count(procedure: Procedure) -> str:
    return "no croupier's count is waiting for a supervisor's acceptance (D1)"


def _void_round(procedure: Procedure) -> str:
    if procedure.phase is Phase.DEALT:
        return (
            f"round {procedure.round_id} is dealt and its hands are in play: close it after "
            "settlement (E2)"
        )
    return "no round is open whose outcome is still to decide (F6)"


def _misdeal_determination(procedure: Procedure) -> str:
    return (
        "no misdeal determination is pending: it is asked when the stub is not "
        f"{procedure.rules.stub_size} (D2)"
    )


def _close_round(procedure: Procedure) -> str:
    phase = procedure.phase
    if phase is Phase.MISDEAL_REVIEW:
        return "determine whether the cards were misdealt first (D2)"
    if phase in (Phase.STUB_CONFIRM, Phase.STUB_DISPUTE):
        return "count the stub and enter the count first (D1)"
    if phase in IN_SHOE:
        return "the deal and the stub count are not finished: nothing to close yet (E2)"
    return "there is no dealt round to close (E2)"


_BY_INPUT: dict[str, Callable[[Procedure], str]] = {
    "confirm_shuffle": _confirm_shuffle,
    "confirm_new_deck": _confirm_new_deck,
    "no_more_bets": _wagers,
    "set_wagers": _wagers,
    "set_start": _set_start,
    "wager_settled": _wager_settled,
    "stub_counted": _stub_counted,
    "accept_stub_count": _accept_stub_count,
    "misdeal_determination": _misdeal_determination,
    "void_round": _void_round,
    "close_round": _close_round,
}
