"""The docs' sessions are true: what they show is what the commands do."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from shoe_controller.errors import ExitCode
from tests.cli.conftest import ROOT, Run
from tests.journal.helpers import fill, open_journal

pytestmark = pytest.mark.usefixtures("hermetic")

DOCS = ROOT / "docs"


def _section(page: str, title: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_example_configuration_passes_its_own_check(run: Run) -> None:
    result = run("check", "--config", str(DOCS / "config.example.toml"), "--json")
    first = json.loads(result.out.splitlines()[0])
    assert (first["check"], first["ok"]) == ("configuration", True), first["detail"]


def test_the_bench_session_makes_its_directory_and_image_first(tmp_path: Path) -> None:
    bench = _section("technicians.md", "A bench session")
    commands = [line.strip()[2:] for line in bench.splitlines() if line.strip().startswith("$ ")]
    assert commands[0] == "mkdir -p /tmp/bench"
    writes_image = commands[1]
    assert writes_image.startswith("python3 -c ")
    # Run it, aimed at this test's directory: the image it writes has the listed digest.
    code = re.fullmatch(r"python3 -c '(.*)'", writes_image)
    assert code is not None
    subprocess.run([sys.executable, "-c", code[1].replace("/tmp/bench", str(tmp_path))], check=True)
    digest = re.search(r'firmware_digest = "([0-9a-f]{64})"', bench)
    assert digest is not None
    assert hashlib.sha256((tmp_path / "es-sim-1.0.0.bin").read_bytes()).hexdigest() == digest[1]
    uses = [i for i, command in enumerate(commands) if "/tmp/bench" in command]
    assert uses[0] == 0  # nothing uses the directory before it is made


def test_the_verify_output_in_journal_md_is_the_one_shown(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        fill(journal, 5)
    result = run("audit", "verify", "--journal", str(path))
    assert result.code == ExitCode.OK
    shown = _section("journal.md", "Verifying it")
    labels = [line.split("  ")[0] for line in result.out.splitlines()]
    documented = [
        line.strip().split("  ")[0]
        for line in shown.split("ends with what it found:", 1)[1]
        .split("\n\nor, ", 1)[0]
        .splitlines()
        if line.strip()
    ]
    assert documented == labels
    assert "journal verified: " not in shown.split("| Finding |")[0]
