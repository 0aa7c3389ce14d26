"""The croupier at the terminal answers the prompt the terminal asked: when the table moves
on while the question is open, the answer is refused, said, and the table's new prompt is
asked; the supervisor who signed in for it stays signed in to give it again.
``shoe-controller run`` on a real pseudo-terminal: a jam the shoe clears while the terminal
asks for the clear."""

from __future__ import annotations

import json
import os
import select
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shoe_controller.api.roles import Role
from shoe_controller.api.users import UsersFile
from shoe_controller.service.controller import MOVED_ON
from tests.api.conftest import cheap_hasher
from tests.cli.conftest import ROOT, child_env

pytestmark = [pytest.mark.rule("F1"), pytest.mark.rule("E4")]

#: What the terminal asks, and what the croupier answers.
ANSWERS = {
    "Croupier, your user name: ": "dana",
    "dana, your PIN: ": "480913",
    "shuffled and cut? (y/n): ": "y",
    "for none): ": "2,4",
    "as it shows it): ": "",
    "Settle the dice wagers, then press Enter: ": "",
    "Supervisor, your user name: ": "sam",
    "sam, your PIN: ": "739164",
    "Press Enter to clear it: ": "",
    "Cards in the stub: ": "4",
    "then press Enter to close the round: ": "",
}
CLEAR = "Press Enter to clear it: "
#: What the narration says once the shoe no longer reports the jam.
SHOE_FREE = "an attendant may now clear the fault"


def _converse(process: subprocess.Popen[bytes], master: int) -> str:
    """Answer the run's questions until it ends; the first request to clear is answered
    only once the shoe has cleared the jam, so that the table has moved on from the prompt
    the question answers. Returns everything the terminal showed."""
    shown = ""
    answered = 0
    clears = 0
    deadline = time.monotonic() + 60
    while process.poll() is None:
        assert time.monotonic() < deadline, f"the run did not end; it showed:\n{shown[-2000:]}"
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 4096).decode("utf-8", "replace")
            except OSError:  # the child closed the terminal
                break
            shown += chunk
        pending = shown[answered:]
        asked = [(pending.find(q), q, a) for q, a in ANSWERS.items() if q in pending]
        if not asked:
            continue
        at, question, reply = min(asked)
        if question == CLEAR and clears == 0 and SHOE_FREE not in pending[at:]:
            continue  # the question stays open while the table moves on
        clears += question == CLEAR
        answered += at + len(question)
        os.write(master, (reply + "\n").encode())
    process.wait(timeout=10)
    return shown


def test_an_answer_to_a_prompt_the_table_left_is_refused_and_the_new_one_asked(
    tmp_path: Path,
) -> None:
    users = UsersFile(tmp_path / "users.json", cheap_hasher())
    users.add("dana", Role.DEALER, "480913")
    users.add("sam", Role.SUPERVISOR, "739164")
    journal = tmp_path / "journal.sqlite3"
    master, slave = os.openpty()
    try:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "shoe_controller", "run", "--bench",
                "--device", "sim://?pace=0&seed=12&faults=jam@10&jam_for=1",
                "--journal", str(journal), "--users", str(users.path),
                "--rounds", "1", "--color", "never",
            ],
            stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=child_env(),
            close_fds=True,
        )  # fmt: skip
        os.close(slave)
        shown = _converse(process, master)
    finally:
        os.close(master)
    assert process.returncode == 0, shown
    assert f"not accepted: {MOVED_ON}" in shown
    # The refusal is said once, and the clear asked again for the table's prompt.
    refused_at = shown.index(f"not accepted: {MOVED_ON}")
    assert shown.count(f"not accepted: {MOVED_ON}") == 1
    assert CLEAR in shown[refused_at:]
    # sam stays signed in for the retry, as at the console: one sign-in, two clears.
    assert "sam stays signed in as supervisor for 1 min to try again" in shown[refused_at:]
    assert shown.count("Supervisor, your user name: ") == 1
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT seq, kind, payload FROM records WHERE kind IN ('input', 'prompt') ORDER BY seq"
        ).fetchall()
        access = [
            json.loads(payload)
            for (payload,) in conn.execute(
                "SELECT payload FROM records WHERE kind = 'access' ORDER BY seq"
            )
        ]
    finally:
        conn.close()
    codes = {seq: json.loads(p).get("code") for seq, kind, p in rows if kind == "prompt"}
    clears = [json.loads(p) for _, kind, p in rows if kind == "input"]
    clears = [c for c in clears if c["name"] == "attendant_clear"]
    assert [(c["by"], c["accepted"], codes[c["prompt"]], c.get("refused")) for c in clears] == [
        ("sam", False, "attendant_clear_jam", MOVED_ON),
        ("sam", True, "attendant_clear_ready", None),
    ]
    assert [a["user"] for a in access if a["action"] == "sign_in"] == ["dana", "sam"]
