"""The picture of the layers in docs/architecture.md is drawn from the import-linter
contracts (tools/layers.py), and every module of the controller has its place in them."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import shoe_controller
from tools import layers

ROOT = Path(__file__).resolve().parents[1]

CONTRACTS = """\
[tool.importlinter]
root_packages = ["top"]

[[tool.importlinter.contracts]]
name = "layers"
type = "layers"
layers = ["top.cli", "top.a | top.b", "top.low : top.sim", "ground"]

[[tool.importlinter.contracts]]
name = "apart"
type = "forbidden"
source_modules = ["other"]
forbidden_modules = ["top.a", "top.b"]

[[tool.importlinter.contracts]]
name = "strangers"
type = "independence"
modules = ["top.a", "top.b"]
"""

PICTURE = """\
flowchart TB
  subgraph layer1[" "]
    direction LR
    top_cli["top.cli"]
  end
  subgraph layer2[" "]
    direction LR
    top_a["top.a"]
    top_b["top.b"]
  end
  subgraph layer3[" "]
    direction LR
    top_low["top.low"]
    top_sim["top.sim"]
    top_low <--> top_sim
  end
  subgraph layer4[" "]
    direction LR
    ground["ground"]
  end
  layer1 --> layer2
  layer2 --> layer3
  layer3 --> layer4
  other["other"]
  other --x top_a
  other --x top_b
  top_a x--x top_b
"""


@pytest.fixture
def pyproject(tmp_path: Path) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(CONTRACTS, encoding="utf-8")
    return path


def test_the_contracts_drawn(pyproject: Path) -> None:
    assert layers.mermaid(layers.read_house(pyproject)) == PICTURE


def test_the_page_shows_the_picture_of_the_contracts() -> None:
    text = layers.DOC.read_text(encoding="utf-8")
    assert layers.embed(text, layers.read_house()) == text, (
        "docs/architecture.md shows an old picture of the layers: run python "
        "tools/layers.py --write and commit the result"
    )


def test_every_module_of_the_controller_is_in_a_layer() -> None:
    placed = layers.read_house().modules()
    ours = [f"shoe_controller.{m.name}" for m in pkgutil.iter_modules(shoe_controller.__path__)]
    assert len(ours) > 10
    assert [m for m in ours if m not in placed] == []
    assert len(placed) == len(set(placed))  # each in one layer only


def test_the_command_writes_then_checks_a_page(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# Title\n\n{layers.BEGIN}\nold\n{layers.END}\nafter\n", encoding="utf-8")

    def command(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "tools/layers.py", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    stale = command("--check", str(page))
    assert stale.returncode == 1
    assert "shows an old picture of the layers: run python tools/layers.py --write" in stale.stderr
    assert command("--write", str(page)).returncode == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# Title\n\n{layers.BEGIN}\n```mermaid\nflowchart TB\n")
    assert text.endswith(f"```\n{layers.END}\nafter\n")
    assert command("--check", str(page)).returncode == 0
    # Printed alone: the picture the committed page shows (the test above keeps it current).
    committed = layers.DOC.read_text(encoding="utf-8").split(f"{layers.BEGIN}\n", 1)[1]
    assert command().stdout == committed.split(layers.END, 1)[0]


def test_a_page_without_the_markers_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n", encoding="utf-8")
    with pytest.raises(layers.ContractError, match="lacks the markers"):
        layers.embed(page.read_text(encoding="utf-8"), layers.read_house())


@pytest.mark.parametrize(
    ("row", "problem"),
    [("a | b : c", "mixes"), ("a |  | b", "empty module")],
)
def test_a_row_the_linter_would_not_read_is_refused(row: str, problem: str) -> None:
    with pytest.raises(layers.ContractError, match=problem):
        layers.parse_layer(row)


def test_a_contract_it_cannot_draw_is_said(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(
        CONTRACTS
        + textwrap.dedent(
            """
            [[tool.importlinter.contracts]]
            name = "odd"
            type = "acyclic_siblings"
            """
        ),
        encoding="utf-8",
    )
    with pytest.raises(layers.ContractError, match="'odd': no drawing for 'acyclic_siblings'"):
        layers.read_house(path)
