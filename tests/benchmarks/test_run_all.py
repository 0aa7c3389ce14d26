"""``python -m benchmarks``: the results table and its place in docs/performance.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import run_all

ROOT = Path(__file__).resolve().parents[2]

LINES = {
    "startup": {
        "name": "startup",
        "value": 50.0,
        "unit": "ms",
        "baseline": "python -c pass",
        "baseline_value": 20.0,
        "ratio": 2.5,
        "runs": 5,
        "command": "shoe-diag --help",
    },
    "verify": {
        "name": "verify",
        "value": 150_000.0,
        "unit": "records/s",
        "baseline": "sqlite3 read, no MAC",
        "baseline_value": 600_000.0,
        "ratio": 0.25,
        "records": 20_000,
    },
}


def results() -> list[tuple[run_all.Benchmark, run_all.Line]]:
    return [(b, LINES[b.name]) for b in run_all.BENCHMARKS if b.name in LINES]


def test_table_says_which_aims_are_met() -> None:
    text = run_all.table(results(), quick=True)
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if "|" in line}
    assert rows["startup"].rstrip().endswith("| yes |")
    assert rows["verify"].rstrip().endswith("| **no** |")
    assert "150,000 records/s" in rows["verify"]
    assert "quick (smoke) run" in text


def test_write_doc_replaces_only_the_marked_table(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text(
        f"# Title\n\nbefore\n{run_all.START_MARK}\nold table\n{run_all.END_MARK}\nafter\n"
    )
    run_all.write_doc("new table", doc)
    assert doc.read_text() == (
        f"# Title\n\nbefore\n{run_all.START_MARK}\nnew table\n{run_all.END_MARK}\nafter\n"
    )


def test_write_doc_refuses_a_page_without_markers(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text("# Title\n")
    with pytest.raises(RuntimeError, match="lacks the markers"):
        run_all.write_doc("new table", doc)
    assert doc.read_text() == "# Title\n"


def test_the_published_page_has_the_markers() -> None:
    page = (ROOT / "docs" / "performance.md").read_text()
    assert page.index(run_all.START_MARK) < page.index(run_all.END_MARK)


def test_module_entry_point_runs_a_chosen_benchmark() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", "startup"],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    [line] = completed.stdout.splitlines()
    assert '"name": "startup"' in line
