"""What the procedure asks of people: every prompt's ``need``, code, text, rule and who
answers it, in one place; and what the shoe's display tells the hands at the shoe.

A prompt's ``need`` says what is needed (docs/integrators.md lists them); its ``code`` names
the variant of that need the prompt is (the shoe counted the stub, or could not), and its
``values`` what its words are made of (a count, a position). A console words a prompt from
its code and values in its own language (:data:`CODES` lists every code with the names of
its values); a terminal
shows ``message``. :data:`ANSWERS` says, for each need, the inputs that answer it (a
person's, or an act at the shoe that the shoe reports): in every phase some prompt says
who must do what next (F6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from shoe_controller.procedure.authority import Role
from shoe_controller.procedure.decisions import (
    Evidence,
    FaultCode,
    Outcome,
    Prompt,
    PromptValue,
    StubFigures,
)

SUPERVISOR = Role.SUPERVISOR.value

#: What answers each need: the procedure's inputs (a person's, or ``shoe:EVENT`` for an act
#: at the shoe that the shoe reports). Every round's phase also takes a supervisor's
#: ``void_round`` (F6).
ANSWERS: Final[dict[str, tuple[str, ...]]] = {
    "connect_shoe": ("shoe:shoe_approved",),
    "load_deck": ("shoe:deck_loaded",),
    "confirm_shuffle": ("confirm_shuffle",),
    "no_more_bets": ("no_more_bets",),
    "wagers": ("set_wagers", "no_more_bets"),
    "start_position": ("set_start",),
    "wager_settled": ("wager_settled",),
    "deal": ("shoe:card_drawn",),
    "wait_stub": ("shoe:card_drawn", "shoe:shoe_empty", "shoe:deck_removed"),
    "stub_count": ("stub_counted",),
    "accept_stub_count": ("accept_stub_count", "stub_counted"),
    "misdeal_determination": ("misdeal_determination",),
    "close_round": ("close_round",),
    "remove_deck": ("shoe:deck_removed", "shoe:deck_loaded"),
    "new_deck": ("confirm_new_deck",),
    "attendant_clear": ("attendant_clear",),
    "wait_shoe": ("shoe:shoe_approved", "attendant_clear"),
}

#: What the shoe's display shows while the hands at the shoe must act: its firmware, and
#: the simulated croupier, read it. Otherwise the display shows the phase.
DISPLAY_REMOVE_DECK: Final = "REMOVE DECK"
DISPLAY_TAKE_OUT_STUB: Final = "TAKE OUT STUB"


@dataclass(frozen=True, slots=True)
class PromptCode:
    """A prompt's variant: the need it asks for and the names of the values its words are
    made of."""

    need: str
    names: tuple[str, ...] = ()


#: Every prompt code, with its need and its values' names. A code's values are always all given
#: (a value may be null where the code says so); ``count`` is the number the words agree
#: with, ``faults`` the fault codes in the order they were raised.
CODES: Final[dict[str, PromptCode]] = {
    "connect_shoe": PromptCode("connect_shoe"),
    "load_deck": PromptCode("load_deck"),
    "confirm_shuffle": PromptCode("confirm_shuffle"),
    "no_more_bets": PromptCode("no_more_bets"),
    "wagers": PromptCode("wagers"),
    # The dice or a generator; only the dice while the dice decide the dice wager (B2).
    "start_position": PromptCode("start_position"),
    "start_position_dice": PromptCode("start_position"),
    "wager_settled": PromptCode("wager_settled"),
    "deal": PromptCode("deal", ("position",)),
    "wait_stub": PromptCode("wait_stub"),
    # The shoe counted ``count`` stub cards, or did not count the stub.
    "stub_count": PromptCode("stub_count", ("count",)),
    "stub_count_uncounted": PromptCode("stub_count"),
    # The croupier's ``count`` against the figures; ``shoe_count`` null: the shoe did not
    # count.
    "accept_stub_count": PromptCode(
        "accept_stub_count", ("count", "shoe_count", "stub_cards_read", "by_deal")
    ),
    # The record shows every position complete (not a misdeal, the deck leaves the
    # table), or it cannot tell.
    "misdeal_determination_conclusive": PromptCode("misdeal_determination", ("count", "expected")),
    "misdeal_determination_open": PromptCode("misdeal_determination", ("count", "expected")),
    "misdeal_determination_read": PromptCode(
        "misdeal_determination", ("count", "expected", "deck")
    ),
    "close_round": PromptCode("close_round"),
    # A void round's deck, a card that left the shoe outside a round, the deck that must
    # leave the table.
    "remove_deck_void": PromptCode("remove_deck", ("round",)),
    "remove_deck_stray": PromptCode("remove_deck"),
    "remove_deck_change": PromptCode("remove_deck"),
    "new_deck": PromptCode("new_deck"),
    # Blocked; blocked while the shoe still reports a jam; the shoe is free: clear now.
    "attendant_clear": PromptCode("attendant_clear", ("faults",)),
    "attendant_clear_jam": PromptCode("attendant_clear", ("faults",)),
    "attendant_clear_ready": PromptCode("attendant_clear"),
    "wait_shoe": PromptCode("wait_shoe", ("faults",)),
}


def _prompt(
    code: str,
    message: str,
    rule: str,
    *,
    values: dict[str, PromptValue] | None = None,
    proposal: Outcome | int | None = None,
    evidence: Evidence | StubFigures | None = None,
    role: str = "dealer",
    options: tuple[str, ...] = (),
) -> Prompt:
    known = CODES[code]
    given = values or {}
    if tuple(given) != known.names:
        raise ValueError(f"prompt {code} takes {known.names}, not {tuple(given)}")
    return Prompt(
        known.need,
        message,
        rule,
        proposal=proposal,
        evidence=evidence,
        role=role,
        options=options,
        code=code,
        values=given,
    )


def connect_shoe() -> Prompt:
    return _prompt(
        "connect_shoe",
        "No approved shoe answers: connect the table's shoe (one on the approved list).",
        "A1",
    )


def load_deck() -> Prompt:
    return _prompt("load_deck", "Load a shuffled and cut deck into the shoe.", "A2")


def confirm_shuffle() -> Prompt:
    return _prompt(
        "confirm_shuffle",
        "A deck is in the shoe: confirm that it was shuffled and cut (Section 10.4) before "
        "bets open.",
        "A2",
    )


def no_more_bets() -> Prompt:
    return _prompt(
        "no_more_bets",
        "Bets are open: enter the positions that hold a wager, then announce no more bets.",
        "A3",
    )


def wagers_first() -> Prompt:
    return _prompt(
        "wagers",
        "No wagers were entered for this round: enter the positions that hold a wager, then "
        "announce no more bets.",
        "A3",
    )


def start_position(*, dice_only: bool = False) -> Prompt:
    """``dice_only``: the table offers the dice wager, which the dice decide (B2)."""
    if dice_only:
        return _prompt(
            "start_position_dice",
            "Set the starting position with three dice: they decide the dice wager.",
            "B1",
        )
    return _prompt("start_position", "Set the starting position: three dice or the RNG.", "B1")


def wager_settled() -> Prompt:
    return _prompt("wager_settled", "Settle the dice wagers before the first card.", "B2")


def close_round() -> Prompt:
    return _prompt("close_round", "Hands are in play: close the round after settlement.", "E2")


def deal(position: int) -> Prompt:
    return _prompt(
        "deal",
        f"Deal: the shoe lets the cards out one at a time; the next goes to position {position}.",
        "C1",
        values={"position": position},
    )


def wait_stub() -> Prompt:
    return _prompt(
        "wait_stub",
        "The deal is complete: the shoe passes the stub through its reader. Count the stub "
        "once the shoe has finished it; if the shoe stops with cards still in it, take them "
        "out of the shoe.",
        "D1",
    )


def stub_count(figures: StubFigures) -> Prompt:
    if figures.shoe_count is None:
        return _prompt(
            "stub_count_uncounted",
            "The shoe did not count the stub: count the stub and enter the count.",
            "D1",
            evidence=figures,
        )
    return _prompt(
        "stub_count",
        f"The shoe counted {figures.shoe_count} cards in the stub: count the stub and enter "
        "the count.",
        "D1",
        values={"count": figures.shoe_count},
        proposal=figures.shoe_count,
        evidence=figures,
    )


def stub_accepted(figures: StubFigures) -> Prompt:
    known = "no count" if figures.shoe_count is None else f"{figures.shoe_count}"
    return _prompt(
        "accept_stub_count",
        f"The croupier counted {figures.croupier_count} stub cards; the shoe's count is "
        f"{known}, its reader read {figures.stub_cards_read}, and the deal leaves "
        f"{figures.by_deal}: a supervisor accepts the croupier's count, or the croupier "
        "counts again.",
        "D1",
        values={
            "count": figures.croupier_count,
            "shoe_count": figures.shoe_count,
            "stub_cards_read": figures.stub_cards_read,
            "by_deal": figures.by_deal,
        },
        proposal=figures.croupier_count,
        evidence=figures,
        role=SUPERVISOR,
    )


def misdeal_determination(
    count: int, expected: int, proposal: Outcome | None, evidence: Evidence, *, read: bool = False
) -> Prompt:
    """``read``: the shoe read every card of the deck, whose size is then a fact (D4)."""
    values: dict[str, PromptValue] = {"count": count, "expected": expected}
    if proposal is None:
        code = "misdeal_determination_open"
        finding = "the record cannot tell whether every position got its cards"
    elif read and not evidence.conclusive:
        code = "misdeal_determination_read"
        deck = sum(evidence.cards_per_position) + count
        values["deck"] = deck
        finding = (
            f"the shoe read every card of a deck of {deck}: the deck leaves the table "
            "whatever the determination"
        )
    else:
        code = "misdeal_determination_conclusive"
        finding = (
            "the record shows every card of the deal read and every position complete, so not "
            "a misdeal: the deck leaves the table; a determination against the record is a "
            "supervisor's"
        )
    return _prompt(
        code,
        f"The stub holds {count} cards, not {expected}: were the cards misdealt? ({finding})",
        "D2",
        values=values,
        proposal=proposal,
        evidence=evidence,
    )


def attendant_clear(codes: tuple[FaultCode, ...], *, jammed: bool = False) -> Prompt:
    """``jammed``: the shoe still reports a jam, and the clear waits for it to end (C4)."""
    listed = ", ".join(codes) or "fault"
    if jammed:
        return _prompt(
            "attendant_clear_jam",
            f"Dealing is blocked ({listed}) and the shoe still reports a jam: clear the jam at "
            "the shoe, then an attendant clears the fault.",
            "F1",
            values={"faults": tuple(codes)},
            role=SUPERVISOR,
        )
    return _prompt(
        "attendant_clear",
        f"Dealing is blocked: an attendant must clear the fault ({listed}).",
        "F1",
        values={"faults": tuple(codes)},
        role=SUPERVISOR,
    )


def clear_possible() -> Prompt:
    return _prompt(
        "attendant_clear_ready",
        "The shoe is there and reports no jam or open door: an attendant may now clear the fault.",
        "F1",
        role=SUPERVISOR,
    )


def wait_shoe(codes: tuple[FaultCode, ...]) -> Prompt:
    listed = ", ".join(codes) or "fault"
    return _prompt(
        "wait_shoe",
        f"Dealing is blocked ({listed}) and the link to the shoe is down: reconnect the shoe, "
        "then an attendant clears. To give up the round instead, a supervisor clears choosing "
        "to void the round.",
        "F2",
        values={"faults": tuple(codes)},
        role=SUPERVISOR,
        options=("void_round",),
    )


def new_deck() -> Prompt:
    return _prompt(
        "new_deck",
        "A deck was loaded: a supervisor confirms that it is a different deck from the one "
        "that left the table, shuffled and cut.",
        "D2",
        role=SUPERVISOR,
    )


def remove_void_deck(round_id: str | None, rule: str) -> Prompt:
    what = "the deck out of the shoe and load a shuffled deck."
    if round_id is not None:
        return _prompt(
            "remove_deck_void",
            f"Round {round_id} is void: collect every card to the discard rack unseen, take "
            + what,
            rule,
            values={"round": round_id},
        )
    return _prompt(
        "remove_deck_stray",
        "A card left the shoe outside a round: collect it to the discard rack unseen, take " + what,
        rule,
    )


def remove_deck_for_good() -> Prompt:
    return _prompt(
        "remove_deck_change",
        "The deck must leave the table: take it out of the shoe and load a different deck.",
        "D2",
    )
