"""shoe-diag diagram and rules: the procedure as reviewers see it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from shoe_controller.errors import ExitCode
from tests.cli.conftest import ROOT, Run

pytestmark = pytest.mark.usefixtures("hermetic")


def _committed_diagram() -> str:
    """The diagram docs/procedure.md shows (a test keeps it the machine's)."""
    text = (ROOT / "docs" / "procedure.md").read_text(encoding="utf-8")
    block = text.split("<!-- BEGIN procedure diagram", 1)[1].split("```mermaid\n", 1)[1]
    return block.split("```", 1)[0]


def test_diagram_is_the_procedures(run: Run) -> None:
    result = run("diagram")
    assert result.code == ExitCode.OK
    assert result.out == _committed_diagram()
    assert result.out.startswith("---\ntitle: Dealing procedure\n---\nstateDiagram-v2\n")
    as_json = json.loads(run("diagram", "--json").out)
    assert as_json == {"format": "mermaid", "diagram": _committed_diagram()}


def _listed(text: str) -> dict[str, tuple[str, list[str]]]:
    """{rule: (its heading, its tests)} as ``shoe-diag rules`` lists them."""
    listed: dict[str, tuple[str, list[str]]] = {}
    tests: list[str] = []
    for line in text.splitlines():
        if line.startswith("    "):
            tests.append(line.strip())
        else:
            tests = []
            listed[line.split()[0]] = (line, tests)
    return listed


RULE_IDS = [
    "A1",
    "A2",
    "A3",
    "B1",
    "B2",
    "C1",
    "C2",
    "C3",
    "C4",
    "D1",
    "D2",
    "D3",
    "D4",
    "E1",
    "E2",
    "E3",
    "E4",
    "E5",
    "F1",
    "F2",
    "F3",
    "F4",
    "F5",
    "F6",
]


def test_rules_reads_the_source_trees_tests(run: Run) -> None:
    result = run("rules")
    # Every rule of the regulation has a test in this tree.
    assert result.code == ExitCode.OK, result.err
    listed = _listed(result.out)
    assert list(listed) == RULE_IDS
    heading, tests = listed["E2"]
    assert heading == f"E2 Round record at close ({len(tests)} tests)"
    confidentiality = "tests/procedure/test_confidentiality.py"
    assert f"{confidentiality}::test_a_void_round_never_publishes_a_round_record" in tests
    monitor = "tests/cli/test_diag_monitor.py"
    assert f"{monitor}::test_cards_are_hidden_outside_test_mode" in listed["E1"][1]
    # The same, one JSON object a rule.
    rows = [json.loads(line) for line in run("rules", "--json").out.splitlines()]
    assert all(set(row) == {"rule", "title", "known", "tests"} for row in rows)
    assert all(row["known"] for row in rows)
    assert {row["rule"]: row["tests"] for row in rows} == {r: t for r, (_, t) in listed.items()}
    assert {row["rule"]: row["title"] for row in rows}["D1"] == "Stub count"


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
