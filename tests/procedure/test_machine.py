"""The machine's table against the model and the library it is built with."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

import shoe_controller
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import Phase
from shoe_controller.procedure.inputs import Clearance
from shoe_controller.procedure.machine import (
    CLEAR_TARGETS,
    INTAKE,
    NOTED,
    REPORTS,
    TRANSITIONS,
    callback_names,
)
from shoe_controller.procedure.model import ProcedureModel
from tests.procedure.people import supervisor

from .table_driver import PHASES, reach, reach_fault

PROCEDURE = Path(shoe_controller.__file__).parent / "procedure"
PYPROJECT = Path(shoe_controller.__file__).parents[1] / "pyproject.toml"


def test_the_procedure_uses_only_the_public_interface_of_transitions() -> None:
    """No private name imported, no class of the library extended: a new release is taken
    on its own tests, with no upper bound to lift by hand."""
    for path in sorted(PROCEDURE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transitions"):
                for alias in node.names:
                    assert not alias.name.startswith("_"), (path.name, alias.name)
                    imported.add(alias.asname or alias.name)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(base) for base in node.bases}
                assert not bases & imported, (path.name, node.name)
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                assert not node.attr.startswith("_change"), (path.name, node.attr)


def test_the_dependency_on_transitions_has_no_upper_bound() -> None:
    dependencies = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    (spec,) = [d for d in dependencies if d.startswith("transitions")]
    assert "<" not in spec, spec


def _clears() -> list[tuple[Phase, bool]]:
    return [
        (phase, void) for phase in PHASES if phase is not Phase.STOPPED for void in (False, True)
    ]


@pytest.mark.rule("F1")
@pytest.mark.parametrize(("origin", "void_round"), _clears())
def test_a_clear_goes_where_the_model_says_before_anything_changes(
    origin: Phase, void_round: bool
) -> None:
    """From a fault in every phase, with the round voided or not: the machine's one
    transition whose destination's condition holds is taken, and it leads where the
    model's clearing said before the clear changed anything."""
    table = reach(origin)
    procedure = table.procedure
    procedure.jam()
    procedure.jam_cleared(card_left=False)
    assert procedure.phase is Phase.FAULT
    model = procedure._model  # the decision, read as the condition reads it
    predicted = model.clearing(Clearance("att-1", void_round)).target
    assert predicted in CLEAR_TARGETS
    try:
        procedure.clear_fault(by=supervisor("att-1"), void_round=void_round)
    except ProcedureError as refused:
        pytest.fail(f"a clear from {origin} was refused: {refused}")
    assert procedure.phase is predicted or (
        # a phase that moves on by itself on entry (a deck waiting goes to its check)
        predicted in (Phase.IDLE, Phase.CLOSED, Phase.VOID_FAULT, Phase.VOID_MISDEAL)
        and procedure.phase in (Phase.SHUFFLE_CHECK, Phase.NO_SHOE)
    ), (origin, void_round, predicted, procedure.phase)


@pytest.mark.rule("F1")
def test_the_attendants_clear_goes_where_the_model_computes() -> None:
    table = reach_fault()
    table.procedure.jam_cleared(card_left=False)
    table.procedure.clear_fault(by=supervisor("att-1"))
    assert table.phase is Phase.DEALING


def test_every_name_in_the_table_is_a_method_of_the_model() -> None:
    missing = sorted(name for name in callback_names() if not hasattr(ProcedureModel, name))
    assert not missing


def test_every_report_is_noted_in_every_phase_but_stopped() -> None:
    for trigger in REPORTS:
        assert trigger in INTAKE
        sources = {
            source
            for transition in (*TRANSITIONS, *NOTED)
            if transition["trigger"] == trigger
            for source in transition["source"]
        }
        assert sources == {phase for phase in Phase if phase is not Phase.STOPPED}, trigger


#: The parts of the model whose fields change only through their own methods.
GUARDED = {"deck": "DeckState", "fault": "FaultState"}


def _written_fields(tree: ast.Module) -> list[tuple[str, str, int]]:
    """(part, field, line) of every write to ``<x>.deck.<field>`` or ``<x>.fault.<field>``
    in ``tree``, outside the part's own class: an assignment, an augmented one, or a call
    of a list's method that changes it."""
    found = []
    owners = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for inner in ast.walk(node):
                owners[id(inner)] = node.name

    def part_of(target: ast.expr) -> tuple[str, str] | None:
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute):
            part = target.value.attr
            if part in GUARDED:
                return part, target.attr
        return None

    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [
                e for t in node.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])
            ]
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            changes = node.func.attr in ("append", "extend", "remove", "clear", "pop", "insert")
            targets = [node.func.value] if changes else []
        for target in targets:
            written = part_of(target)
            if written is not None and owners.get(id(node)) != GUARDED[written[0]]:
                found.append((*written, node.lineno))
    return found


def test_the_deck_s_and_the_faults_fields_change_only_through_their_methods() -> None:
    writes = {
        path.name: _written_fields(ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PROCEDURE.glob("*.py"))
    }
    assert {name: found for name, found in writes.items() if found} == {}


def test_the_walk_finds_a_field_written_from_outside() -> None:
    tree = ast.parse(
        "class FaultCallbacks:\n"
        "    def f(self):\n"
        "        self.deck.must_change = True\n"
        "        self.fault.codes.append(1)\n"
        "        self.deck.waiting, self.deck.spent = False, False\n"
    )
    assert _written_fields(tree) == [
        ("deck", "must_change", 3),
        ("deck", "waiting", 5),
        ("deck", "spent", 5),
        ("fault", "codes", 4),
    ]
