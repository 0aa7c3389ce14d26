"""Why the procedure refuses a person's input now: one line naming the rule and what to do,
and a stable code with the values its words need, for those who word it themselves (the
console, in its own languages).

Each input has its own function; the phases in which no input is possible (a fault, a
stopped table) are answered first, for every input alike. The refusals of what an input
carries, of who gives it, and the service's own (a stopped controller, a failed journal,
an external generator's signed value) have a function each below :func:`refusal`: every
refusal a person can meet is made here, so that each has a code.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure.machine import IN_SHOE, PRE_DEAL, ROUND, Phase

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
    NO_NEW_DECK = "no_new_deck"
    NO_WAGERS_ENTERED = "no_wagers_entered"
    NOT_A_BETTING_POSITION = "not_a_betting_position"
    NOT_A_POSITION = "not_a_position"
    NOT_A_DIE = "not_a_die"
    DICE_REQUIRED = "dice_required"
    STUB_COUNT_RANGE = "stub_count_range"
    SUPERVISOR_ONLY = "supervisor_only"
    NO_FAULT = "no_fault"
    STILL_JAMMED = "still_jammed"
    SHOE_AWAY = "shoe_away"
    NO_VOID_REASON = "no_void_reason"
    VOID_REASON_TOO_LONG = "void_reason_too_long"
    CLOCK_NOT_SYNCHRONISED = "clock_not_synchronised"
    NOT_RECORDED = "not_recorded"
    SIGNATURE_REQUIRED = "signature_required"
    NO_GENERATOR = "no_generator"
    NOT_A_SIGNED_VALUE = "not_a_signed_value"
    SIGNED_OTHER_NUMBER = "signed_other_number"
    COUNTER_RANGE = "counter_range"
    BAD_SIGNATURE = "bad_signature"
    COUNTER_USED = "counter_used"
    SECOND_PERSON = "second_person"


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
    RefusalCode.NO_WAGERS_ENTERED: ("round",),
    RefusalCode.NOT_A_BETTING_POSITION: ("first", "last"),
    RefusalCode.NOT_A_POSITION: ("positions",),
    RefusalCode.NOT_A_DIE: ("die", "faces"),
    RefusalCode.STUB_COUNT_RANGE: ("deck_size",),
    RefusalCode.SUPERVISOR_ONLY: ("input",),
    RefusalCode.SHOE_AWAY: ("round",),
    RefusalCode.VOID_REASON_TOO_LONG: ("limit", "length"),
    RefusalCode.SIGNED_OTHER_NUMBER: ("signed", "number"),
    RefusalCode.COUNTER_RANGE: ("counter",),
    RefusalCode.BAD_SIGNATURE: ("device", "number", "counter"),
    RefusalCode.COUNTER_USED: ("device", "counter", "last_counter"),
    RefusalCode.SECOND_PERSON: ("person",),
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
P = Phase


def _without_phases(phases: tuple[Phase, ...], *removed: Phase) -> tuple[Phase, ...]:
    return tuple(phase for phase in phases if phase not in removed)


#: Words for a refusal, from the table as it stands.
Wording = Callable[["Procedure"], Refusal]


def refusal(procedure: Procedure, name: str) -> Refusal:
    """Why ``procedure`` does not accept the input ``name`` (its trigger) in its current
    phase: the words :data:`REFUSED` has for the pair. Raises LookupError for a pair it
    has none for, which a test proves is no pair the machine refuses."""
    wording = REFUSED.get((name, procedure.phase))
    if wording is None:
        raise LookupError(f"no words for refusing {name} in {procedure.phase}")
    return wording(procedure)


def unmet(procedure: Procedure, condition: str) -> Refusal:
    """Why ``procedure`` refuses an input whose transition's ``condition`` does not hold:
    the words :data:`UNMET` has for it. Raises LookupError for a condition it has none
    for, which a test proves is no condition that can refuse a person's input."""
    wording = UNMET.get(condition)
    if wording is None:
        raise LookupError(f"no words for refusing an input on its condition {condition}")
    return wording(procedure)


def _round(procedure: Procedure) -> dict[str, object]:
    return {"round": procedure.round_id}


def _blocked(name: str) -> Wording:
    def blocked(procedure: Procedure) -> Refusal:
        faults = [code.value for code in procedure.faults]
        codes = ", ".join(faults) or "fault"
        return Refusal(
            R.FAULT,
            f"{_WHAT[name]} is blocked by a fault ({codes}): an attendant must clear it (F1)",
            {"faults": faults},
        )

    return blocked


def _stopped(name: str) -> Wording:
    def stopped(procedure: Procedure) -> Refusal:
        return Refusal(
            R.STOPPED, f"{_WHAT[name]} is not possible: the table controller has stopped (F4)"
        )

    return stopped


def _no_shoe(name: str) -> Wording:
    def no_shoe(procedure: Procedure) -> Refusal:
        return Refusal(
            R.NO_SHOE,
            f"{_WHAT[name]} needs an approved shoe: connect a shoe on the approved list (A1)",
        )

    return no_shoe


def _deck_must_change(procedure: Procedure) -> Refusal:
    return Refusal(
        R.DECK_MUST_CHANGE,
        "the deck must change: load a different deck and confirm it as new (D2)",
    )


def _deck_confirmed(procedure: Procedure) -> Refusal:
    return Refusal(
        R.DECK_CONFIRMED,
        f"round {procedure.round_id} is already open: its deck was confirmed (A2)",
        _round(procedure),
    )


def _no_deck_waiting(procedure: Procedure) -> Refusal:
    return Refusal(
        R.NO_DECK_WAITING, "no deck is waiting in the shoe: load a shuffled deck first (A2)"
    )


def _no_deck_to_change(procedure: Procedure) -> Refusal:
    return Refusal(
        R.NO_DECK_TO_CHANGE, "no deck had to leave the table: confirm the shuffle instead (A2)"
    )


def _bets_closed(procedure: Procedure) -> Refusal:
    return Refusal(
        R.BETS_CLOSED,
        f"bets are already closed for round {procedure.round_id}: the wagered positions "
        "are frozen (A3)",
        _round(procedure),
    )


def _shuffle_first(procedure: Procedure) -> Refusal:
    return Refusal(
        R.SHUFFLE_FIRST, "confirm the shuffle and cut of the deck in the shoe first (A2)"
    )


def _no_deck(procedure: Procedure) -> Refusal:
    return Refusal(R.NO_DECK, "no deck is loaded: load a shuffled deck before no more bets (A2)")


def _no_more_bets_first(procedure: Procedure) -> Refusal:
    return Refusal(
        R.NO_MORE_BETS_FIRST, "announce no more bets before setting the starting position (A3)"
    )


def _start_set(procedure: Procedure) -> Refusal:
    return Refusal(
        R.START_SET,
        f"the starting position of round {procedure.round_id} is already set; it cannot "
        "be set twice (B1)",
        _round(procedure),
    )


def _no_round(procedure: Procedure) -> Refusal:
    return Refusal(R.NO_ROUND, "no round is open: load a deck and close the bets first (A2, A3)")


def _dice_wager(pending: Wording) -> Wording:
    """``pending``'s words at a table that offers the dice wager; at one that does not,
    that it does not."""

    def wording(procedure: Procedure) -> Refusal:
        if not procedure.rules.dice_wager:
            return Refusal(
                R.NO_DICE_WAGER, "this table does not offer the dice wager (table.dice_wager) (B2)"
            )
        return pending(procedure)

    return wording


def _start_first(procedure: Procedure) -> Refusal:
    return Refusal(
        R.START_FIRST, "set the starting position before settling the dice wager (B1, B2)"
    )


def _no_dice_wager_pending(procedure: Procedure) -> Refusal:
    return Refusal(R.NO_DICE_WAGER_PENDING, "no dice wager is waiting to be settled (B2)")


def _deal_incomplete(procedure: Procedure) -> Refusal:
    deal_size = procedure.rules.deal_size
    return Refusal(
        R.DEAL_INCOMPLETE,
        f"the deal is not complete: {procedure.cards_dealt} of {deal_size} cards "
        "dealt; count the stub after the last card (D1)",
        {"dealt": procedure.cards_dealt, "deal_size": deal_size},
    )


def _stub_unfinished(procedure: Procedure) -> Refusal:
    return Refusal(
        R.STUB_UNFINISHED,
        "the shoe has not finished the stub: wait until it reports itself empty, or take "
        "the remaining cards out of the shoe, then count them (D1)",
    )


def _stub_counted(procedure: Procedure) -> Refusal:
    return Refusal(
        R.STUB_COUNTED,
        f"the stub of round {procedure.round_id} is already counted (D1)",
        _round(procedure),
    )


def _no_stub_count(procedure: Procedure) -> Refusal:
    return Refusal(R.NO_STUB_COUNT, "no stub count is expected now (D1)")


def _no_count_to_accept(procedure: Procedure) -> Refusal:
    return Refusal(
        R.NO_COUNT_TO_ACCEPT,
        "no croupier's count is waiting for a supervisor's acceptance (D1)",
    )


def _hands_in_play(procedure: Procedure) -> Refusal:
    return Refusal(
        R.HANDS_IN_PLAY,
        f"round {procedure.round_id} is dealt and its hands are in play: close it after "
        "settlement (E2)",
        _round(procedure),
    )


def _nothing_to_void(procedure: Procedure) -> Refusal:
    return Refusal(R.NOTHING_TO_VOID, "no round is open whose outcome is still to decide (F6)")


def _no_determination(procedure: Procedure) -> Refusal:
    return Refusal(
        R.NO_DETERMINATION,
        "no misdeal determination is pending: it is asked when the stub is not "
        f"{procedure.rules.stub_size} (D2)",
        {"stub_size": procedure.rules.stub_size},
    )


def _determination_first(procedure: Procedure) -> Refusal:
    return Refusal(R.DETERMINATION_FIRST, "determine whether the cards were misdealt first (D2)")


def _count_first(procedure: Procedure) -> Refusal:
    return Refusal(R.COUNT_FIRST, "count the stub and enter the count first (D1)")


def _deal_unfinished(procedure: Procedure) -> Refusal:
    return Refusal(
        R.DEAL_UNFINISHED,
        "the deal and the stub count are not finished: nothing to close yet (E2)",
    )


def _nothing_to_close(procedure: Procedure) -> Refusal:
    return Refusal(R.NOTHING_TO_CLOSE, "there is no dealt round to close (E2)")


def _no_fault(procedure: Procedure) -> Refusal:
    return Refusal(R.NO_FAULT, "there is no fault to clear (F1)")


def _no_new_deck(procedure: Procedure) -> Refusal:
    return Refusal(
        R.NO_NEW_DECK,
        "no new deck is waiting: load a different deck into the shoe, then confirm it (D2)",
    )


def _still_jammed(procedure: Procedure) -> Refusal:
    return Refusal(
        R.STILL_JAMMED,
        "the shoe still reports a jam: clear the jam at the shoe, then clear the fault (C4, F1)",
    )


def _shoe_away(procedure: Procedure) -> Refusal:
    return Refusal(
        R.SHOE_AWAY,
        f"the shoe is away with cards of round {procedure.round_id} at stake: wait until it "
        "is back (it sends what it holds), or clear choosing to void the round (F2)",
        _round(procedure),
    )


def _second_person(procedure: Procedure) -> Refusal:
    person = procedure.count_entered_by
    return Refusal(
        R.SECOND_PERSON,
        f"{person} entered this count and may not also accept it: another supervisor "
        "accepts it, or the croupier counts again (E5)",
        {"person": person},
    )


def _clock_not_synchronised(procedure: Procedure) -> Refusal:
    return Refusal(
        R.CLOCK_NOT_SYNCHRONISED,
        "the system clock is not synchronised and this table's rules profile wants it "
        "synchronised before the first round: check the time service (shoe-diag check), "
        "then confirm again (E3)",
    )


def _each(name: str, wording: Wording, *phases: Phase) -> dict[tuple[str, Phase], Wording]:
    return {(name, phase): wording for phase in phases}


#: The phases between rounds and before one (no round open, nothing wrong).
_NO_ROUND = (P.IDLE, P.CLOSED, P.VOID_MISDEAL, P.VOID_FAULT, P.DECK_REMOVED)
_AFTER_BETS = _without_phases(ROUND, P.DECK_LOADED)


def _input_rows(name: str) -> dict[tuple[str, Phase], Wording]:
    """The rows every input but the clear has: a fault and a stopped table take nothing."""
    return {(name, P.FAULT): _blocked(name), (name, P.STOPPED): _stopped(name)}


#: Why each input (by its trigger) is refused in each phase the machine's table has no
#: transition of it from (:data:`~.machine.TRANSITIONS`, beside which this is kept).
REFUSED: Mapping[tuple[str, Phase], Wording] = {
    **_input_rows("confirm_shuffle"),
    **_each("confirm_shuffle", _deck_must_change, P.DECK_REMOVED),
    **_each("confirm_shuffle", _deck_confirmed, *ROUND),
    **_each(
        "confirm_shuffle", _no_deck_waiting, P.NO_SHOE, *_without_phases(_NO_ROUND, P.DECK_REMOVED)
    ),
    **_input_rows("confirm_new_deck"),
    **_each(
        "confirm_new_deck",
        _no_deck_to_change,
        P.NO_SHOE,
        P.SHUFFLE_CHECK,
        *ROUND,
        *_without_phases(_NO_ROUND, P.DECK_REMOVED),
    ),
    **{
        row: wording
        for name in ("set_wagers", "no_more_bets")
        for row, wording in {
            **_input_rows(name),
            **_each(name, _no_shoe(name), P.NO_SHOE),
            **_each(name, _bets_closed, *_AFTER_BETS),
            **_each(name, _shuffle_first, P.SHUFFLE_CHECK),
            **_each(name, _no_deck, *_NO_ROUND),
        }.items()
    },
    **_input_rows("set_start"),
    **_each("set_start", _no_shoe("set_start"), P.NO_SHOE),
    **_each("set_start", _no_more_bets_first, P.DECK_LOADED),
    **_each("set_start", _start_set, *_without_phases(_AFTER_BETS, P.BETS_CLOSED)),
    **_each("set_start", _no_round, P.SHUFFLE_CHECK, *_NO_ROUND),
    **_input_rows("wager_settled"),
    **_each("wager_settled", _dice_wager(_start_first), P.DECK_LOADED, P.BETS_CLOSED),
    **_each(
        "wager_settled",
        _dice_wager(_no_dice_wager_pending),
        P.NO_SHOE,
        P.SHUFFLE_CHECK,
        *_without_phases(ROUND, *PRE_DEAL),
        *_NO_ROUND,
    ),
    **_input_rows("stub_counted"),
    **_each("stub_counted", _deal_incomplete, P.DEALING),
    **_each("stub_counted", _stub_unfinished, P.STUB_COUNT),
    **_each("stub_counted", _stub_counted, P.MISDEAL_REVIEW, P.DEALT),
    **_each("stub_counted", _no_stub_count, P.NO_SHOE, P.SHUFFLE_CHECK, *PRE_DEAL, *_NO_ROUND),
    **_input_rows("accept_stub_count"),
    **_each(
        "accept_stub_count",
        _no_count_to_accept,
        P.NO_SHOE,
        P.SHUFFLE_CHECK,
        *_without_phases(ROUND, P.STUB_DISPUTE),
        *_NO_ROUND,
    ),
    **_input_rows("misdeal_determination"),
    **_each(
        "misdeal_determination",
        _no_determination,
        P.NO_SHOE,
        P.SHUFFLE_CHECK,
        *_without_phases(ROUND, P.MISDEAL_REVIEW),
        *_NO_ROUND,
    ),
    **_input_rows("void_round"),
    **_each("void_round", _hands_in_play, P.DEALT),
    **_each("void_round", _nothing_to_void, P.NO_SHOE, P.SHUFFLE_CHECK, *_NO_ROUND),
    **_input_rows("close_round"),
    **_each("close_round", _determination_first, P.MISDEAL_REVIEW),
    **_each("close_round", _count_first, P.STUB_CONFIRM, P.STUB_DISPUTE),
    **_each("close_round", _deal_unfinished, *IN_SHOE),
    **_each("close_round", _nothing_to_close, P.NO_SHOE, P.SHUFFLE_CHECK, *_NO_ROUND),
    **_each("attendant_clear", _no_fault, *_without_phases(tuple(Phase), P.FAULT)),
}

#: Why an input is refused whose transitions' condition, by name, does not hold.
UNMET: Mapping[str, Wording] = {
    "new_deck_waiting": _no_new_deck,
    "clock_lets_round_open": _clock_not_synchronised,
    "clear_allowed_by_shoe": _still_jammed,
    "shoe_back_or_voiding": _shoe_away,
    "accepted_by_another": _second_person,
}

#: Every input a refusal is worded for, by its trigger.
INPUTS: tuple[str, ...] = tuple(dict.fromkeys(name for name, _phase in REFUSED))


# --- what an input carries ---------------------------------------------------------------


def no_wagers_entered(round_id: str | None) -> Refusal:
    return Refusal(
        R.NO_WAGERS_ENTERED,
        f"no wagers were entered for round {round_id}: enter the positions that hold a "
        "wager, then announce no more bets (A3)",
        {"round": round_id},
    )


def not_a_betting_position(position: object, allowed: Sequence[int]) -> Refusal:
    return Refusal(
        R.NOT_A_BETTING_POSITION,
        f"position {position!r} cannot hold a wager: list betting positions "
        f"{allowed[0]} to {allowed[-1]} (the banker, 1, is always in play) (A3)",
        {"first": allowed[0], "last": allowed[-1]},
    )


def not_a_start_position(position: object, positions: int) -> Refusal:
    return Refusal(
        R.NOT_A_POSITION,
        f"starting position {position} is not a position of this table (1 to {positions}) (B1)",
        {"positions": positions},
    )


def not_a_generator_number(number: object, positions: int) -> Refusal:
    return Refusal(
        R.NOT_A_POSITION,
        f"the random number {number!r} is not a position: an approved generator gives "
        f"1 to {positions} (B1)",
        {"positions": positions},
    )


def not_a_die(die: int, value: object, faces: int) -> Refusal:
    return Refusal(
        R.NOT_A_DIE,
        f"die {die} shows {value!r}: each die shows 1 to {faces}; enter the three dice again (B1)",
        {"die": die, "faces": faces},
    )


def dice_required() -> Refusal:
    return Refusal(
        R.DICE_REQUIRED,
        "this table offers the dice wager, which the dice decide and which is settled "
        "before the first card: set the starting position with three dice (B2)",
    )


def stub_count_range(count: object, deck_size: int) -> Refusal:
    return Refusal(
        R.STUB_COUNT_RANGE,
        f"stub count {count!r} is not a number of cards from 0 to {deck_size}: count the "
        "remaining cards again (D1)",
        {"deck_size": deck_size},
    )


def no_void_reason() -> Refusal:
    return Refusal(R.NO_VOID_REASON, "ending a round void needs the reason, in words (F6)")


def void_reason_too_long(reason: str, limit: int) -> Refusal | None:
    """The refusal of a void's reason longer than ``limit``, the most a person's text may
    be (``inputs.MAX_TEXT``, worded as ``inputs.text_too_long`` words it); None when not."""
    if len(reason) <= limit:
        return None
    return Refusal(
        R.VOID_REASON_TOO_LONG,
        f"a void's reason is at most {limit} characters, this one has {len(reason)}: say it "
        "in fewer words (F6)",
        {"limit": limit, "length": len(reason)},
    )


# --- who gives it (E4) -------------------------------------------------------------------


def supervisor_only(name: str, person: str, what: str) -> Refusal:
    """A dealer, ``person``, gave the input ``name``, which is a supervisor's (``what``)."""
    return Refusal(
        R.SUPERVISOR_ONLY,
        f"{person} is a dealer: {what} is a supervisor's; a supervisor must sign in and "
        "give it (E4)",
        {"input": name},
    )


# --- the service -------------------------------------------------------------------------


def controller_stopped() -> Refusal:
    """An input given once the table controller has stopped."""
    return Refusal(R.STOPPED, "the table controller is stopped")


def stopped_before_journaled() -> Refusal:
    """An input queued, never journaled, when the table controller stopped."""
    return Refusal(R.STOPPED, "the table controller stopped")


def not_recorded() -> Refusal:
    """The journal failed in the transaction that held the input: nothing of it happened."""
    return Refusal(R.NOT_RECORDED, "the input was not recorded: the journal failed")


# --- an external generator's signed value (B1) -------------------------------------------


def signature_required() -> Refusal:
    return Refusal(
        R.SIGNATURE_REQUIRED,
        "the rules profile accepts an external generator's number only with its signature: "
        "enter the value as the generator shows it, NUMBER:COUNTER:SIGNATURE (B1)",
    )


def no_generator() -> Refusal:
    return Refusal(
        R.NO_GENERATOR,
        "a signed value needs its generator configured ([external_rng] device, algorithm "
        "and key in the configuration) (B1)",
    )


def not_a_signed_value(text: str) -> Refusal:
    return Refusal(
        R.NOT_A_SIGNED_VALUE,
        f"{text.strip()[:80]!r} is not a signed value: enter it as the generator shows it, "
        "NUMBER:COUNTER:SIGNATURE (B1)",
    )


def signed_other_number(signed: int, number: int) -> Refusal:
    return Refusal(
        R.SIGNED_OTHER_NUMBER,
        f"the signed value is for {signed}, not {number}: enter the value as the generator "
        "shows it (B1)",
        {"signed": signed, "number": number},
    )


def counter_range(counter: int) -> Refusal:
    return Refusal(R.COUNTER_RANGE, f"counter {counter} is out of range (B1)", {"counter": counter})


def bad_signature(device: str, number: int, counter: int) -> Refusal:
    return Refusal(
        R.BAD_SIGNATURE,
        f"the signature is not {device}'s over number {number} at counter {counter}: "
        "refused; enter the value exactly as the generator shows it, or draw again (B1)",
        {"device": device, "number": number, "counter": counter},
    )


def counter_used(device: str, counter: int, last: int) -> Refusal:
    return Refusal(
        R.COUNTER_USED,
        f"{device}'s counter {counter} was already used (the last number accepted was its "
        f"counter {last}): a value is accepted once; draw a new number (B1)",
        {"device": device, "counter": counter, "last_counter": last},
    )
