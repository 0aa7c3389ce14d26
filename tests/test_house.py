"""Rules of the house that no linter checks: one name for a module's logger."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("firmware_protocol", "floor_protocol", "shoe_controller", "shoe_floor")
LOGGER = re.compile(r"^(\w+) = logging\.getLogger\(", re.M)


def test_every_modules_logger_is_called_log() -> None:
    """A maintainer finds a module's logger under one name: ``log``."""
    named: dict[str, str] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name in LOGGER.findall(path.read_text(encoding="utf-8")):
                named[str(path.relative_to(ROOT))] = name
    assert len(named) > 20, "the search found too few loggers to say anything"
    assert {path: name for path, name in named.items() if name != "log"} == {}
