"""Rule B1 from the command line: ``shoe-controller run`` on a real pseudo-terminal, the
croupier answering at the terminal with the external generator's signed value as it shows
it (``NUMBER:COUNTER:SIGNATURE``); a forged one is refused and the question asked again."""

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
from tests.api.conftest import cheap_hasher
from tests.cli.conftest import ROOT, child_env
from tests.service.rng_device import Device

pytestmark = pytest.mark.rule("B1")

#: What the terminal asks, and what the croupier answers.
ANSWERS = (
    ("Croupier, your user name: ", "dana"),
    ("dana, your PIN: ", "480913"),
    ("shuffled and cut? (y/n): ", "y"),
    ("for none): ", "2,4"),
    ("Cards in the stub: ", "4"),
    ("Settle the dice wagers, then press Enter: ", ""),
    ("Misdealt? (y/n)", "n"),
    ("then press Enter to close the round: ", ""),
)
START = "as it shows it): "


def _converse(process: subprocess.Popen[bytes], master: int, starts: list[str]) -> str:
    """Answer the questions the run asks on the terminal until it ends; the start position
    is answered with ``starts`` in turn. Returns everything the terminal showed."""
    shown = ""
    answered = 0
    deadline = time.monotonic() + 60
    while process.poll() is None:
        assert time.monotonic() < deadline, f"the run did not end; it showed:\n{shown[-2000:]}"
        ready, _, _ = select.select([master], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(master, 4096).decode("utf-8", "replace")
        except OSError:  # the child closed the terminal
            break
        shown += chunk
        # The narration may print after a question (the round's line after "close the
        # round"): a question is answered wherever it shows in what is not yet answered.
        pending = shown[answered:]
        asked = [(pending.find(q), q, a) for q, a in ((START, None), *ANSWERS) if q in pending]
        if asked:
            at, question, reply = min(asked)
            answered += at + len(question)
            if reply is None:
                reply = starts.pop(0)
            os.write(master, (reply + "\n").encode())
    process.wait(timeout=10)
    return shown


def test_a_signed_value_typed_at_the_terminal(tmp_path: Path) -> None:
    device = Device()
    config = tmp_path / "config.toml"
    config.write_text(device.config(tmp_path))
    users = UsersFile(tmp_path / "users.json", cheap_hasher())
    users.add("dana", Role.DEALER, "480913")
    journal = tmp_path / "journal.sqlite3"
    value = device.draw(3)
    forged = f"3:{value.counter}:{'ab' * 64}"
    master, slave = os.openpty()
    try:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "shoe_controller", "run", "--bench",
                "--device", "sim://?pace=0&seed=12", "--config", str(config),
                "--journal", str(journal), "--users", str(users.path),
                "--rounds", "1", "--color", "never",
            ],
            stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=child_env(),
            close_fds=True,
        )  # fmt: skip
        os.close(slave)
        shown = _converse(process, master, [forged, device.token(value)])
    finally:
        os.close(master)
    assert process.returncode == 0, shown
    assert "not accepted: the signature is not RNG-0042's over number 3" in shown
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        (payload,) = conn.execute(
            "SELECT payload FROM records WHERE kind = 'external_rng'"
        ).fetchone()
        (start,) = conn.execute(
            "SELECT payload FROM records WHERE kind = 'start_position'"
        ).fetchone()
    finally:
        conn.close()
    record = json.loads(payload)
    assert (record["signed"], record["device"], record["counter"]) == (True, "RNG-0042", 1)
    assert json.loads(start)["position"] == 3
