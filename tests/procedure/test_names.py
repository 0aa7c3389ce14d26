"""Names apart: "rules" names the regulation's rules (A1..F6) and the rules profiles'
TableRules, never the parts of the machine's model, which are its callbacks."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import shoe_controller.procedure
from shoe_controller.procedure.core import ModelCore
from shoe_controller.procedure.model import ProcedureModel


def test_the_models_parts_are_named_for_the_callbacks_they_are() -> None:
    parts = [
        c for c in ProcedureModel.__mro__[1:] if issubclass(c, ModelCore) and c is not ModelCore
    ]
    assert parts
    assert [c.__name__ for c in parts if not c.__name__.endswith("Callbacks")] == []


def test_no_class_of_the_procedure_but_the_profiles_rules_is_named_rules() -> None:
    named_rules = set()
    for module in pkgutil.iter_modules(shoe_controller.procedure.__path__):
        loaded = importlib.import_module(f"shoe_controller.procedure.{module.name}")
        for name, value in inspect.getmembers(loaded, inspect.isclass):
            if value.__module__ == loaded.__name__ and name.endswith("Rules"):
                named_rules.add(name)
    assert named_rules == {"TableRules"}
