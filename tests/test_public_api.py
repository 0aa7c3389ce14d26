"""The public API is what docs/integrators.md shows, and it imports from its packages."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import shoe_controller.hal
import shoe_controller.service
from shoe_controller.service import TableController

DOCS = Path(__file__).resolve().parents[1] / "docs"
PUBLIC_PACKAGES = ("shoe_controller.service", "shoe_controller.hal")


def documented_imports() -> list[tuple[str, str]]:
    """(module, name) of every ``from ... import`` in integrators.md's Python blocks."""
    text = (DOCS / "integrators.md").read_text()
    found: list[tuple[str, str]] = []
    for block in re.findall(r"```python\n(.*?)```", text, re.DOTALL):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module is not None:
                found += [(node.module, alias.name) for alias in node.names]
    return found


def test_the_documentation_imports_only_public_names() -> None:
    ours = [(m, n) for m, n in documented_imports() if m.startswith("shoe_controller")]
    assert ours, "integrators.md shows no import of the package"
    for module, name in ours:
        assert module in PUBLIC_PACKAGES, f"integrators.md imports {name} from {module}"
        assert name in importlib.import_module(module).__all__
        assert hasattr(importlib.import_module(module), name)


@pytest.mark.parametrize("package", [shoe_controller.service, shoe_controller.hal])
def test_every_exported_name_exists(package: object) -> None:
    for name in package.__all__:  # type: ignore[attr-defined]
        assert getattr(package, name) is not None


def test_every_public_method_of_the_controller_is_documented() -> None:
    undocumented = [
        name
        for name, member in inspect.getmembers(TableController)
        if not name.startswith("_") and not inspect.getdoc(member)
    ]
    assert undocumented == []
