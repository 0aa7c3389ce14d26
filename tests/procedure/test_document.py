"""docs/procedure.md states each rule with the tests that enforce it: every module a rule
names under "Tests" holds tests marked with that rule."""

from __future__ import annotations

import re
from pathlib import Path

from shoe_controller.procedure import RULES
from shoe_controller.procedure.prompts import ANSWERS
from shoe_controller.traceability import rule_matrix

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "procedure.md").read_text(encoding="utf-8")


def _sections() -> dict[str, str]:
    parts = re.split(r"^### ([A-F][0-9]) .*$", DOC, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_rule_names_the_modules_of_its_tests() -> None:
    matrix = rule_matrix(REPO / "tests", base=REPO)
    sections = _sections()
    assert set(sections) == set(RULES)
    for rule, text in sections.items():
        match = re.search(r"^Tests: (.*?)(?:\n\n|\Z)", text, flags=re.M | re.S)
        assert match, f"{rule} names no tests"
        named = re.findall(r"`(tests/[\w/]+\.py)`", match.group(1))
        assert named, f"{rule} names no test module"
        marked = {test.split("::")[0] for test in matrix.tests[rule]}
        missing = [module for module in named if module not in marked]
        assert not missing, f"{rule}: no test marked {rule} in {missing}"


def test_every_rule_says_where_it_comes_from() -> None:
    for rule, text in _sections().items():
        first = text.strip().split("\n\n")[0]
        assert first.startswith(("Regulation", "Beyond the seed")), rule


def test_every_prompt_is_in_the_table_of_prompts() -> None:
    for need in ANSWERS:
        assert f"| `{need}` |" in DOC, need
