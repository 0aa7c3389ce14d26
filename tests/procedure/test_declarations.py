"""Every input a person gives is declared once (procedure/declarations.py): who gives it,
its parameters and their checks, its journal name and the refusals it may meet (E4)."""

from __future__ import annotations

import pytest

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import TableRules
from shoe_controller.procedure.authority import SUPERVISOR_INPUTS, needs_supervisor
from shoe_controller.procedure.declarations import (
    DECLARATIONS,
    InvalidParameter,
    declaration,
)
from shoe_controller.procedure.refusals import VALUES, RefusalCode

RULES = TableRules()

#: The journal's name of each input: a published interface (docs/journal.md) that stays.
JOURNALED = {
    "set_wagers": "set_wagers",
    "no_more_bets": "no_more_bets",
    "confirm_shuffle": "confirm_shuffle",
    "start_by_dice": "start_position",
    "start_by_rng": "start_position",
    "start_by_external_rng": "start_position",
    "wager_settled": "wager_settled",
    "stub_counted": "stub_counted",
    "close_round": "close_round",
    "accept_stub_count": "accept_stub_count",
    "misdeal_determination": "misdeal_determination",
    "confirm_new_deck": "new_deck",
    "clear_fault": "attendant_clear",
    "void_round": "void_round",
}


def test_each_input_keeps_the_journal_name_it_is_published_under() -> None:
    assert {name: d.journal_name for name, d in DECLARATIONS.items()} == JOURNALED


@pytest.mark.rule("E4")
def test_who_gives_each_input_is_read_from_its_declaration() -> None:
    assert set(SUPERVISOR_INPUTS) == {
        name for name, d in DECLARATIONS.items() if d.supervisor_only is not None
    }
    contradicting = [n for n, d in DECLARATIONS.items() if d.supervisor_when_contradicting]
    assert contradicting == ["misdeal_determination"]
    assert needs_supervisor("misdeal_determination", contradicts=True)
    assert not needs_supervisor("misdeal_determination")


def test_a_name_no_declaration_gives_is_never_taken_for_a_dealers_input() -> None:
    with pytest.raises(LookupError):
        needs_supervisor("attendant_clear")
    with pytest.raises(ProcedureError, match="'open_bets' is no input of the table"):
        declaration("open_bets")


def test_every_refusal_an_input_may_meet_is_a_refusal_the_procedure_words() -> None:
    for d in DECLARATIONS.values():
        assert d.may_refuse <= set(VALUES), d.name
    supervisor = {n for n, d in DECLARATIONS.items() if RefusalCode.SUPERVISOR_ONLY in d.refusals}
    assert supervisor == {*SUPERVISOR_INPUTS, "misdeal_determination"}


def test_a_missing_required_parameter_is_refused_as_its_check_words_it() -> None:
    with pytest.raises(InvalidParameter, match=r"^'count' is a whole number from 0 to 53$"):
        DECLARATIONS["stub_counted"].check({}, RULES)
    with pytest.raises(InvalidParameter, match=r"^'reason' is a non-empty string$"):
        DECLARATIONS["void_round"].check({"reason": ""}, RULES)


def test_an_optional_parameter_takes_its_default_and_is_checked_when_given() -> None:
    clear = DECLARATIONS["clear_fault"]
    assert clear.check({}, RULES) == {"void_round": False}
    with pytest.raises(InvalidParameter, match="'void_round' is true or false"):
        clear.check({"void_round": 1}, RULES)


def test_a_signed_value_comes_whole_or_not_at_all() -> None:
    external = DECLARATIONS["start_by_external_rng"]
    assert external.check({"number": 3}, RULES) == {
        "number": 3,
        "counter": None,
        "signature": None,
    }
    with pytest.raises(InvalidParameter, match="'signature' is the generator's signature"):
        external.check({"number": 3, "counter": 7}, RULES)
    with pytest.raises(InvalidParameter, match="'counter' is a whole number"):
        external.check({"number": 3, "signature": "ab"}, RULES)
    values = external.check({"number": 3, "counter": 7, "signature": "ABcd"}, RULES)
    assert external.args(values) == {
        "method": "rng",
        "number": 3,
        "source": "external",
        "counter": 7,
        "signature": "abcd",
    }


def test_the_bounds_follow_the_tables_rules() -> None:
    seven = DECLARATIONS["start_by_external_rng"]
    with pytest.raises(InvalidParameter, match="from 1 to 7"):
        seven.check({"number": 8}, RULES)
    wagers = DECLARATIONS["set_wagers"]
    assert wagers.check({"positions": [7, 2]}, RULES) == {"positions": [2, 7]}
    with pytest.raises(InvalidParameter, match=r"\(2\.\.7\)"):
        wagers.check({"positions": [1]}, RULES)
    with pytest.raises(InvalidParameter, match="names a position twice"):
        wagers.check({"positions": [2, 2]}, RULES)


def test_what_only_the_controllers_own_callers_give_is_not_on_the_api() -> None:
    on_api = {n: [p.name for p in d.api_params()] for n, d in DECLARATIONS.items()}
    assert on_api["no_more_bets"] == []
    assert [p.name for p in DECLARATIONS["no_more_bets"].params] == ["wagered"]
