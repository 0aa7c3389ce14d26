"""shoe-diag diagram and rules: the procedure as reviewers see it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from shoe_controller.errors import ExitCode
from shoe_controller.procedure import RULES, procedure_diagram
from shoe_controller.traceability import format_matrix, rule_matrix
from tests.cli.conftest import ROOT, Run

pytestmark = pytest.mark.usefixtures("hermetic")


def test_diagram_is_the_procedures(run: Run) -> None:
    result = run("diagram")
    assert result.code == ExitCode.OK
    assert result.out == procedure_diagram()
    assert "stateDiagram" in result.out
    as_json = json.loads(run("diagram", "--json").out)
    assert as_json == {"format": "mermaid", "diagram": procedure_diagram()}


def test_rules_reads_the_source_trees_tests(run: Run) -> None:
    tests = ROOT / "tests"
    matrix = rule_matrix(tests, base=ROOT)
    result = run("rules")
    assert result.code == (ExitCode.OK if matrix.complete else ExitCode.CHECK_FAILED)
    assert result.out == format_matrix(matrix)
    rows = [json.loads(line) for line in run("rules", "--json").out.splitlines()]
    known = [row for row in rows if row.get("known")]
    assert [row["rule"] for row in known] == list(RULES)
    assert all(row["title"] == RULES[row["rule"]].title for row in known)
    assert all(set(row) == {"rule", "title", "known", "tests"} for row in known)
    mine = "tests/cli/test_diag_monitor.py::test_cards_are_hidden_outside_test_mode"
    assert mine in next(row["tests"] for row in known if row["rule"] == "E1")


def _suite(tmp_path: Path, source: str) -> Path:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_some.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return tests


def test_a_rule_without_a_test_fails(run: Run, tmp_path: Path) -> None:
    tests = _suite(
        tmp_path,
        """
        import pytest

        @pytest.mark.rule("A1")
        def test_one():
            pass

        @pytest.mark.rule("Z9")
        def test_two():
            pass

        @pytest.mark.rule(NAME)
        def test_three():
            pass
        """,
    )
    result = run("rules", "--tests", str(tests))
    assert result.code == ExitCode.CHECK_FAILED
    assert result.out.startswith("A1 Approved shoe (1 test)\n    tests/test_some.py::test_one\n")
    line = result.error_line
    assert "no test for rule(s) A2, A3," in line
    assert "tests name unknown rule(s) Z9" in line
    assert "1 marker(s) cannot be read" in line
    rows = [
        json.loads(row) for row in run("rules", "--tests", str(tests), "--json").out.splitlines()
    ]
    assert {
        "rule": "Z9",
        "title": None,
        "known": False,
        "tests": ["tests/test_some.py::test_two"],
    } in rows
    assert rows[-1] == {
        "rule": None,
        "location": "tests/test_some.py:12",
        "problem": "the rule id is not a string literal",
    }


def test_rules_needs_a_test_directory(run: Run, tmp_path: Path) -> None:
    result = run("rules", "--tests", str(tmp_path / "none"))
    assert result.code == ExitCode.CONFIG
    assert "is not a directory" in result.error_line
