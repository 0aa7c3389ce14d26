"""Every input a person gives at the table, declared once.

A declaration says all there is to know of one input: its name (the API's method is
``table.<name>``), its parameters and their checks, who may give it (E4), whether it may
contradict the controller's evidence, what it becomes in the journal, the procedure's call
it makes and the refusals it may meet. The controller's inputs, the API's method table and
its OpenRPC description, the console's words and the test fakes are made from these; a
test fails on any of them that names an input not declared here, or misses one.

The names, the journal's input names and the refusal codes are a published interface
(docs/api.md, docs/journal.md): they stay as they are. Three inputs keep the journal names
they had before the API named them (``journaled_as``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import refusals
from shoe_controller.procedure.inputs import MAX_TEXT, text_too_long
from shoe_controller.procedure.refusals import RefusalCode
from shoe_controller.procedure.table import TableRules

if TYPE_CHECKING:
    from shoe_controller.procedure.authority import Person
    from shoe_controller.procedure.decisions import Decision
    from shoe_controller.procedure.procedure import Procedure
    from shoe_controller.procedure.start import RandomSource

#: An input's checked values, by parameter name.
Values = Mapping[str, Any]

#: The largest counter of an external generator's signed value, and of a prompt's id: as far
#: as a JSON number stays exact in any client (2**53 - 1).
MAX_JSON_INT: Final = 2**53 - 1

R = RefusalCode

#: Refusals any input may meet: a fault, a stopped controller, a journal that failed.
ANY_INPUT: Final = frozenset({R.FAULT, R.STOPPED, R.NOT_RECORDED})


class InvalidParameter(ProcedureError):
    """A parameter that is not what its declaration says (the API's invalid params)."""


class InputTarget(Protocol):
    """What an input's call acts on: the procedure, and the controller's own generator and
    external generator where the start comes from them (B1)."""

    @property
    def procedure(self) -> Procedure: ...
    @property
    def rng(self) -> RandomSource | None: ...
    def start_external(
        self, number: int, counter: int | None, signature: str | None, by: Person
    ) -> list[Decision]: ...


#: A parameter's check: the value given (ABSENT when none was) and the table's rules, to
#: the value the call takes; it raises InvalidParameter with one line saying what is wanted.
Check = Callable[[object, TableRules], object]


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    #: Its JSON schema, as published (with the shipped rules profile's bounds).
    schema: Mapping[str, Any]
    description: str
    check: Check
    required: bool = True
    #: Its value when it is not given (an optional parameter only).
    default: object = None
    #: Given together: when one of them is, each must be.
    together: tuple[str, ...] = ()
    #: Taken over the API too (False: only the controller's own callers give it).
    on_api: bool = True


@dataclass(frozen=True, slots=True)
class InputDeclaration:
    name: str
    #: One line for the API's description (docs/api.md).
    summary: str
    call: Callable[[InputTarget, Values, Person], list[Decision]]
    params: tuple[Param, ...] = ()
    #: Why only a supervisor gives it (None: a dealer or a supervisor) (E4).
    supervisor_only: str | None = None
    #: Why a supervisor must give it when it contradicts a conclusive record (D2).
    supervisor_when_contradicting: str | None = None
    #: The journal's name of the input, where it is not ``name``.
    journaled_as: str | None = None
    #: The journal's arguments of the input, from its values (default: the values).
    journal_args: Callable[[Values], dict[str, Any]] | None = None
    #: A refusal before the input reaches the journal (no record keeps a flood).
    refuse_early: Callable[[Values], ProcedureError | None] | None = None
    #: The refusals it may meet besides those of ANY_INPUT.
    refusals: frozenset[RefusalCode] = field(default_factory=frozenset)

    @property
    def journal_name(self) -> str:
        return self.journaled_as or self.name

    @property
    def method(self) -> str:
        """Its API method."""
        return f"table.{self.name}"

    @property
    def may_refuse(self) -> frozenset[RefusalCode]:
        return self.refusals | ANY_INPUT

    def api_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.on_api)

    def check(self, given: Mapping[str, object], rules: TableRules) -> dict[str, Any]:
        """``given``'s values as the call takes them, each checked in the order declared."""
        names = {p.name for p in self.params if p.name in given}
        values: dict[str, Any] = {}
        for param in self.params:
            needed = param.required or any(t in names for t in param.together)
            if param.name not in given and not needed:
                values[param.name] = param.default
                continue
            values[param.name] = param.check(given.get(param.name, ABSENT), rules)
        return values

    def args(self, values: Values) -> dict[str, Any]:
        """What the journal's input record holds of ``values``."""
        if self.journal_args is not None:
            return self.journal_args(values)
        return dict(values)


# --- parameters ----------------------------------------------------------------------------


def _invalid(message: str) -> InvalidParameter:
    return InvalidParameter(message)


def _flag(key: str) -> Check:
    def check(value: object, rules: TableRules) -> bool:
        if not isinstance(value, bool):
            raise _invalid(f"{key!r} is true or false")
        return value

    return check


def _whole(key: str, low: int, high: Callable[[TableRules], int] | int) -> Check:
    def check(value: object, rules: TableRules) -> int:
        top = high(rules) if callable(high) else high
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= top:
            raise _invalid(f"{key!r} is a whole number from {low} to {top}")
        return value

    return check


def _text(key: str) -> Check:
    """Free text a person gives: a non-empty string of at most MAX_TEXT characters."""

    def check(value: object, rules: TableRules) -> str:
        if not isinstance(value, str) or not value:
            raise _invalid(f"{key!r} is a non-empty string")
        refusal = text_too_long(repr(key), value, "say it in fewer words")
        if refusal is not None:
            raise _invalid(refusal)
        return value

    return check


def _positions(value: object, rules: TableRules) -> list[int]:
    betting = rules.betting_positions
    if not isinstance(value, list) or any(
        isinstance(p, bool) or not isinstance(p, int) or p not in betting for p in value
    ):
        raise _invalid(
            "'positions' is a list of the player positions holding a wager "
            f"({betting[0]}..{betting[-1]})"
        )
    if len(set(value)) != len(value):
        raise _invalid("'positions' names a position twice")
    return sorted(value)


def _wagered(value: object, rules: TableRules) -> list[int] | None:
    """No more bets with the wagered positions in the same input (the controller's own
    callers: a bench script, the terminal): any positions, the procedure checks them (A3)."""
    if value is None:
        return None
    if not isinstance(value, list | tuple | set | frozenset):
        raise _invalid("'wagered' is the positions holding a wager")
    return sorted(set(value))


def _dice(value: object, rules: TableRules) -> list[int]:
    if (
        not isinstance(value, list)
        or len(value) != 3
        or any(isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 6 for d in value)
    ):
        raise _invalid("'dice' is three dice, each 1..6, e.g. [3, 4, 5]")
    return list(value)


#: An external generator's signature, in hex.
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2}){1,128}")


def _signature(value: object, rules: TableRules) -> str:
    if not isinstance(value, str) or not _HEX.fullmatch(value):
        raise _invalid("'signature' is the generator's signature in hex (2 to 256 digits)")
    return value


def _positions_of(rules: TableRules) -> int:
    return rules.positions


def _deck_size(rules: TableRules) -> int:
    return rules.deck_size


# --- what they become in the journal, and their early refusals -------------------------------


def _no_more_bets_args(values: Values) -> dict[str, Any]:
    wagered = values.get("wagered")
    return {} if wagered is None else {"wagered": wagered}


def _dice_args(values: Values) -> dict[str, Any]:
    return {"method": "dice", "dice": list(values["dice"])}


def _external_args(values: Values) -> dict[str, Any]:
    args: dict[str, Any] = {"method": "rng", "number": values["number"], "source": "external"}
    if values.get("signature") is not None:
        args |= {"counter": values["counter"], "signature": values["signature"].lower()}
    return args


def _void_reason_too_long(values: Values) -> ProcedureError | None:
    reason = values.get("reason")
    refusal = isinstance(reason, str) and refusals.void_reason_too_long(reason, MAX_TEXT)
    return refusal.error() if refusal else None


# --- the inputs ------------------------------------------------------------------------------

_START = frozenset({R.NO_SHOE, R.NO_MORE_BETS_FIRST, R.START_SET, R.NO_ROUND, R.NOT_A_POSITION})

DECLARATIONS: Final[Mapping[str, InputDeclaration]] = {
    d.name: d
    for d in (
        InputDeclaration(
            "set_wagers",
            "Enter the positions holding a wager while bets are open (A3); each call "
            "replaces the last.",
            lambda t, v, by: t.procedure.set_wagers(v["positions"], by=by),
            params=(
                Param(
                    "positions",
                    {
                        "type": "array",
                        "items": {"type": "integer", "minimum": 2, "maximum": 7},
                        "uniqueItems": True,
                    },
                    "betting positions of the rules profile (2..7 in the shipped "
                    "pr-pai-gow-poker; the server takes its profile's)",
                    _positions,
                ),
            ),
            refusals=frozenset(
                {R.NO_SHOE, R.BETS_CLOSED, R.SHUFFLE_FIRST, R.NO_DECK, R.NOT_A_BETTING_POSITION}
            ),
        ),
        InputDeclaration(
            "no_more_bets",
            "Announce no more bets: the wagers entered are frozen (A3); refused when none "
            "were entered.",
            lambda t, v, by: t.procedure.no_more_bets(v["wagered"], by=by),
            params=(
                Param(
                    "wagered",
                    {"type": "array", "items": {"type": "integer"}},
                    "the positions holding a wager, given with the announcement",
                    _wagered,
                    required=False,
                    on_api=False,
                ),
            ),
            journal_args=_no_more_bets_args,
            refusals=frozenset(
                {
                    R.NO_SHOE,
                    R.BETS_CLOSED,
                    R.SHUFFLE_FIRST,
                    R.NO_DECK,
                    R.NO_WAGERS_ENTERED,
                    R.NOT_A_BETTING_POSITION,
                }
            ),
        ),
        InputDeclaration(
            "confirm_shuffle",
            "Confirm that the deck in the shoe was shuffled and cut (A2).",
            lambda t, v, by: t.procedure.confirm_shuffle(by=by),
            refusals=frozenset(
                {
                    R.DECK_MUST_CHANGE,
                    R.DECK_CONFIRMED,
                    R.NO_DECK_WAITING,
                    R.CLOCK_NOT_SYNCHRONISED,
                }
            ),
        ),
        InputDeclaration(
            "start_by_dice",
            "The starting position from three dice (B1).",
            lambda t, v, by: t.procedure.start_by_dice(*v["dice"], by=by),
            params=(
                Param(
                    "dice",
                    {
                        "type": "array",
                        "items": {"type": "integer", "minimum": 1, "maximum": 6},
                        "minItems": 3,
                        "maxItems": 3,
                    },
                    "three dice, each 1..6",
                    _dice,
                ),
            ),
            journaled_as="start_position",
            journal_args=_dice_args,
            refusals=_START | {R.NOT_A_DIE},
        ),
        InputDeclaration(
            "start_by_rng",
            "The starting position from the controller's RNG (B1).",
            lambda t, v, by: t.procedure.start_by_rng(t.rng, by=by),
            journaled_as="start_position",
            journal_args=lambda v: {"method": "rng"},
            refusals=_START | {R.DICE_REQUIRED},
        ),
        InputDeclaration(
            "start_by_external_rng",
            "The starting position from an approved external RNG's number, signed by it "
            "where it signs (B1).",
            lambda t, v, by: t.start_external(v["number"], v["counter"], v["signature"], by),
            params=(
                Param(
                    "number",
                    {"type": "integer", "minimum": 1, "maximum": 7},
                    "the number it gave, 1 to the table's positions (1..7 in the shipped "
                    "pr-pai-gow-poker; the server takes its profile's)",
                    _whole("number", 1, _positions_of),
                ),
                Param(
                    "counter",
                    {"type": "integer", "minimum": 0, "maximum": MAX_JSON_INT},
                    "with signature: the generator's counter for that number, as it signed it",
                    _whole("counter", 0, MAX_JSON_INT),
                    required=False,
                    together=("signature",),
                ),
                Param(
                    "signature",
                    {"type": "string", "pattern": "^([0-9A-Fa-f]{2}){1,128}$"},
                    "with counter: the generator's signature over the number and its "
                    "counter, in hex (docs/journal.md); refused when it is not the "
                    "configured generator's, or the counter was already used",
                    _signature,
                    required=False,
                    together=("counter",),
                ),
            ),
            journaled_as="start_position",
            journal_args=_external_args,
            refusals=_START
            | {
                R.DICE_REQUIRED,
                R.SIGNATURE_REQUIRED,
                R.NO_GENERATOR,
                R.NOT_A_SIGNED_VALUE,
                R.SIGNED_OTHER_NUMBER,
                R.COUNTER_RANGE,
                R.BAD_SIGNATURE,
                R.COUNTER_USED,
            },
        ),
        InputDeclaration(
            "wager_settled",
            "The optional dice wagers are settled (B2).",
            lambda t, v, by: t.procedure.wager_settled(by=by),
            refusals=frozenset({R.NO_DICE_WAGER, R.START_FIRST, R.NO_DICE_WAGER_PENDING}),
        ),
        InputDeclaration(
            "stub_counted",
            "The croupier's count of the stub, once the shoe has finished it (D1); checked "
            "against the shoe's count, the stub cards read and the deck's size minus the "
            "cards dealt.",
            lambda t, v, by: t.procedure.stub_counted(v["count"], by=by),
            params=(
                Param(
                    "count",
                    {"type": "integer", "minimum": 0, "maximum": 53},
                    "the cards counted",
                    _whole("count", 0, _deck_size),
                ),
            ),
            refusals=frozenset(
                {
                    R.DEAL_INCOMPLETE,
                    R.STUB_UNFINISHED,
                    R.STUB_COUNTED,
                    R.NO_STUB_COUNT,
                    R.STUB_COUNT_RANGE,
                }
            ),
        ),
        InputDeclaration(
            "close_round",
            "Close the round after settlement (E2): the hands are published.",
            lambda t, v, by: t.procedure.close_round(by=by),
            refusals=frozenset(
                {R.DETERMINATION_FIRST, R.COUNT_FIRST, R.DEAL_UNFINISHED, R.NOTHING_TO_CLOSE}
            ),
        ),
        InputDeclaration(
            "accept_stub_count",
            "A supervisor accepts the croupier's count of the stub that the three figures "
            "disagree with (D1): another person than the one who entered it (E5); a "
            "conclusive reading of a deck of the wrong size decides the stub whatever is "
            "accepted (D4).",
            lambda t, v, by: t.procedure.accept_stub_count(by=by),
            supervisor_only="accepting a stub count the figures disagree with (D1)",
            refusals=frozenset({R.NO_COUNT_TO_ACCEPT, R.SUPERVISOR_ONLY, R.SECOND_PERSON}),
        ),
        InputDeclaration(
            "misdeal_determination",
            "Whether the cards were misdealt (D2); a determination against a conclusive "
            "record is a supervisor's, refused to a dealer (NotNow).",
            lambda t, v, by: t.procedure.misdeal_determination(v["misdealt"], by=by),
            params=(Param("misdealt", {"type": "boolean"}, "true: misdealt", _flag("misdealt")),),
            supervisor_when_contradicting=(
                "a misdeal determination that contradicts a conclusive record (every card "
                "read, every position complete) (D2)"
            ),
            refusals=frozenset({R.NO_DETERMINATION, R.SUPERVISOR_ONLY}),
        ),
        InputDeclaration(
            "confirm_new_deck",
            "A supervisor determines that the deck now in the shoe is a different one from "
            "the deck that left the table (D2).",
            lambda t, v, by: t.procedure.confirm_new_deck(by=by),
            supervisor_only=(
                "that a deck is a different one from the deck that left the table (D2)"
            ),
            journaled_as="new_deck",
            refusals=frozenset(
                {
                    R.NO_DECK_TO_CHANGE,
                    R.NO_NEW_DECK,
                    R.SUPERVISOR_ONLY,
                    R.CLOCK_NOT_SYNCHRONISED,
                }
            ),
        ),
        InputDeclaration(
            "clear_fault",
            "Clear the fault (F1); the attendant journaled is the signed-in supervisor. "
            "While the shoe is away with cards at stake, refused unless void_round is true "
            "(F2).",
            lambda t, v, by: t.procedure.clear_fault(by=by, void_round=v["void_round"]),
            params=(
                Param(
                    "void_round",
                    {"type": "boolean"},
                    "true: end the round void with the clear (the choice offered while the "
                    "shoe is away)",
                    _flag("void_round"),
                    required=False,
                    default=False,
                ),
            ),
            supervisor_only="clearing a fault (F1)",
            journaled_as="attendant_clear",
            refusals=frozenset({R.NO_FAULT, R.STILL_JAMMED, R.SHOE_AWAY, R.SUPERVISOR_ONLY}),
        ),
        InputDeclaration(
            "void_round",
            "A supervisor ends the round void before its outcome, with a reason (F6).",
            lambda t, v, by: t.procedure.void_round(v["reason"], by=by),
            params=(
                Param(
                    "reason",
                    {"type": "string", "minLength": 1, "maxLength": MAX_TEXT},
                    f"why, in words, at most {MAX_TEXT} characters (journaled, and in the "
                    "round's end on the floor); a longer one is refused with InvalidParams",
                    _text("reason"),
                ),
            ),
            supervisor_only="ending a round void (F6)",
            refuse_early=_void_reason_too_long,
            refusals=frozenset(
                {
                    R.HANDS_IN_PLAY,
                    R.NOTHING_TO_VOID,
                    R.NO_VOID_REASON,
                    R.VOID_REASON_TOO_LONG,
                    R.SUPERVISOR_ONLY,
                }
            ),
        ),
    )
}


def declaration(name: str) -> InputDeclaration:
    """The input ``name``'s declaration; an input nobody declared is refused in one line."""
    found = DECLARATIONS.get(name)
    if found is None:
        raise ProcedureError(
            f"{name!r} is no input of the table: give one of {', '.join(DECLARATIONS)}"
        )
    return found
