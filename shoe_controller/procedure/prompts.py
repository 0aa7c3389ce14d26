"""What the procedure asks of people: every prompt's ``need``, text, rule and who answers
it, in one place; and what the shoe's display tells the hands at the shoe.

A prompt's ``need`` is its code (docs/integrators.md lists them); a console translates it
and renders its values, a terminal shows ``message``. :data:`ANSWERS` says, for each need,
the inputs that answer it (a person's, or an act at the shoe that the shoe reports):
in every phase some prompt says who must do what next (F6).
"""

from __future__ import annotations

from typing import Final

from shoe_controller.procedure.authority import Role
from shoe_controller.procedure.decisions import (
    Evidence,
    FaultCode,
    Outcome,
    Prompt,
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


def connect_shoe() -> Prompt:
    return Prompt(
        "connect_shoe",
        "No approved shoe answers: connect the table's shoe (one on the approved list).",
        "A1",
    )


def load_deck() -> Prompt:
    return Prompt("load_deck", "Load a shuffled and cut deck into the shoe.", "A2")


def confirm_shuffle() -> Prompt:
    return Prompt(
        "confirm_shuffle",
        "A deck is in the shoe: confirm that it was shuffled and cut (Section 10.4) before "
        "bets open.",
        "A2",
    )


def no_more_bets() -> Prompt:
    return Prompt(
        "no_more_bets",
        "Bets are open: enter the positions that hold a wager, then announce no more bets.",
        "A3",
    )


def wagers_first() -> Prompt:
    return Prompt(
        "wagers",
        "No wagers were entered for this round: enter the positions that hold a wager, then "
        "announce no more bets.",
        "A3",
    )


def start_position() -> Prompt:
    return Prompt("start_position", "Set the starting position: three dice or the RNG.", "B1")


def wager_settled() -> Prompt:
    return Prompt("wager_settled", "Settle the dice wagers before the first card.", "B2")


def close_round() -> Prompt:
    return Prompt("close_round", "Hands are in play: close the round after settlement.", "E2")


def deal(position: int) -> Prompt:
    return Prompt(
        "deal",
        f"Deal: the shoe lets the cards out one at a time; the next goes to position {position}.",
        "C1",
    )


def wait_stub() -> Prompt:
    return Prompt(
        "wait_stub",
        "The deal is complete: the shoe passes the stub through its reader. Count the stub "
        "once the shoe has finished it; if the shoe stops with cards still in it, take them "
        "out of the shoe.",
        "D1",
    )


def stub_count(figures: StubFigures) -> Prompt:
    if figures.shoe_count is None:
        what = "The shoe did not count the stub"
    else:
        what = f"The shoe counted {figures.shoe_count} cards in the stub"
    return Prompt(
        "stub_count",
        f"{what}: count the stub and enter the count.",
        "D1",
        proposal=figures.shoe_count,
        evidence=figures,
    )


def stub_accepted(figures: StubFigures) -> Prompt:
    known = "no count" if figures.shoe_count is None else f"{figures.shoe_count}"
    return Prompt(
        "accept_stub_count",
        f"The croupier counted {figures.croupier_count} stub cards; the shoe's count is "
        f"{known}, its reader read {figures.stub_cards_read}, and the deal leaves "
        f"{figures.by_deal}: a supervisor accepts the croupier's count, or the croupier "
        "counts again.",
        "D1",
        proposal=figures.croupier_count,
        evidence=figures,
        role=SUPERVISOR,
    )


def misdeal_determination(
    count: int, expected: int, proposal: Outcome | None, evidence: Evidence
) -> Prompt:
    if proposal is None:
        finding = "the record cannot tell whether every position got its cards"
    else:
        finding = (
            "the record shows every card read and every position complete, so not a misdeal: "
            "the deck leaves the table; a determination against the record is a supervisor's"
        )
    return Prompt(
        need="misdeal_determination",
        message=(
            f"The stub holds {count} cards, not {expected}: were the cards misdealt? ({finding})"
        ),
        rule="D2",
        proposal=proposal,
        evidence=evidence,
    )


def attendant_clear(codes: tuple[FaultCode, ...]) -> Prompt:
    listed = ", ".join(codes) or "fault"
    return Prompt(
        "attendant_clear",
        f"Dealing is blocked: an attendant must clear the fault ({listed}).",
        "F1",
        role=SUPERVISOR,
    )


def clear_possible() -> Prompt:
    return Prompt(
        "attendant_clear",
        "The shoe is there and reports no jam or open door: an attendant may now clear the fault.",
        "F1",
        role=SUPERVISOR,
    )


def wait_shoe(codes: tuple[FaultCode, ...]) -> Prompt:
    listed = ", ".join(codes) or "fault"
    return Prompt(
        "wait_shoe",
        f"Dealing is blocked ({listed}) and the link to the shoe is down: reconnect the shoe, "
        "then an attendant clears. To give up the round instead, a supervisor clears choosing "
        "to void the round.",
        "F2",
        role=SUPERVISOR,
        options=("void_round",),
    )


def new_deck() -> Prompt:
    return Prompt(
        "new_deck",
        "A deck was loaded: a supervisor confirms that it is a different deck from the one "
        "that left the table, shuffled and cut.",
        "D2",
        role=SUPERVISOR,
    )


def remove_void_deck(round_id: str | None, rule: str) -> Prompt:
    if round_id is not None:
        what = f"Round {round_id} is void: collect every card"
    else:
        what = "A card left the shoe outside a round: collect it"
    return Prompt(
        "remove_deck",
        f"{what} to the discard rack unseen, take the deck out of the shoe and load a "
        "shuffled deck.",
        rule,
    )


def remove_deck_for_good() -> Prompt:
    return Prompt(
        "remove_deck",
        "The deck must leave the table: take it out of the shoe and load a different deck.",
        "D2",
    )
