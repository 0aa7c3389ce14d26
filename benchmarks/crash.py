"""Crash: the table controller killed with SIGKILL at random points, restarted, checked.

The simulated shoe runs in this process behind TCP on the loopback (it outlives every
controller, as a real shoe outlives the box's power cut, and remembers what it saw
acknowledged). The controller runs as the service does, ``shoe-controller run`` in a child
process with its journal on a real file, and is killed after a random number of its
published lines: anywhere in a round, also between a journal commit and the
acknowledgement it allows. Each trial starts a controller on the same journal, so that it
meets the round the previous one left open and the events it journaled but did not
acknowledge. Every other trial the croupier takes the voided round's deck out while the
controller is down, and every other trial another shoe (another serial number) is
switched on.

After every kill the trial checks (rules E3, F3):

- the journal verifies (hash chain, sequence);
- the round the previous kill left open was voided at start-up, before the controller
  heard from the shoe;
- every event the shoe saw acknowledged is journaled exactly once, and every card among
  them has its identity journaled exactly once;
- a controller started again on the journal (``run --rounds 1 --attendant``: the
  attendant clears the restart's fault, the croupier takes the deck out) deals a round to
  its end. The test suite checks this after the last kill only; the benchmark after every
  kill unless ``--no-deal-each``.

    python benchmarks/crash.py [--trials N] [--quick] [--seed S] [--no-deal-each]

prints one JSON line (trials, failures and what they were) and exits 1 on a failure.
"""

from __future__ import annotations

import argparse
import json
import random
import selectors
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from firmware_protocol import CardDrawn
from shoe_controller.journal.verification import verify
from shoe_controller.journal.writer import Journal
from shoe_controller.simulator import firmware
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.tcp_frontend import TcpFrontEnd

#: Longest wait for the controller's next line before killing it anyway: lines follow each
#: other within milliseconds, and a controller that waits for a person says nothing more.
LINE_TIMEOUT = 2.0
#: Longest wait for its first line: starting Python and opening the journal take longer
#: on a busy machine.
FIRST_LINE_TIMEOUT = 15.0
#: The kill comes after 1..MAX_LINES published lines (a round publishes about 130).
MAX_LINES = 160
#: Longest a restarted controller may take to deal its round: about 3 s on an idle machine.
DEAL_TIMEOUT = 60.0

Row = tuple[int, str, str | None, dict[str, Any]]
#: Records of what the link heard: a round left open is voided before any of them (F3).
HEARD_FROM_SHOE = frozenset({"shoe_connected", "shoe_event", "link"})


def write_config(path: Path) -> Path:
    """A configuration that approves the simulated shoe, as on a bench."""
    path.write_text(
        "[[approved_shoes]]\n"
        f'model = "{firmware.MODEL}"\n'
        f'firmware_version = "{firmware.FIRMWARE_VERSION}"\n'
        f'firmware_digest = "{firmware.DIGEST.hex()}"\n'
    )
    return path


def journal_rows(journal: Path, after: int = 0) -> list[Row]:
    if not journal.exists():
        return []
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT seq, kind, round_id, payload FROM records WHERE seq > ? ORDER BY seq",
            (after,),
        ).fetchall()
    finally:
        conn.close()
    return [(s, k, r, json.loads(p)) for s, k, r, p in rows]


def last_seq(journal: Path) -> int:
    rows = journal_rows(journal)
    return rows[-1][0] if rows else 0


def controller_command(address: str, config: Path, journal: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "shoe_controller",
        "run",
        # A simulated shoe answered by the bench's automatic croupier: a test bench.
        "--bench",
        "--json",
        "--device",
        address,
        "--config",
        str(config),
        "--journal",
        str(journal),
        "--wagers",
        "2,4",
        "--rng",
        "--attendant",
        "crash-test",
    ]


def run_and_kill(command: list[str], kill_after: int) -> int:
    """Start the controller, kill it with SIGKILL after ``kill_after`` lines (or once it
    falls silent); returns the lines it published."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert child.stdout is not None
    lines = 0
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(child.stdout, selectors.EVENT_READ)
            while lines < kill_after:
                wait = LINE_TIMEOUT if lines else FIRST_LINE_TIMEOUT
                if not sel.select(timeout=wait) or not child.stdout.readline():
                    break
                lines += 1
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    return lines


def check_journal_verifies(journal: Path) -> list[str]:
    """The journal's chain verifies."""
    report = verify(journal)
    return [] if report.ok else [f"the journal does not verify: {report.summary()}"]


def check_left_open_voided_first(new: list[Row], left_open: set[str]) -> list[str]:
    """The rounds the previous kill left open were voided (F3) at start-up, before the
    controller heard from a shoe."""
    problems: list[str] = []
    ended = {r for _, kind, r, p in new if kind == "round_ended" and p.get("rule") == "F3"}
    if not left_open <= ended:
        problems.append(f"rounds left open not voided at start-up: {sorted(left_open - ended)}")
    first_heard = next(
        (i for i, (_, kind, _, _) in enumerate(new) if kind in HEARD_FROM_SHOE), len(new)
    )
    voids = {r for _, kind, r, _ in new[:first_heard] if kind == "round_ended"}
    if not left_open <= voids:
        problems.append("a round left open was voided after the shoe was heard, not first")
    return problems


def check_events_journaled_once(
    on_shoe: list[Row], acked: int, issued: list[tuple[int, object]]
) -> list[str]:
    """Every event this shoe saw acknowledged is journaled exactly once (by the shoe's own
    numbers: the link numbers afresh across shoes; the shoe does not)."""
    problems: list[str] = []
    journaled = [int(p["shoe_seq"]) for _, kind, _, p in on_shoe if kind == "shoe_event"]
    if len(journaled) != len(set(journaled)):
        twice = sorted({s for s in journaled if journaled.count(s) > 1})
        problems.append(f"events journaled twice: {twice[:10]}")
    missing = [seq for seq, _ in issued if seq <= acked and seq not in journaled]
    if missing:
        problems.append(f"acknowledged events not journaled: {missing[:10]}")
    return problems


def check_cards_journaled_once(
    on_shoe: list[Row], acked: int, issued: list[tuple[int, object]]
) -> tuple[list[str], int]:
    """Every card among the acknowledged events has its identity journaled exactly once;
    also returns how many cards were checked."""
    problems: list[str] = []
    drawn_at = {
        int(p["shoe_seq"]): (r, p["message"]["draw_index"])
        for _, kind, r, p in on_shoe
        if kind == "shoe_event" and p["message"]["type"] == "CardDrawn"
    }
    identities = [(r, p["index"]) for _, kind, r, p in on_shoe if "index" in p and "card" in p]
    acked_cards = [seq for seq, m in issued if seq <= acked and isinstance(m, CardDrawn)]
    for seq in acked_cards:
        count = identities.count(drawn_at[seq]) if seq in drawn_at else 0
        if count != 1:
            where = drawn_at.get(seq)
            problems.append(f"card of event {seq} {where}: identity journaled {count} times")
    return problems, len(acked_cards)


def check_trial(
    journal: Path,
    *,
    before: int,
    shoe_base: int,
    left_open: set[str],
    acked: int,
    issued: list[tuple[int, object]],
) -> tuple[list[str], int]:
    """What is wrong after one kill (empty: nothing), and the acknowledged cards checked."""
    problems = check_journal_verifies(journal)
    problems += check_left_open_voided_first(journal_rows(journal, before), left_open)
    on_shoe = journal_rows(journal, shoe_base)
    problems += check_events_journaled_once(on_shoe, acked, issued)
    card_problems, cards = check_cards_journaled_once(on_shoe, acked, issued)
    return problems + card_problems, cards


@dataclass
class CrashReport:
    trials: int = 0
    failures: list[str] = field(default_factory=list)
    cards_checked: int = 0
    lines_before_kill: list[int] = field(default_factory=list)
    rounds_voided_at_restart: int = 0
    #: After the last kill, a controller on the same journal dealt a whole round (F3: no
    #: state is a dead end).
    dealt_after: bool = False
    #: Kills after which a restarted controller dealt a round (``deal_each``).
    dealt_each: int = 0
    #: Why a restarted controller did not deal, kill by kill (``deal_each``).
    not_dealt: list[str] = field(default_factory=list)

    def line(self, seed: int, elapsed: float) -> dict[str, Any]:
        kills = sorted(self.lines_before_kill)
        return {
            "name": "crash",
            "ok": not self.failures and self.dealt_after,
            "trials": self.trials,
            "failed_trials": len({f.split(":")[0] for f in self.failures}),
            "failures": self.failures[:20],
            "cards_checked": self.cards_checked,
            "rounds_voided_at_restart": self.rounds_voided_at_restart,
            "dealt_after_last_kill": self.dealt_after,
            "dealt_after_each_kill": self.dealt_each,
            "lines_before_kill_median": kills[len(kills) // 2] if kills else 0,
            "seed": seed,
            "elapsed_s": round(elapsed, 1),
        }


def deals_a_round(front: TcpFrontEnd | None, config: Path, journal: Path) -> str | None:
    """Whether a controller started on ``journal`` after the kills deals a round to its
    end, once the croupier has taken out whatever deck the last kill left in the shoe:
    None when it did, otherwise what happened instead."""
    if front is None:
        front = TcpFrontEnd(SimOptions(seed=1))
        front.start()
        try:
            return deals_a_round(front, config, journal)
        finally:
            front.stop()
    take_out_the_deck(front)
    before = last_seq(journal)
    command = [*controller_command(front.address, config, journal), "--rounds", "1"]
    started = time.monotonic()
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=DEAL_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        return f"no round within {DEAL_TIMEOUT:.0f} s; {_story(journal, before, exc.stderr)}"
    outcomes = [
        p["outcome"] for _, kind, _, p in journal_rows(journal, before) if kind == "round_ended"
    ]
    if completed.returncode == 0 and outcomes.count("dealt") == 1:
        return None
    elapsed = time.monotonic() - started
    return (
        f"exit {completed.returncode} after {elapsed:.1f} s, rounds {outcomes}; "
        f"{_story(journal, before, completed.stderr)}"
    )


def _story(journal: Path, before: int, stderr: str | bytes | None) -> str:
    """The last records a restarted controller journaled and its last error line: what a
    failed restart did instead of dealing."""
    rows = journal_rows(journal, before)
    kinds = [kind for _, kind, _, _ in rows]
    faults = [
        f"{kind} {p.get('code')}: {p.get('message') or p.get('reason') or p.get('detail')}"
        for _, kind, _, p in rows
        if "code" in p or p.get("state") == "approval"
    ]
    if isinstance(stderr, bytes):
        stderr = stderr.decode(errors="replace")
    lines = (stderr or "").strip().splitlines()
    return (
        f"{len(kinds)} records, last {kinds[-6:]}, codes {faults}; "
        f"stderr: {lines[-1] if lines else '-'}"
    )


def another_shoe(trial: int, rng: random.Random) -> TcpFrontEnd:
    """A shoe switched on for ``trial``: its own serial number, its own numbering from 1."""
    options = SimOptions(seed=rng.randrange(2**32), serial_number=f"CRASH-{trial:05d}")
    front = TcpFrontEnd(options)
    front.start()
    return front


def take_out_the_deck(front: TcpFrontEnd) -> None:
    """The croupier takes out whatever deck is in the shoe (a voided round's); the shoe
    then loads the next one."""
    with front.runner.locked() as shoe:
        if shoe.deck_present:
            shoe.remove_deck()


def open_rounds(journal: Path) -> set[str]:
    """The rounds the journal holds open: a restarted controller must void them first."""
    if not journal.exists():
        return set()
    with Journal.open(journal) as j:
        return {r.round_id for r in j.open_rounds()}


def kill_and_check(
    front: TcpFrontEnd,
    config: Path,
    journal: Path,
    *,
    kill_after: int,
    shoe_base: int,
    left_open: set[str],
    report: CrashReport,
) -> list[str]:
    """One trial: a controller on ``journal`` killed after ``kill_after`` lines, then the
    journal checked against what the shoe saw. Returns what is wrong."""
    before = last_seq(journal)
    command = controller_command(front.address, config, journal)
    report.lines_before_kill.append(run_and_kill(command, kill_after))
    with front.runner.locked() as shoe:
        acked = shoe.acknowledged
        issued: list[tuple[int, object]] = list(shoe.events)
    problems, cards = check_trial(
        journal,
        before=before,
        shoe_base=shoe_base,
        left_open=left_open,
        acked=acked,
        issued=issued,
    )
    report.trials += 1
    report.cards_checked += cards
    report.rounds_voided_at_restart += len(left_open)
    return problems


def crash_trials(
    trials: int,
    seed: int,
    workdir: Path,
    on_trial: Callable[[CrashReport], None] | None = None,
    *,
    deal_each: bool = False,
) -> CrashReport:
    """Run ``trials`` kill-restart-check trials on one journal in ``workdir``; with
    ``deal_each``, after every kill a controller restarted on the journal must deal a
    round to its end (not only after the last one)."""
    journal = workdir / "journal.sqlite3"
    config = write_config(workdir / "bench.toml")
    rng = random.Random(seed)
    report = CrashReport()
    left_open: set[str] = set()
    front: TcpFrontEnd | None = None
    shoe_base = 0
    try:
        for trial in range(trials):
            # Two controllers in turn on one shoe: the second meets the events the first
            # had journaled but not acknowledged, sent again, and must not journal them
            # twice. While the controller is down the croupier takes the voided round's
            # deck out, and the new controller meets both.
            if front is None:
                front = another_shoe(trial, rng)
                shoe_base = last_seq(journal)
            else:
                take_out_the_deck(front)
            problems = kill_and_check(
                front,
                config,
                journal,
                kill_after=rng.randint(1, MAX_LINES),
                shoe_base=shoe_base,
                left_open=left_open,
                report=report,
            )
            report.failures += [f"trial {trial}: {p}" for p in problems]
            if deal_each:
                why = deals_a_round(front, config, journal)
                if why is None:
                    report.dealt_each += 1
                else:
                    report.not_dealt.append(f"trial {trial}: {why}")
            if trial % 2 == 1:
                front.stop()
                front = None
            left_open = open_rounds(journal)
            if on_trial is not None:
                on_trial(report)
        why = deals_a_round(front, config, journal)
        report.dealt_after = why is None
        if why is not None:
            report.failures.append(f"after the last kill: the table did not deal a round: {why}")
    finally:
        if front is not None:
            front.stop()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200, help="kills (default 200)")
    parser.add_argument("--seed", type=int, default=20261129, help="seed of the kill points")
    parser.add_argument("--quick", action="store_true", help="a short run (10 trials)")
    parser.add_argument(
        "--no-deal-each",
        action="store_true",
        help="deal a round only after the last kill, not after every one",
    )
    args = parser.parse_args(argv)
    trials = 10 if args.quick else args.trials
    if trials < 1:
        parser.error("--trials must be 1 or more")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="crash-") as tmp:
        report = crash_trials(trials, args.seed, Path(tmp), deal_each=not args.no_deal_each)
    line = report.line(args.seed, time.perf_counter() - started)
    if not args.no_deal_each and report.dealt_each != report.trials:
        line["ok"] = False
        line["failures"].append(
            f"a round was dealt after {report.dealt_each} of {report.trials} kills"
        )
        line["failures"] += report.not_dealt[:20]
    if report.trials > 1 and report.cards_checked == 0:
        line["ok"] = False
        line["failures"].append("the kills came too early to check any card")
    print(json.dumps(line))
    return 0 if line["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
