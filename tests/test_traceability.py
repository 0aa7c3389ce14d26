"""Every rule of the procedure has a test, and every test names a rule that exists."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from shoe_controller.procedure import RULES
from shoe_controller.traceability import (
    MarkedTest,
    Problem,
    collect_marked_tests,
    format_matrix,
    rule_matrix,
    rules_in_document,
)

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"


def test_every_rule_has_a_test_and_every_marker_names_a_known_rule() -> None:
    matrix = rule_matrix(TESTS, base=REPO)
    assert matrix.complete, format_matrix(matrix)
    assert list(matrix.tests) == list(RULES)


def test_the_document_states_exactly_the_rules_of_the_catalogue() -> None:
    stated = rules_in_document((REPO / "docs" / "procedure.md").read_text(encoding="utf-8"))
    assert stated == {rule.id: rule.title for rule in RULES.values()}


def test_the_reader_agrees_with_pytest_on_the_collected_tests(
    request: pytest.FixtureRequest,
) -> None:
    marked, problems = collect_marked_tests(TESTS, base=REPO)
    assert problems == []
    read = {test.node_id: set(test.rules) for test in marked}
    # pytest gives each parametrized case its own marks; the matrix is per test function.
    collected: dict[str, set[str]] = {}
    for item in request.session.items:
        rules = {rule for mark in item.iter_markers("rule") for rule in mark.args}
        collected.setdefault(item.nodeid.split("[")[0], set()).update(rules)
    for node_id, rules in collected.items():
        # A class whose tests are inherited is read as one item: the class.
        expected = read.get(node_id) or read.get(node_id.rsplit("::", 1)[0], set())
        assert rules == expected, node_id


def _module(tmp_path: Path, source: str, name: str = "test_sample.py") -> Path:
    tests = tmp_path / "tests"
    (tests / "sub").mkdir(parents=True, exist_ok=True)
    (tests / "sub" / name).write_text(textwrap.dedent(source), encoding="utf-8")
    return tests


SAMPLE = """
    import pytest
    from pytest import mark

    pytestmark = pytest.mark.rule("E3")
    D2 = pytest.mark.rule("D2")
    NOT_A_MARK = "D1"

    @pytest.mark.rule("A1")
    def test_decorated():
        pass

    @D2
    @mark.rule("B1", "B2")
    def test_alias_and_two_rules():
        pass

    def test_module_mark_only():
        pass

    def helper_with_a_mark():
        pytest.mark.rule("C9")

    @pytest.mark.parametrize(
        "x", [pytest.param(1, marks=pytest.mark.rule("C1")), pytest.param(2, marks=[D2])]
    )
    def test_param_marks(x):
        pass

    @pytest.mark.rule("F1")
    class TestClass:
        pytestmark = [pytest.mark.rule("F2")]

        def test_inside(self):
            pass

        class TestNested:
            @pytest.mark.rule("F3")
            def test_deep(self):
                pass

    class TestInherited(SomeCase):
        pytestmark = [pytest.mark.rule("Z9")]
"""


def test_the_reader_understands_every_form_of_marker(tmp_path: Path) -> None:
    tests = _module(tmp_path, SAMPLE)
    marked, problems = collect_marked_tests(tests)
    assert problems == []
    path = "tests/sub/test_sample.py"
    assert marked == [
        MarkedTest(f"{path}::test_decorated", ("E3", "A1")),
        MarkedTest(f"{path}::test_alias_and_two_rules", ("E3", "D2", "B1", "B2")),
        MarkedTest(f"{path}::test_module_mark_only", ("E3",)),
        MarkedTest(f"{path}::test_param_marks", ("E3", "C1", "D2")),
        MarkedTest(f"{path}::TestClass::test_inside", ("E3", "F1", "F2")),
        MarkedTest(f"{path}::TestClass::TestNested::test_deep", ("E3", "F1", "F2", "F3")),
        MarkedTest(f"{path}::TestInherited", ("E3", "Z9")),
    ]


def test_the_matrix_names_rules_without_tests_and_unknown_rules(tmp_path: Path) -> None:
    tests = _module(tmp_path, SAMPLE)
    matrix = rule_matrix(tests, ["A1", "D2", "D3"])
    assert matrix.tests["A1"] == ("tests/sub/test_sample.py::test_decorated",)
    assert len(matrix.tests["D2"]) == 2
    assert matrix.uncovered == ("D3",)
    assert set(matrix.unknown) == {"B1", "B2", "C1", "E3", "F1", "F2", "F3", "Z9"}
    assert not matrix.complete
    text = format_matrix(matrix)
    assert "A1 Approved shoe (1 test)\n    tests/sub/test_sample.py::test_decorated\n" in text
    assert "NO TEST: rule D3 has no test" in text
    assert "UNKNOWN RULE: Z9 named by tests/sub/test_sample.py::TestInherited" in text


def test_a_marker_that_cannot_be_read_is_a_problem_not_a_guess(tmp_path: Path) -> None:
    tests = _module(
        tmp_path,
        """
        import pytest
        RULE = "A1"

        @pytest.mark.rule(RULE)
        def test_computed():
            pass

        @pytest.mark.rule()
        def test_empty():
            pass
        """,
    )
    matrix = rule_matrix(tests, ["A1"])
    assert matrix.problems == (
        Problem("tests/sub/test_sample.py:5", "the rule id is not a string literal"),
        Problem("tests/sub/test_sample.py:9", "the rule marker names no rule"),
    )
    assert matrix.uncovered == ("A1",)
    assert "UNREADABLE MARKER: tests/sub/test_sample.py:5" in format_matrix(matrix)


def test_a_document_heading_is_a_rule() -> None:
    text = "# Title\n\n### A1 Approved shoe\ntext\n## B2 Optional additional wager  \n### x y\n"
    assert rules_in_document(text) == {"A1": "Approved shoe", "B2": "Optional additional wager"}
