"""The software digest's documented recipe (docs/journal.md), written out independently of
the code under test: the tests hold the service's digests against it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import firmware_protocol
import floor_protocol
import shoe_controller
import shoe_floor

#: Our import packages' installed directories, found by the packages themselves.
PACKAGES = {
    package.__name__: Path(package.__file__).resolve().parent
    for package in (firmware_protocol, floor_protocol, shoe_controller, shoe_floor)
}


def by_the_recipe(roots: list[Path]) -> str:
    """SHA-256 of the lines ``name NUL sha256-hex LF``, one per file under ``roots`` but
    caches, named from the directory holding the packages, sorted."""
    lines = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                name = path.relative_to(root.parent).as_posix()
                lines.append(f"{name}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n")
    return hashlib.sha256("".join(sorted(lines)).encode()).hexdigest()
