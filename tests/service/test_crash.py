"""Crash safety of the whole service: the controller runs rounds against a simulated shoe in
another process and is killed with SIGKILL at random points. The shoe outlives it, so it
knows what it saw acknowledged; the journal must hold every one of those events exactly
once, verify, and void at the next start the round that was open (E3, F3).

The long version (SHOE_SLOW=1) runs more trials.
"""

from __future__ import annotations

import json
import os
import random
import selectors
import subprocess
import sys
from pathlib import Path

import pytest

from firmware_protocol import CardDrawn
from shoe_controller.journal.verification import verify
from shoe_controller.journal.writer import Journal
from shoe_controller.simulator import firmware
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.tcp_frontend import TcpFrontEnd

TRIALS = int(os.environ.get("SHOE_CRASH_TRIALS", "0")) or (
    200 if os.environ.get("SHOE_SLOW") == "1" else 50
)
#: Longest wait for the controller's next line before killing it anyway: lines follow each
#: other within milliseconds, and a controller that waits for a person (a fault after
#: its restart, a deck it did not see loaded) says nothing more.
LINE_TIMEOUT = 2.0


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "bench.toml"
    config.write_text(
        "[[approved_shoes]]\n"
        'model = "ES-SIM"\n'
        'firmware_version = "1.0.0"\n'
        f'firmware_digest = "{firmware.DIGEST.hex()}"\n'
    )
    return config


def _records(journal: Path, after: int) -> list[tuple[int, str, str | None, dict[str, object]]]:
    import sqlite3

    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT seq, kind, round_id, payload FROM records WHERE seq > ? ORDER BY seq",
            (after,),
        ).fetchall()
    finally:
        conn.close()
    return [(s, k, r, json.loads(p)) for s, k, r, p in rows]


def _last_seq(journal: Path) -> int:
    if not journal.exists():
        return 0
    rows = _records(journal, 0)
    return rows[-1][0] if rows else 0


@pytest.mark.rule("E3")
@pytest.mark.rule("F3")
def test_sigkill_at_random_points_loses_nothing_acknowledged(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    config = _config(tmp_path)
    rng = random.Random(20261129)
    left_open: set[str] = set()
    cards_checked = 0
    for trial in range(TRIALS):
        # Two controllers in turn on one shoe: the second meets the events the first had
        # journaled but not acknowledged, sent again, and must not journal them twice.
        if trial % 2 == 0:
            front = TcpFrontEnd(SimOptions(seed=1000 + trial))
            front.start()
            shoe_base = _last_seq(journal)
        else:
            # While the controller is down the croupier takes the voided round's deck out;
            # the shoe then loads the next one, and the new controller meets both events.
            with front.runner.locked() as shoe:
                if shoe.deck_present:
                    shoe.remove_deck()
        before = _last_seq(journal)
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "shoe_controller",
                "run",
                "--json",
                "--device",
                front.address,
                "--config",
                str(config),
                "--journal",
                str(journal),
                "--wagers",
                "2,4",
                "--rng",
                "--attendant",
                "crash-test",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert child.stdout is not None
        # Kill after a random number of published events: anywhere in a round, including
        # between a journal commit and the acknowledgement it allows.
        kill_after = rng.randint(1, 160)
        with selectors.DefaultSelector() as sel:
            sel.register(child.stdout, selectors.EVENT_READ)
            for _ in range(kill_after):
                if not sel.select(timeout=LINE_TIMEOUT) or not child.stdout.readline():
                    break
        child.kill()
        child.wait()
        child.stdout.close()
        with front.runner.locked() as shoe:
            acked = shoe.acknowledged
            issued = list(shoe.events)
        if trial % 2 == 1:
            front.stop()
        report = verify(journal)
        assert report.ok, f"trial {trial}: {report.summary()}"
        new = _records(journal, before)
        # Rounds left open by the previous kill were voided before anything else (F3).
        ended = {r for _, kind, r, p in new if kind == "round_ended" and p.get("rule") == "F3"}
        assert left_open <= ended, f"trial {trial}: {left_open - ended} not voided"
        first_other = next(
            (i for i, (_, kind, _, _) in enumerate(new) if kind not in ("round_ended", "recovery")),
            len(new),
        )
        assert all(k in ("round_ended", "recovery") for _, k, _, _ in new[:first_other])
        # Every event this shoe saw acknowledged is journaled exactly once.
        on_shoe = _records(journal, shoe_base)
        journaled = [int(str(p["seq"])) for _, kind, _, p in on_shoe if kind == "shoe_event"]
        assert len(journaled) == len(set(journaled)), f"trial {trial}: duplicates"
        missing = [seq for seq, _ in issued if seq <= acked and seq not in journaled]
        assert missing == [], f"trial {trial}: acknowledged events {missing} not journaled"
        # ... and so is every card among them, once, with its identity (restricted).
        drawn_at = {
            int(str(p["seq"])): (r, p["message"]["draw_index"])  # type: ignore[index]
            for _, kind, r, p in on_shoe
            if kind == "shoe_event" and p["message"]["type"] == "CardDrawn"  # type: ignore[index]
        }
        identities = [(r, p["index"]) for _, kind, r, p in on_shoe if "index" in p and "card" in p]
        acked_cards = [seq for seq, m in issued if seq <= acked and isinstance(m, CardDrawn)]
        for seq in acked_cards:
            assert identities.count(drawn_at[seq]) == 1, f"trial {trial}: event {seq}"
        cards_checked += len(acked_cards)
        with Journal.open(journal) as j:
            left_open = {r.round_id for r in j.open_rounds()}
    assert cards_checked > TRIALS, "the kills came too early to test anything"
