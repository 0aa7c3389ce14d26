"""The rule -> tests matrix, read from the test sources without running them.

A test names the rule it checks with ``@pytest.mark.rule("D2")`` (several markers for
several rules). The reader understands the forms a test suite uses: the marker as a
decorator on a function or class, a module-level alias (``D2 = pytest.mark.rule("D2")``
then ``@D2``), ``pytestmark`` at module or class level (one mark or a list), and
``pytest.param(..., marks=...)`` inside a parametrize table. A marker it cannot read (an
argument that is not a string literal) is reported as a problem, never guessed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from shoe_controller.procedure.rules_catalogue import RULES

_HEADING = re.compile(r"^#{2,4} ([A-Z][0-9]+) (.+?)\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class MarkedTest:
    #: pytest's node id, relative to the base directory: ``tests/x/test_y.py::Cls::test_z``.
    node_id: str
    rules: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Problem:
    #: ``path:line`` of the marker that cannot be read.
    location: str
    message: str


@dataclass(frozen=True, slots=True)
class RuleMatrix:
    #: Every rule of the catalogue, in its order, with the tests naming it (maybe none).
    tests: Mapping[str, tuple[str, ...]]
    #: Rules of the catalogue that no test names.
    uncovered: tuple[str, ...]
    #: Rule ids that tests name but the catalogue does not know, with those tests.
    unknown: Mapping[str, tuple[str, ...]]
    problems: tuple[Problem, ...] = field(default=())

    @property
    def complete(self) -> bool:
        """Every rule has a test, and every marker names a known rule and can be read."""
        return not (self.uncovered or self.unknown or self.problems)


def rule_matrix(
    tests_dir: Path, rules: Iterable[str] = RULES, *, base: Path | None = None
) -> RuleMatrix:
    """Read every test module under ``tests_dir`` and match its markers to ``rules``."""
    marked, problems = collect_marked_tests(tests_dir, base=base)
    known = list(rules)
    by_rule: dict[str, list[str]] = {rule: [] for rule in known}
    unknown: dict[str, list[str]] = {}
    for test in marked:
        for rule in test.rules:
            target = by_rule if rule in by_rule else unknown
            target.setdefault(rule, []).append(test.node_id)
    return RuleMatrix(
        tests={rule: tuple(ids) for rule, ids in by_rule.items()},
        uncovered=tuple(rule for rule in known if not by_rule[rule]),
        unknown={rule: tuple(ids) for rule, ids in sorted(unknown.items())},
        problems=tuple(problems),
    )


def collect_marked_tests(
    tests_dir: Path, *, base: Path | None = None
) -> tuple[list[MarkedTest], list[Problem]]:
    """Every test item with at least one rule marker, and the markers that cannot be read.
    Node ids are relative to ``base`` (default: the parent of ``tests_dir``)."""
    root = base if base is not None else tests_dir.parent
    marked: list[MarkedTest] = []
    problems: list[Problem] = []
    paths = sorted({*tests_dir.rglob("test_*.py"), *tests_dir.rglob("*_test.py")})
    for path in paths:
        relative = path.relative_to(root).as_posix()
        reader = _ModuleReader(relative)
        reader.read(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        marked.extend(reader.marked)
        problems.extend(reader.problems)
    return marked, problems


def rules_in_document(text: str) -> dict[str, str]:
    """The rules a document states as headings ``### A1 Title``, by id, in order."""
    return {match.group(1): match.group(2) for match in _HEADING.finditer(text)}


def format_matrix(matrix: RuleMatrix) -> str:
    """The matrix as text: one block per rule, then what is missing or wrong."""
    lines: list[str] = []
    for rule, tests in matrix.tests.items():
        title = RULES[rule].title if rule in RULES else ""
        lines.append(f"{rule} {title} ({len(tests)} test{'s' if len(tests) != 1 else ''})")
        lines.extend(f"    {node_id}" for node_id in tests)
    for rule in matrix.uncovered:
        lines.append(f"NO TEST: rule {rule} has no test")
    for rule, tests in matrix.unknown.items():
        lines.append(f"UNKNOWN RULE: {rule} named by {', '.join(tests)}")
    for problem in matrix.problems:
        lines.append(f"UNREADABLE MARKER: {problem.location}: {problem.message}")
    return "\n".join(lines) + "\n"


class _ModuleReader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.marked: list[MarkedTest] = []
        self.problems: list[Problem] = []
        self._aliases: dict[str, tuple[str, ...]] = {}

    def read(self, module: ast.Module) -> None:
        module_rules: tuple[str, ...] = ()
        for node in module.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name) and target.id == "pytestmark":
                    module_rules += self._rules_of(node.value)
                elif isinstance(target, ast.Name):
                    rules = self._rules_of(node.value, quiet=True)
                    if rules and self._is_marker(node.value):
                        self._aliases[target.id] = rules
        for node in module.body:
            self._visit(node, prefix=self.path, inherited=module_rules)

    def _visit(self, node: ast.stmt, prefix: str, inherited: tuple[str, ...]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name.startswith("test"):
                rules = inherited + self._decorator_rules(node.decorator_list)
                self._add(f"{prefix}::{node.name}", rules)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            rules = inherited + self._decorator_rules(node.decorator_list)
            for item in node.body:
                if (
                    isinstance(item, ast.Assign)
                    and len(item.targets) == 1
                    and isinstance(item.targets[0], ast.Name)
                    and item.targets[0].id == "pytestmark"
                ):
                    rules += self._rules_of(item.value)
            own_prefix = f"{prefix}::{node.name}"
            has_tests = any(
                isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and item.name.startswith(("test", "Test"))
                for item in node.body
            )
            if has_tests:
                for item in node.body:
                    self._visit(item, own_prefix, rules)
            else:
                # Its tests are inherited (a unittest or hypothesis TestCase): the class is
                # the test item.
                self._add(own_prefix, rules)

    def _add(self, node_id: str, rules: tuple[str, ...]) -> None:
        unique = tuple(dict.fromkeys(rules))
        if unique:
            self.marked.append(MarkedTest(node_id, unique))

    def _decorator_rules(self, decorators: list[ast.expr]) -> tuple[str, ...]:
        rules: tuple[str, ...] = ()
        for decorator in decorators:
            rules += self._rules_of(decorator)
            if isinstance(decorator, ast.Call) and _dotted(decorator.func).endswith(
                "mark.parametrize"
            ):
                rules += self._param_rules(decorator)
        return rules

    def _param_rules(self, parametrize: ast.Call) -> tuple[str, ...]:
        """Rules given to single cases: ``pytest.param(..., marks=...)``."""
        rules: tuple[str, ...] = ()
        for node in ast.walk(parametrize):
            if isinstance(node, ast.Call) and _dotted(node.func).endswith("param"):
                for keyword in node.keywords:
                    if keyword.arg == "marks":
                        rules += self._rules_of(keyword.value)
        return rules

    def _rules_of(self, node: ast.expr, *, quiet: bool = False) -> tuple[str, ...]:
        """The rule ids one mark expression (or a list or tuple of them) gives."""
        if isinstance(node, ast.List | ast.Tuple):
            rules: tuple[str, ...] = ()
            for item in node.elts:
                rules += self._rules_of(item, quiet=quiet)
            return rules
        if isinstance(node, ast.Name) and node.id in self._aliases:
            return self._aliases[node.id]
        if not self._is_marker(node):
            return ()
        assert isinstance(node, ast.Call)
        ids: list[str] = []
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                ids.append(arg.value)
            elif not quiet:
                self._problem(arg, "the rule id is not a string literal")
        if not node.args and not quiet:
            self._problem(node, "the rule marker names no rule")
        return tuple(ids)

    @staticmethod
    def _is_marker(node: ast.expr) -> bool:
        return isinstance(node, ast.Call) and _dotted(node.func) in (
            "pytest.mark.rule",
            "mark.rule",
        )

    def _problem(self, node: ast.expr, message: str) -> None:
        self.problems.append(Problem(f"{self.path}:{node.lineno}", message))


def _dotted(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))
