"""Why the procedure refuses a person's input now: one line naming the rule and what to do,
and a stable code with the values its words need, for those who word it themselves (the
console, in its own languages).

Each input has its own function; the phases in which no input is possible (a fault, a
stopped table) are answered first, for every input alike.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure.machine import IN_SHOE, ROUND, Phase

if TYPE_CHECKING:
    from shoe_controller.procedure.procedure import Procedure


class RefusalCode(enum.StrEnum):
    """Every reason the procedure gives for refusing an input in its current phase."""

    FAULT = "fault"
    STOPPED = "stopped"
    NO_SHOE = "no_shoe"
    DECK_MUST_CHANGE = "deck_must_change"
    DECK_CONFIRMED = "deck_confirmed"
    NO_DECK_WAITING = "no_deck_waiting"
    NO_DECK_TO_CHANGE = "no_deck_to_change"
    BETS_CLOSED = "bets_closed"
    SHUFFLE_FIRST = "shuffle_first"
    NO_DECK = "no_deck"
    NO_MORE_BETS_FIRST = "no_more_bets_first"
    START_SET = "start_set"
    NO_ROUND = "no_round"
    NO_DICE_WAGER = "no_dice_wager"
    START_FIRST = "start_first"
    NO_DICE_WAGER_PENDING = "no_dice_wager_pending"
    DEAL_INCOMPLETE = "deal_incomplete"
    STUB_UNFINISHED = "stub_unfinished"
    STUB_COUNTED = "stub_counted"
    NO_STUB_COUNT = "no_stub_count"
    NO_COUNT_TO_ACCEPT = "no_count_to_accept"
    HANDS_IN_PLAY = "hands_in_play"
    NOTHING_TO_VOID = "nothing_to_void"
    NO_DETERMINATION = "no_determination"
    DETERMINATION_FIRST = "determination_first"
    COUNT_FIRST = "count_first"
    DEAL_UNFINISHED = "deal_unfinished"
    NOTHING_TO_CLOSE = "nothing_to_close"


#: The values each code carries, by name: the round's id, the fault codes, card counts.
VALUES: Mapping[RefusalCode, tuple[str, ...]] = {
    **dict.fromkeys(RefusalCode, ()),
    RefusalCode.FAULT: ("faults",),
    RefusalCode.DECK_CONFIRMED: ("round",),
    RefusalCode.BETS_CLOSED: ("round",),
    RefusalCode.START_SET: ("round",),
    RefusalCode.DEAL_INCOMPLETE: ("dealt", "deal_size"),
    RefusalCode.STUB_COUNTED: ("round",),
    RefusalCode.HANDS_IN_PLAY: ("round",),
    RefusalCode.NO_DETERMINATION: ("stub_size",),
}


@dataclass(frozen=True)
class Refusal:
    """A refusal: its code, its English line, and the values the code carries."""

    code: RefusalCode
    message: str
    values: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if tuple(self.values) != VALUES[self.code]:
            raise ValueError(f"refusal {self.code} carries {VALUES[self.code]}, not {self.values}")

    def error(self) -> ProcedureError:
        return ProcedureError(self.message, code=self.code.value, values=self.values)


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

R = RefusalCode


def refusal(procedure: Procedure, name: str) -> Refusal:
    """Why ``procedure`` does not accept the input ``name`` in its current phase."""
    phase = procedure.phase
    what = _WHAT.get(name, name.replace("_", " "))
    if phase is Phase.FAULT:
        faults = [code.value for code in procedure.faults]
        codes = ", ".join(faults) or "fault"
        return Refusal(
            R.FAULT,
            f"{what} is blocked by a fault ({codes}): an attendant must clear it (F1)",
            {"faults": faults},
        )
    if phase is Phase.STOPPED:
        return Refusal(R.STOPPED, f"{what} is not possible: the table controller has stopped (F4)")
    if name in ("no_more_bets", "set_wagers", "set_start") and phase is Phase.NO_SHOE:
        return Refusal(
            R.NO_SHOE, f"{what} needs an approved shoe: connect a shoe on the approved list (A1)"
        )
    return _BY_INPUT.get(name, _close_round)(procedure)


def _round(procedure: Procedure) -> dict[str, object]:
    return {"round": procedure.round_id}


def _confirm_shuffle(procedure: Procedure) -> Refusal:
    if procedure.phase is Phase.DECK_REMOVED:
        return Refusal(
            R.DECK_MUST_CHANGE,
            "the deck must change: load a different deck and confirm it as new (D2)",
        )
    if procedure.phase in ROUND:
        return Refusal(
            R.DECK_CONFIRMED,
            f"round {procedure.round_id} is already open: its deck was confirmed (A2)",
            _round(procedure),
        )
    return Refusal(
        R.NO_DECK_WAITING, "no deck is waiting in the shoe: load a shuffled deck first (A2)"
    )


def _confirm_new_deck(procedure: Procedure) -> Refusal:
    return Refusal(
        R.NO_DECK_TO_CHANGE, "no deck had to leave the table: confirm the shuffle instead (A2)"
    )


def _wagers(procedure: Procedure) -> Refusal:
    if procedure.phase in ROUND:
        return Refusal(
            R.BETS_CLOSED,
            f"bets are already closed for round {procedure.round_id}: the wagered positions "
            "are frozen (A3)",
            _round(procedure),
        )
    if procedure.phase is Phase.SHUFFLE_CHECK:
        return Refusal(
            R.SHUFFLE_FIRST, "confirm the shuffle and cut of the deck in the shoe first (A2)"
        )
    return Refusal(R.NO_DECK, "no deck is loaded: load a shuffled deck before no more bets (A2)")


def _set_start(procedure: Procedure) -> Refusal:
    if procedure.phase is Phase.DECK_LOADED:
        return Refusal(
            R.NO_MORE_BETS_FIRST,
            "announce no more bets before setting the starting position (A3)",
        )
    if procedure.phase in ROUND:
        return Refusal(
            R.START_SET,
            f"the starting position of round {procedure.round_id} is already set; it cannot "
            "be set twice (B1)",
            _round(procedure),
        )
    return Refusal(R.NO_ROUND, "no round is open: load a deck and close the bets first (A2, A3)")


def _wager_settled(procedure: Procedure) -> Refusal:
    if not procedure.rules.dice_wager:
        return Refusal(
            R.NO_DICE_WAGER, "this table does not offer the dice wager (table.dice_wager) (B2)"
        )
    if procedure.phase in (Phase.DECK_LOADED, Phase.BETS_CLOSED):
        return Refusal(
            R.START_FIRST, "set the starting position before settling the dice wager (B1, B2)"
        )
    return Refusal(R.NO_DICE_WAGER_PENDING, "no dice wager is waiting to be settled (B2)")


def _stub_counted(procedure: Procedure) -> Refusal:
    rules = procedure.rules
    if procedure.phase is Phase.DEALING:
        return Refusal(
            R.DEAL_INCOMPLETE,
            f"the deal is not complete: {procedure.cards_dealt} of {rules.deal_size} cards "
            "dealt; count the stub after the last card (D1)",
            {"dealt": procedure.cards_dealt, "deal_size": rules.deal_size},
        )
    if procedure.phase is Phase.STUB_COUNT:
        return Refusal(
            R.STUB_UNFINISHED,
            "the shoe has not finished the stub: wait until it reports itself empty, or take "
            "the remaining cards out of the shoe, then count them (D1)",
        )
    if procedure.phase in (Phase.MISDEAL_REVIEW, Phase.DEALT):
        return Refusal(
            R.STUB_COUNTED,
            f"the stub of round {procedure.round_id} is already counted (D1)",
            _round(procedure),
        )
    return Refusal(R.NO_STUB_COUNT, "no stub count is expected now (D1)")


def _accept_stub_count(procedure: Procedure) -> Refusal:
    return Refusal(
        R.NO_COUNT_TO_ACCEPT,
        "no croupier's count is waiting for a supervisor's acceptance (D1)",
    )


def _void_round(procedure: Procedure) -> Refusal:
    if procedure.phase is Phase.DEALT:
        return Refusal(
            R.HANDS_IN_PLAY,
            f"round {procedure.round_id} is dealt and its hands are in play: close it after "
            "settlement (E2)",
            _round(procedure),
        )
    return Refusal(R.NOTHING_TO_VOID, "no round is open whose outcome is still to decide (F6)")


def _misdeal_determination(procedure: Procedure) -> Refusal:
    return Refusal(
        R.NO_DETERMINATION,
        "no misdeal determination is pending: it is asked when the stub is not "
        f"{procedure.rules.stub_size} (D2)",
        {"stub_size": procedure.rules.stub_size},
    )


def _close_round(procedure: Procedure) -> Refusal:
    phase = procedure.phase
    if phase is Phase.MISDEAL_REVIEW:
        return Refusal(
            R.DETERMINATION_FIRST, "determine whether the cards were misdealt first (D2)"
        )
    if phase in (Phase.STUB_CONFIRM, Phase.STUB_DISPUTE):
        return Refusal(R.COUNT_FIRST, "count the stub and enter the count first (D1)")
    if phase in IN_SHOE:
        return Refusal(
            R.DEAL_UNFINISHED,
            "the deal and the stub count are not finished: nothing to close yet (E2)",
        )
    return Refusal(R.NOTHING_TO_CLOSE, "there is no dealt round to close (E2)")


_BY_INPUT: dict[str, Callable[[Procedure], Refusal]] = {
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

#: Every input a refusal is worded for.
INPUTS: tuple[str, ...] = tuple(_BY_INPUT)
