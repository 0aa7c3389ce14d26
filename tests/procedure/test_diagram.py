"""The diagram in docs/procedure.md is the one the machine draws."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shoe_controller.procedure import Phase, procedure_diagram
from shoe_controller.procedure.diagram import BEGIN, END, embed_diagram

DOC = Path(__file__).resolve().parents[2] / "docs" / "procedure.md"


def test_the_committed_diagram_matches_the_machine() -> None:
    text = DOC.read_text(encoding="utf-8")
    expected = embed_diagram(text, procedure_diagram())
    if text != expected and os.environ.get("SHOE_UPDATE_DIAGRAM") == "1":
        DOC.write_text(expected, encoding="utf-8")
        text = expected
    assert text == expected, (
        "docs/procedure.md does not show the machine's current diagram; rerun this test "
        "with SHOE_UPDATE_DIAGRAM=1 to rewrite it, and commit the result"
    )


def test_the_diagram_is_mermaid_and_shows_every_phase() -> None:
    diagram = procedure_diagram()
    assert diagram.splitlines()[:4] == ["---", "title: Dealing procedure", "---", "stateDiagram-v2"]
    for phase in Phase:
        assert f'state "{phase.value}" as {phase.value}' in diagram
    assert "[*] --> no_shoe" in diagram
    assert (
        "fault --> dealing: attendant_clear "
        "[clear_allowed_by_shoe & shoe_back_or_voiding & clear_target]"
    ) in diagram
    assert all(line == line.rstrip() for line in diagram.splitlines())


def test_embedding_needs_both_markers_in_order() -> None:
    with pytest.raises(ValueError, match="no"):
        embed_diagram("text", "d\n")
    with pytest.raises(ValueError, match="no"):
        embed_diagram(f"{END}\n{BEGIN}\n", "d\n")
    assert embed_diagram(f"a\n{BEGIN}\nold\n{END}\nb\n", "new\n") == (
        f"a\n{BEGIN}\n```mermaid\nnew\n```\n{END}\nb\n"
    )
