"""Every refusal of an input the procedure does not take in its phase names its rule and
what to do in one English line, and carries a stable code with the values its words need
(procedure/refusals.py), so that a console words it in its own language. So does every
other refusal a person can meet: of what an input carries, of who gives it (E4), of an
attendant's clear (F1, F2), of the clock (E3), of an external generator's signed value
(B1) and of a stopped controller: each is made through refusals.py, which a walk of the
procedure's and the service's source checks raise site by raise site."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import shoe_controller
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import LINK_GRACE, Phase, Procedure, TableRules, authority, refusals
from shoe_controller.procedure import procedure as procedure_module
from shoe_controller.procedure.authority import SUPERVISOR_INPUTS
from shoe_controller.procedure.inputs import MAX_TEXT, text_too_long
from shoe_controller.procedure.machine import TRANSITIONS
from shoe_controller.procedure.refusals import INPUTS, VALUES, Refusal, RefusalCode, refusal
from shoe_controller.procedure.start import (
    StartMethod,
    StartPosition,
    start_from_dice,
    start_from_rng,
)
from shoe_controller.service.external_rng import (
    ExternalRng,
    ExternalRngSettings,
    SignedNumber,
    parse_signed_value,
)
from tests.procedure.people import DEALER, SUPERVISOR

from .table_driver import PHASES, Table, reach, reach_fault

RULE = re.compile(r"\((?:[A-F]\d, )*[A-F]\d\)$")


def _tables() -> Iterator[Table]:
    """A table in every phase (the fault too), and one that offers no dice wager."""
    for phase in PHASES:
        yield reach(phase)
    yield reach_fault()
    plain = Table()
    plain.approve()
    yield plain


def phase_refusals() -> list[Refusal]:
    """Every refusal the procedure makes, for every input, in every phase it refuses it."""
    made = []
    for table in _tables():
        for name in INPUTS:
            if not table.procedure.accepts(name):
                made.append(refusal(table.procedure, name))
    return made


def _refused(give: Callable[[], object]) -> Refusal:
    """The refusal ``give`` meets, as its ProcedureError carries it."""
    with pytest.raises(ProcedureError) as refused:
        give()
    exc = refused.value
    assert exc.code is not None, f"refused without a code: {exc}"
    return Refusal(RefusalCode(exc.code), str(exc), exc.values)


def _clock_held() -> None:
    table = Table(TableRules(require_synchronized_clock=True))
    table.procedure.clock(False, "adjtimex")
    table.approve()
    table.procedure.deck_loaded()
    table.procedure.confirm_shuffle(by=DEALER)


def _shoe_away() -> None:
    p = reach(Phase.DEALING).procedure
    p.link_lost(0.0)
    p.tick(LINK_GRACE + 1.0)
    p.clear_fault(by=SUPERVISOR)


def _contradicting() -> None:
    # Every card of the deal read, every position complete, a stub of 5: a misdeal is ruled
    # out by the record (D2).
    table = reach(Phase.STUB_CONFIRM)
    table.procedure.stub_counted(5, by=DEALER)
    table.procedure.accept_stub_count(by=SUPERVISOR)
    table.procedure.misdeal_determination(True, by=DEALER)


def _accepted_by_whoever_counted() -> None:
    # The one who entered a count the figures disagree with may not also accept it (E5).
    table = reach(Phase.STUB_CONFIRM)
    table.procedure.stub_counted(3, by=SUPERVISOR)
    table.procedure.accept_stub_count(by=SUPERVISOR)


#: An external generator whose signatures are b"ok", and whose counter 3 was used.
_GENERATOR = ExternalRng(
    ExternalRngSettings("RNG-0042", "ed25519", Path("rng-0042.key")),
    required=False,
    verify=lambda signature, message: signature == b"ok",
    last_counter=3,
)


#: The refusals made where an input is given, each as a person meets it: its name, and how.
GIVEN: dict[str, Callable[[], object]] = {
    "no_new_deck": lambda: reach(Phase.DECK_REMOVED).procedure.confirm_new_deck(by=SUPERVISOR),
    "no_wagers_entered": lambda: reach(Phase.DECK_LOADED).procedure.no_more_bets(by=DEALER),
    "not_a_betting_position": lambda: reach(Phase.DECK_LOADED).procedure.set_wagers([9], by=DEALER),
    "not_a_start_position": lambda: reach(Phase.BETS_CLOSED).procedure.set_start(
        StartPosition(StartMethod.DICE, (6, 6, 6), 9), by=DEALER
    ),
    "not_a_generator_number": lambda: start_from_rng(0),
    "not_a_die": lambda: start_from_dice(3, 7, 1),
    "dice_required": lambda: reach(Phase.BETS_CLOSED).procedure.start_by_rng(by=DEALER),
    "stub_count_range": lambda: reach(Phase.STUB_CONFIRM).procedure.stub_counted(99, by=DEALER),
    "no_void_reason": lambda: reach(Phase.DEALING).procedure.void_round(" ", by=SUPERVISOR),
    "void_reason_too_long": lambda: reach(Phase.DEALING).procedure.void_round(
        "x" * (MAX_TEXT + 1), by=SUPERVISOR
    ),
    "supervisor_only": lambda: reach_fault().procedure.clear_fault(by=DEALER),
    "supervisor_only, contradicting": _contradicting,
    "second_person": _accepted_by_whoever_counted,
    "no_fault": lambda: reach(Phase.IDLE).procedure.clear_fault(by=SUPERVISOR),
    "still_jammed": lambda: reach_fault().procedure.clear_fault(by=SUPERVISOR),
    "shoe_away": _shoe_away,
    "clock_not_synchronised": _clock_held,
    "signature_required": lambda: ExternalRng(None, required=True).check(4, None),
    "no_generator": lambda: ExternalRng(None, required=False).check(4, SignedNumber(4, 1, b"ok")),
    "not_a_signed_value": lambda: parse_signed_value("4:1:xyz"),
    "signed_other_number": lambda: _GENERATOR.check(5, SignedNumber(4, 9, b"ok")),
    "counter_range": lambda: _GENERATOR.check(4, SignedNumber(4, -1, b"ok")),
    "bad_signature": lambda: _GENERATOR.check(4, SignedNumber(4, 9, b"forged")),
    "counter_used": lambda: _GENERATOR.check(4, SignedNumber(4, 3, b"ok")),
}

#: The service's refusals that need a controller stopped or a journal failing to meet:
#: the walk below finds each made at a raise site; here they are made as it makes them.
SERVICE: dict[str, Callable[[], Refusal]] = {
    "controller_stopped": refusals.controller_stopped,
    "stopped_before_journaled": refusals.stopped_before_journaled,
    "not_recorded": refusals.not_recorded,
}


def given_refusals() -> list[Refusal]:
    return [_refused(give) for give in GIVEN.values()] + [make() for make in SERVICE.values()]


def made_refusals() -> list[Refusal]:
    """Every refusal a person can meet: the phases', and those of what and who and when."""
    return phase_refusals() + given_refusals()


def test_every_refusal_code_is_made_somewhere() -> None:
    assert {r.code for r in made_refusals()} == set(RefusalCode)


def test_each_refusal_carries_its_code_s_values_and_names_its_rule() -> None:
    for made in phase_refusals() + [_refused(give) for give in GIVEN.values()]:
        assert tuple(made.values) == VALUES[made.code], made
        assert all(value is not None for value in made.values.values()), made
        json.dumps(dict(made.values))
        assert RULE.search(made.message), made.message


def test_the_refusals_of_what_and_who_carry_the_values_their_words_need() -> None:
    made = {name: _refused(give) for name, give in GIVEN.items()}
    assert {name: dict(r.values) for name, r in made.items() if r.values} == {
        "no_wagers_entered": {"round": "r1"},
        "not_a_betting_position": {"first": 2, "last": 7},
        "not_a_start_position": {"positions": 7},
        "not_a_generator_number": {"positions": 7},
        "not_a_die": {"die": 2, "faces": 6},
        "stub_count_range": {"deck_size": 53},
        "void_reason_too_long": {"limit": MAX_TEXT, "length": MAX_TEXT + 1},
        "supervisor_only": {"input": "clear_fault"},
        "supervisor_only, contradicting": {"input": "misdeal_determination"},
        "second_person": {"person": SUPERVISOR.name},
        "shoe_away": {"round": "r1"},
        "signed_other_number": {"signed": 4, "number": 5},
        "counter_range": {"counter": -1},
        "bad_signature": {"device": "RNG-0042", "number": 4, "counter": 9},
        "counter_used": {"device": "RNG-0042", "counter": 3, "last_counter": 3},
    }
    # The English lines stay what the terminal and the journal showed before they had codes.
    assert made["void_reason_too_long"].message == text_too_long(
        "a void's reason", "x" * (MAX_TEXT + 1), "say it in fewer words (F6)"
    )
    assert made["stub_count_range"].message == (
        "stub count 99 is not a number of cards from 0 to 53: count the remaining cards again (D1)"
    )
    assert made["supervisor_only"].message == (
        "dealer-1 is a dealer: clearing a fault (F1) is a supervisor's; a supervisor must "
        "sign in and give it (E4)"
    )


@pytest.mark.rule("E4")
def test_a_dealer_giving_a_supervisor_s_input_is_refused_naming_the_input() -> None:
    for name in SUPERVISOR_INPUTS:
        with pytest.raises(ProcedureError) as refused:
            authority.require(name, DEALER)
        assert (refused.value.code, refused.value.values) == ("supervisor_only", {"input": name})


@pytest.mark.rule("F2")
def test_a_clear_while_the_shoe_is_away_with_cards_at_stake_is_refused_by_code() -> None:
    made = _refused(_shoe_away)
    assert (made.code, dict(made.values)) == ("shoe_away", {"round": "r1"})
    assert made.message.startswith("the shoe is away with cards of round r1 at stake")


@pytest.mark.rule("E3")
def test_a_round_held_for_the_clock_is_refused_by_code() -> None:
    made = _refused(_clock_held)
    assert (made.code, dict(made.values)) == ("clock_not_synchronised", {})
    assert made.message.startswith("the system clock is not synchronised")


def test_a_refusal_s_values_are_its_code_s_or_it_is_not_made() -> None:
    with pytest.raises(ValueError, match="carries"):
        Refusal(RefusalCode.START_SET, "x (B1)")


@pytest.mark.rule("D1")
def test_a_count_entered_before_the_shoe_finished_the_stub_is_refused_by_code() -> None:
    table = reach(Phase.STUB_COUNT)
    with pytest.raises(ProcedureError) as refused:
        table.procedure.stub_counted(4, by=DEALER)
    assert refused.value.code == "stub_unfinished"
    assert refused.value.values == {}
    assert str(refused.value).startswith("the shoe has not finished the stub")


@pytest.mark.rule("F1")
def test_an_input_blocked_by_a_fault_names_the_faults() -> None:
    table = reach_fault()
    with pytest.raises(ProcedureError) as refused:
        table.procedure.close_round(by=DEALER)
    assert (refused.value.code, refused.value.values) == ("fault", {"faults": ["jam"]})
    assert "blocked by a fault (jam)" in str(refused.value)


# --- every refusal a person meets is made through refusals.py ----------------------------

PACKAGE = Path(shoe_controller.__file__).parent
#: Where refusals are raised: the procedure and the service that runs it.
WALKED = ("procedure", "service")

#: The ProcedureErrors made without refusals.py, where none reaches a person through the
#: API (the console words what does): how many each function makes, and why.
ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    ("procedure/procedure.py", "Procedure.recover"): (
        1,
        "the controller's own call at start-up, before any input: no person's",
    ),
    ("procedure/procedure.py", "Procedure.confirm_button"): (
        1,
        "the shoe's button: the controller journals its refusal and answers no one",
    ),
    ("service/controller.py", "TableController._press"): (
        1,
        "the shoe's button: the controller journals its refusal and answers no one",
    ),
    ("procedure/authority.py", "Person.__post_init__"): (
        2,
        "a Person is made from a signed-in user, whose name and role were checked at "
        "sign-in: an empty name or an unknown role is a caller's bug",
    ),
    ("procedure/authority.py", "require"): (
        1,
        "an input given without a Person is a caller's bug (the controller gives one)",
    ),
    ("service/controller.py", "TableController._person"): (
        3,
        "the API gives every input its session's user, and refuses a role that gives no "
        "input (-32002) before the controller sees it; only a bench's script or a caller's "
        "bug meets these",
    ),
    ("procedure/declarations.py", "_invalid"): (
        1,
        "a parameter that is not what its declaration says travels as InvalidParams "
        "(-32602): the console sends only what the schema allows",
    ),
    ("procedure/declarations.py", "declaration"): (
        1,
        "an input no declaration gives: the API registers only declared ones, so only a "
        "caller's bug meets it",
    ),
    ("service/controller.py", "TableController._handle_input"): (
        1,
        "TableMovedOn travels as its own error (-32007, MovedOn), which the console words",
    ),
}


def _error_classes(trees: dict[str, ast.Module]) -> set[str]:
    """ProcedureError and the classes the walked modules derive from it."""
    names = {"ProcedureError"}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Name) and base.id in names for base in node.bases
            ):
                names.add(node.name)
    return names


def _made_where(tree: ast.Module, classes: set[str]) -> Iterator[tuple[str, int]]:
    """(the enclosing function's qualified name, line) of every call making one of
    ``classes`` in ``tree``."""

    def visit(node: ast.AST, scope: tuple[str, ...]) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                yield from visit(child, (*scope, child.name))
                continue
            if isinstance(child, ast.Call):
                func = child.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if name in classes:
                    yield ".".join(scope), child.lineno
            yield from visit(child, scope)

    yield from visit(tree, ())


def _trees() -> dict[str, ast.Module]:
    return {
        path.relative_to(PACKAGE).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for folder in WALKED
        for path in sorted((PACKAGE / folder).rglob("*.py"))
    }


def test_every_procedure_error_is_made_through_refusals_py_or_never_reaches_a_person() -> None:
    trees = _trees()
    classes = _error_classes(trees)
    made = Counter(
        (path, where) for path, tree in trees.items() for where, _line in _made_where(tree, classes)
    )
    # Refusal.error is where refusals.py makes each one, with its code.
    assert made.pop(("procedure/refusals.py", "Refusal.error")) == 1
    allowed = Counter({where: count for where, (count, _why) in ALLOWED.items()})
    # Made without a code where none is allowed; an allowance that allows nothing now.
    assert sorted((made - allowed).items()) == []
    assert sorted((allowed - made).items()) == []


def _callee(call: ast.Call) -> str | None:
    """The function ``call`` calls: ``refusals.name(...)``, or a name imported alone."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.attr if func.value.id == "refusals" else None
    return func.id if isinstance(func, ast.Name) else None


def test_every_refusal_function_is_made_at_a_raise_site() -> None:
    """Each function of refusals.py is called where the procedure or the service refuses."""
    defined = {
        node.name
        for node in ast.parse(Path(refusals.__file__).read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef)
        and not node.name.startswith("_")
        and node.returns is not None
        and "Refusal" in ast.unparse(node.returns)
    }
    called = {
        _callee(node)
        for path, tree in _trees().items()
        if path != "procedure/refusals.py"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    assert sorted(defined - called) == []
    given = {name.split(",")[0] for name in GIVEN} | set(SERVICE)
    assert sorted(defined - given - {"refusal", "unmet"}) == []


# --- the words of a refusal are keyed beside the machine's table -------------------------


def _machine_triggers() -> dict[Phase, set[str]]:
    machine = Procedure()._machine  # the table as the machine was built from it
    return {phase: set(machine.get_triggers(phase)) for phase in Phase}


def test_every_pair_the_machine_refuses_has_its_words_and_no_other_pair_has() -> None:
    triggers = _machine_triggers()
    refused = {(name, phase) for name in INPUTS for phase in Phase if name not in triggers[phase]}
    assert sorted(refused - set(refusals.REFUSED)) == []
    assert sorted(set(refusals.REFUSED) - refused) == []


def test_the_inputs_worded_are_every_person_s_input_the_facade_fires() -> None:
    source = Path(procedure_module.__file__).read_text(encoding="utf-8")
    fired = set(re.findall(r'self\._require\(\s*"(\w+)"', source))
    assert fired == set(INPUTS)


def test_a_pair_with_no_words_is_an_error_not_a_sentence() -> None:
    table = reach(Phase.DEALING)
    with pytest.raises(LookupError, match="no words for refusing card_drawn in dealing"):
        refusal(table.procedure, "card_drawn")
    with pytest.raises(LookupError, match="on its condition deal_card_is_last"):
        refusals.unmet(table.procedure, "deal_card_is_last")


def test_every_condition_that_can_refuse_a_person_s_input_has_its_words() -> None:
    """Where every transition of an input from a phase has a condition, the input can be
    refused there by one: each such condition, by name, has words in UNMET (a destination's
    own condition, LeadsTo, is not a refusal: one of them always holds)."""
    can_refuse: set[str] = set()
    for name in INPUTS:
        for phase in Phase:
            rows = [t for t in TRANSITIONS if t["trigger"] == name and phase in t["source"]]
            if not rows or any(not t.get("conditions") and not t.get("unless") for t in rows):
                continue
            # A condition of every row refuses on its own; one of some rows only needs
            # another to fail in the rest, and that one is then met first.
            named = [
                {c for c in _listed(t.get("conditions", [])) if isinstance(c, str)} for t in rows
            ]
            can_refuse.update(set.intersection(*named))
    assert can_refuse == set(refusals.UNMET)


def _listed(conditions: object) -> list[object]:
    return [conditions] if isinstance(conditions, str) else list(conditions)  # type: ignore[call-overload]


@pytest.mark.rule("D2")
def test_a_new_deck_confirmed_with_none_loaded_is_refused_by_its_condition() -> None:
    table = reach(Phase.DECK_REMOVED)
    decisions_before = list(table.log)
    with pytest.raises(ProcedureError) as refused:
        table.procedure.confirm_new_deck(by=SUPERVISOR)
    assert refused.value.code == "no_new_deck"
    assert table.phase is Phase.DECK_REMOVED
    assert table.log == decisions_before
