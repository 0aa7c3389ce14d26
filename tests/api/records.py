"""What the journal says people did: who gave each input, who signed in and out."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from shoe_controller.service import Actor


def _payloads(journal: Path, kind: str) -> list[dict[str, object]]:
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT payload FROM records WHERE kind = ? ORDER BY seq", (kind,)
        ).fetchall()
    finally:
        conn.close()
    return [json.loads(payload) for (payload,) in rows]


def inputs(journal: Path) -> list[tuple[str, Actor]]:
    """(input name, who gave it) of every accepted input, in order."""
    return [
        (str(p["name"]), Actor(str(p["by"]), str(p.get("role"))))
        for p in _payloads(journal, "input")
        if p.get("accepted")
    ]


def access(journal: Path) -> list[tuple[str, str, bool]]:
    """(action, user, accepted) of every sign-in, sign-out, lockout or refusal."""
    return [
        (str(p["action"]), str(p["user"]), bool(p["accepted"]))
        for p in _payloads(journal, "access")
    ]
