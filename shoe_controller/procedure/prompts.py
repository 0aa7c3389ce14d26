"""What the procedure asks of people: every prompt's ``need``, text and rule, in one place.

A prompt's ``need`` is its code (docs/integrators.md lists them); a console translates it
and renders its values, a terminal shows ``message``.
"""

from __future__ import annotations

from shoe_controller.procedure.decisions import Evidence, FaultCode, Outcome, Prompt


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


def stub_count(shoe_count: int | None, expected: int) -> Prompt:
    if shoe_count is None:
        what = "The shoe could not count the stub"
    else:
        what = f"The shoe counted {shoe_count} cards in the stub, not {expected}"
    return Prompt("stub_count", f"{what}: count the stub by hand and enter the count.", "D2")


def misdeal_determination(
    count: int, expected: int, proposal: Outcome | None, evidence: Evidence
) -> Prompt:
    if proposal is None:
        finding = "the record cannot tell whether every position got its cards"
    else:
        finding = (
            "the record shows every card read and every position complete, so not a misdeal: "
            "the deck leaves the table"
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
    )


def clear_possible() -> Prompt:
    return Prompt(
        "attendant_clear",
        "The shoe is there and reports no jam or open door: an attendant may now clear the fault.",
        "F1",
    )


def wait_shoe(codes: tuple[FaultCode, ...]) -> Prompt:
    listed = ", ".join(codes) or "fault"
    return Prompt(
        "wait_shoe",
        f"Dealing is blocked ({listed}) and the link to the shoe is down: reconnect the shoe; "
        "an attendant clears once it is back (clearing before voids the round).",
        "F2",
    )


def new_deck() -> Prompt:
    return Prompt(
        "new_deck",
        "A deck was loaded: confirm that it is a different deck, shuffled and cut.",
        "D2",
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
