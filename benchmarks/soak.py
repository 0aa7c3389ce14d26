"""Soak: thousands of rounds against the simulated shoe with every fault, and the
invariants that must hold whatever happens.

The run is cut into segments. Each segment starts a simulated shoe of its own (in this
process, ``sim://``) with a fault plan drawn from the seed: card faults of every kind
(misread, double, double_detected, jam, door, early_draw, disconnect, reboot, silent) at
random cards, sometimes a short, long or duplicate first deck, sometimes line faults at
modest rates (noise, drop, dup, split), events kept or lost across a reboot. The product's
own table controller (link driver, procedure, journal on a real file) deals the
segment's rounds, with a scripted croupier whose attendant clears every fault.

A fault that voids a round leaves the rest of the deck in the shoe, and the simulated
croupier only loads a deck into an empty shoe. So, as a croupier would, the harness takes
the deck out once the round is over: when the controller's phase is ``void_fault``,
``void_misdeal`` or ``deck_removed``, the shoe holds no event unacknowledged (so the
controller has seen everything the shoe said) and its gate is locked. The shoe then loads
the next deck by itself.

The shoe and the link run on one clock, ``SCALE`` times faster than real time, so that
retransmissions, jams, open doors, silences and heartbeats pass quickly in their true
proportions.

After each segment the journal is verified and compared with the shoe's ground truth:

- every event the shoe issued and saw acknowledged is journaled exactly once (none lost,
  none duplicated), and so is every card among them;
- every card identity in the journal is the one the shoe reported for that card;
- every round opened has exactly one outcome (``dealt``, ``void_misdeal``,
  ``void_deck_removed``, ``void_fault``), but the one that may still be open when the
  segment stops;
- the controller never failed and the run never stalled.

    python benchmarks/soak.py [--rounds N] [--seed S] [--quick]

prints one JSON line and exits 1 when an invariant failed (the line says which).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from firmware_protocol import CardDrawn, GateMode
from shoe_controller.cli.croupier import SCRIPT, Script, ScriptedCroupier
from shoe_controller.errors import ShoeControllerError
from shoe_controller.journal.verification import verify
from shoe_controller.link import events as link_events
from shoe_controller.link.driver import LinkDriver
from shoe_controller.link.sequence import ResumePoint
from shoe_controller.procedure.machine import Phase
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.service.controller import LinkLike, ResumeAt, TableController
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.runner import ShoeRunner
from shoe_controller.simulator.shoe import DrawKind, SimulatedShoe
from shoe_controller.simulator.transport import SimTransport, switch_off

#: The shoe's and the link's clock run this many times faster than real time.
SCALE = 5.0
#: Rounds dealt by one simulated shoe and one controller.
SEGMENT_ROUNDS = 20
#: Real seconds without any published event before a segment counts as stalled.
STALL_AFTER = 5.0
#: How often the harness looks at the table while nothing is published (real seconds).
LOOK_INTERVAL = 0.05
#: Phases in which a round is over and the rest of its deck must leave the shoe.
DECK_OUT_PHASES = frozenset({Phase.VOID_FAULT, Phase.VOID_MISDEAL, Phase.DECK_REMOVED})
#: Simulator options the soak always sets (scaled seconds): short jams and open doors.
BASE_OPTIONS = "pace=0&jam_for=0.5&door_for=0.5&retransmit=0.1&retransmit_max=0.5"
CARD_FAULTS = (
    "misread",
    "double",
    "double_detected",
    "jam",
    "door",
    "early_draw",
    "disconnect",
    "reboot",
    "silent",
)
DECK_VARIANTS = ("short", "long", "duplicate")
#: Upper bounds of the line fault rates: noise per byte, the others per frame.
LINE_FAULTS = {"noise": 0.001, "drop": 0.02, "dup": 0.02, "split": 0.05}
#: Silences shorter and longer than the host's silence limit (3.5 heartbeats).
SILENCES = (1.0, 5.0)
OUTCOMES = ("dealt", "not_played", "void_misdeal", "void_deck_removed", "void_fault")


# --- the plan ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentPlan:
    """One simulated shoe's options and the croupier's script for its rounds."""

    index: int
    rounds: int
    query: str
    wagers: tuple[int, ...]
    dice: tuple[int, int, int] | None
    #: The croupier's determination where the record cannot propose one (D2).
    on_review: str = "misdeal"

    @property
    def address(self) -> str:
        return f"sim://?{self.query}&serial=SOAK-{self.index:05d}"


def plan_segment(
    rng: random.Random, index: int, rounds: int, kinds: tuple[str, ...] = CARD_FAULTS
) -> SegmentPlan:
    """A seeded fault plan for one segment: one to three card faults of ``kinds`` at
    random cards, sometimes an odd first deck, sometimes line faults."""
    cards = rounds * 53
    faults = [
        f"{rng.choice(kinds)}@{rng.randint(1, max(1, cards * 3 // 4))}"
        for _ in range(rng.randint(1, 3))
    ]
    if rng.random() < 0.5:
        chosen = rng.sample(sorted(LINE_FAULTS), rng.randint(1, len(LINE_FAULTS)))
        faults += [f"{name}={rng.uniform(0, LINE_FAULTS[name]):.4f}" for name in chosen]
    query = [f"seed={rng.randrange(2**32)}", BASE_OPTIONS, f"faults={','.join(faults)}"]
    query.append(f"persist={rng.choice((0, 1))}")
    query.append(f"silent_for={rng.choice(SILENCES)}")
    if rng.random() < 0.2:
        query.append(f"deck={rng.choice(DECK_VARIANTS)}")
    wagers = tuple(sorted(rng.sample(range(2, 8), rng.randint(1, 6))))
    dice = (rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 6))
    dice_or_rng = dice if rng.random() < 0.5 else None
    review = rng.choice(("misdeal", "no-misdeal"))
    return SegmentPlan(index, rounds, "&".join(query), wagers, dice_or_rng, review)


# --- running a table -----------------------------------------------------------------------


def scaled_clock(factor: float) -> Callable[[], float]:
    origin = time.monotonic()
    return lambda: origin + (time.monotonic() - origin) * factor


class EventLog:
    """Every event the controller publishes, and a condition to wait on."""

    def __init__(self) -> None:
        self.events: list[ev.ServiceEvent] = []
        self.cond = threading.Condition()

    def __call__(self, event: ev.ServiceEvent) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def finished_rounds(self) -> int:
        with self.cond:
            return sum(
                1
                for e in self.events
                if isinstance(e, ev.RoundClosedEvent)
                or (isinstance(e, ev.RoundEndEvent) and e.outcome != "dealt")
            )

    def wait_for_more(self, seen: int, timeout: float) -> int:
        """Wait until more than ``seen`` events were published or ``timeout`` passed;
        returns how many there are."""
        with self.cond:
            self.cond.wait_for(lambda: len(self.events) > seen, timeout)
            return len(self.events)


class SimTable:
    """A table controller dealing against its own in-process simulated shoe.

    The shoe and the link share one clock (``scale`` times real time, or ``clock``). The
    harness holds the shoe's runner, so that it can read the ground truth and act as the
    croupier. Without a ``script`` nobody answers the controller's prompts: the caller
    plays the croupier. :meth:`new_controller` makes another controller on the same
    journal and shoe (a restart).
    """

    def __init__(
        self,
        address: str,
        journal: Path,
        script: Script | None,
        *,
        scale: float = SCALE,
        config: Config | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.address = address
        self.journal = journal
        self.config = config or Config()
        self.clock = clock if clock is not None else scaled_clock(scale)
        self.runner: ShoeRunner = self.switch_on(address)
        self.log = EventLog()
        self.refusals: list[ShoeControllerError] = []
        self.script = script
        self.decks_removed = 0
        self.controller = self.new_controller()

    def switch_on(self, address: str) -> ShoeRunner:
        """The runner of the simulated shoe at ``address``, switched on now on this table's
        clock. Opened once so that the shoe exists in the registry: every later open (the
        link driver's, after a disconnect too) reaches this same shoe."""
        first = SimTransport(SimOptions.from_address(address), address=address, clock=self.clock)
        first.open()
        runner = first.runner
        first.close()
        return runner

    def new_controller(self, **options: Any) -> TableController:
        """A controller on this table's journal and shoe, the event log (and the scripted
        croupier, if any) subscribed; ``options`` go to :class:`TableController`."""
        controller = TableController(
            self.config,
            journal_path=self.journal,
            device=self.address,
            link_factory=self._link,
            **options,
        )
        controller.subscribe(self.log)
        if self.script is not None:
            scripted = ScriptedCroupier(controller, self.script, self.refusals.append)
            controller.subscribe(lambda event: self._croupier(controller, scripted, event))
        return controller

    def _croupier(
        self, controller: TableController, scripted: ScriptedCroupier, event: ev.ServiceEvent
    ) -> None:
        """The script, but for the stub: asked for it (D2), the croupier counts by hand the
        cards that physically left the shoe for the stub of the deck in play."""
        if isinstance(event, ev.PromptEvent) and event.need == "stub_count":
            controller.stub_counted(self.stub_in_hand(), actor=SCRIPT)
        else:
            scripted(event)

    def stub_in_hand(self) -> int:
        """The stub cards of the round's deck (the next deck may already be in)."""
        with self.runner.locked() as shoe:
            decks = [draw.deck for draw in shoe.draws if draw.gate_mode is GateMode.DEAL]
            deck = decks[-1] if decks else shoe.deck_number
            return sum(
                1 for draw in shoe.draws if draw.deck == deck and draw.gate_mode is GateMode.STUB
            )

    def _link(
        self,
        address: str,
        config: Config,
        on_event: Callable[[link_events.LinkEvent], None],
        resume: Sequence[ResumeAt],
    ) -> LinkLike:
        options = SimOptions.from_address(address)
        return LinkDriver(
            address,
            config.approved,
            on_event,
            clock=self.clock,
            opener=lambda a: SimTransport(options, address=a, clock=self.clock),
            reconnect_delay=lambda attempt: min(0.01 * attempt, 0.1),
            resume=[ResumePoint(*point) for point in resume],
        )

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        try:
            self.controller.stop()
        finally:
            switch_off(self.address)

    @contextmanager
    def shoe(self) -> Iterator[SimulatedShoe]:
        with self.runner.locked() as shoe:
            yield shoe

    def take_out_spent_deck(self) -> bool:
        """The croupier takes out the deck of a round that is over (see the module's
        docstring for when); returns whether it did."""
        with self.runner.locked() as shoe:
            if not (
                shoe.deck_present
                and not shoe.unacked
                and shoe.gate is GateMode.LOCKED
                and not (shoe.jammed or shoe.door_open or shoe.stalled)
                and self.controller.phase in DECK_OUT_PHASES
            ):
                return False
            shoe.remove_deck()
        self.decks_removed += 1
        return True

    def deal(self, rounds: int, stall_after: float = STALL_AFTER) -> bool:
        """Let rounds go until ``rounds`` are finished; False when nothing was published
        for ``stall_after`` seconds before that, or the controller stopped."""
        seen = 0
        last_progress = time.monotonic()
        while self.log.finished_rounds() < rounds:
            if self.controller.wait(0):
                return False
            count = self.log.wait_for_more(seen, LOOK_INTERVAL)
            if count > seen:
                seen, last_progress = count, time.monotonic()
            elif self.take_out_spent_deck():
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > stall_after:
                return False
        return True


# --- checking a segment against the shoe's ground truth ------------------------------------


@dataclass
class Tally:
    """What the soak counted; ``problems`` holds one line per invariant broken."""

    segments: int = 0
    rounds: Counter[str] = field(default_factory=Counter)
    open_at_stop: int = 0
    cards_drawn: int = 0
    cards_reported: int = 0
    cards_unseen: int = 0
    cards_acknowledged: int = 0
    cards_journaled: int = 0
    cards_unacknowledged: int = 0
    events_issued: int = 0
    events_journaled: int = 0
    cards_lost_in_shoe: int = 0
    events_lost_in_shoe: int = 0
    duplicates: int = 0
    lost: int = 0
    identity_mismatches: int = 0
    crashes: int = 0
    stalls: int = 0
    decks_removed: int = 0
    faults_planned: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    def problem(self, segment: SegmentPlan, text: str) -> None:
        self.problems.append(f"segment {segment.index} ({segment.address}): {text}")


#: A journal record as the checks read it: (seq, kind, round id, payload).
Row = tuple[int, str, str | None, dict[str, Any]]


def _journal_rows(path: Path) -> list[Row]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT seq, kind, round_id, payload FROM records ORDER BY seq")
        return [(s, k, r, json.loads(p)) for s, k, r, p in rows]
    finally:
        conn.close()


_LOSS = re.compile(r"events (\d+)\.\.(\d+)")


def _reported_losses(rows: list[Row]) -> set[int]:
    """The event numbers the journal records as lost by the shoe."""
    lost: set[int] = set()
    for _, kind, _, p in rows:
        if kind == "link" and p.get("state") == "events_lost":
            for first, last in _LOSS.findall(str(p.get("detail", ""))):
                lost.update(range(int(first), int(last) + 1))
    return lost


def _card_rows(rows: list[Row]) -> list[Row]:
    """The records that hold a card's identity: the dealt cards and the stub's."""
    return [
        row
        for row in rows
        if row[1] in ("card", "stub_card") and "card" in row[3] and "index" in row[3]
    ]


@dataclass(frozen=True)
class EventsSeen:
    """The shoe's events as the journal holds them (by the shoe's own numbers)."""

    #: How many times each event was journaled.
    journaled: Counter[int]
    #: Acknowledged events a shoe restarted without its memory lost, as journaled (F2).
    lost_in_shoe: frozenset[int]


def check_journal_verifies(plan: SegmentPlan, journal: Path, tally: Tally) -> None:
    """The journal's chain verifies."""
    report = verify(journal)
    if not report.ok:
        tally.problem(plan, f"the journal does not verify: {report.summary()}")


def check_events_journaled_once(
    plan: SegmentPlan, rows: list[Row], shoe: SimulatedShoe, tally: Tally
) -> EventsSeen:
    """Every event the shoe issued and saw acknowledged is journaled exactly once, and
    nothing the shoe never issued is."""
    acked = shoe.acknowledged
    issued = dict(shoe.events)
    journaled = Counter(int(p["shoe_seq"]) for _, kind, _, p in rows if kind == "shoe_event")
    tally.events_issued += len(issued)
    tally.events_journaled += sum(journaled.values())
    duplicated = sorted(seq for seq, n in journaled.items() if n > 1)
    missing = [seq for seq in issued if seq <= acked and seq not in journaled]
    # A shoe that restarts without keeping its events (persist=0) loses those not yet
    # acknowledged; the controller must have journaled the loss (F2), and only such a
    # shoe may lose any.
    reported = _reported_losses(rows) if shoe.reboots and not shoe.options.persist else set()
    lost = sorted(seq for seq in missing if seq not in reported)
    lost_in_shoe = frozenset(seq for seq in missing if seq in reported)
    tally.events_lost_in_shoe += len(lost_in_shoe)
    unknown = sorted(seq for seq in journaled if seq not in issued)
    tally.duplicates += len(duplicated)
    tally.lost += len(lost)
    if duplicated:
        tally.problem(plan, f"events journaled twice: {duplicated[:10]}")
    if lost:
        tally.problem(plan, f"acknowledged events not journaled: {lost[:10]}")
    if unknown:
        tally.problem(plan, f"journaled events the shoe never issued: {unknown[:10]}")
    return EventsSeen(journaled, lost_in_shoe)


def count_cards(shoe: SimulatedShoe, seen: EventsSeen, tally: Tally) -> None:
    """What became of every card the shoe drew: reported or unseen, acknowledged or not,
    journaled or lost with a shoe's restart."""
    acked = shoe.acknowledged
    tally.cards_drawn += len(shoe.draws)
    for draw in shoe.draws:
        if draw.seq is None:
            tally.cards_unseen += draw.kind is DrawKind.UNSEEN
            continue
        tally.cards_reported += 1
        if draw.seq in seen.lost_in_shoe:
            tally.cards_lost_in_shoe += 1
        elif draw.seq <= acked:
            tally.cards_acknowledged += 1
        else:
            tally.cards_unacknowledged += 1
        tally.cards_journaled += draw.seq in seen.journaled


def _identities_said(rows: list[Row], shoe: SimulatedShoe) -> dict[tuple[str | None, int], str]:
    """{(round, draw index): identity} of every readable card the shoe reported and the
    journal placed in a round."""
    round_of_event = {int(p["shoe_seq"]): r for _, kind, r, p in rows if kind == "shoe_event"}
    said: dict[tuple[str | None, int], str] = {}
    for seq, message in dict(shoe.events).items():
        readable = isinstance(message, CardDrawn) and not message.card.is_unreadable
        if readable and seq in round_of_event:
            assert isinstance(message, CardDrawn)
            said[(round_of_event[seq], message.draw_index)] = message.card.text
    return said


def check_identities_as_reported(
    plan: SegmentPlan, rows: list[Row], shoe: SimulatedShoe, tally: Tally
) -> None:
    """Every identity the journal holds is journaled once, and is the one the shoe
    reported for that card."""
    cards = _card_rows(rows)
    identities = Counter((r, int(p["index"])) for _, _, r, p in cards)
    for (rid, index), count in identities.items():
        if count > 1:
            tally.identity_mismatches += 1
            tally.problem(plan, f"round {rid} card {index}: identity journaled {count} times")
    said = _identities_said(rows, shoe)
    for _, _, rid, p in cards:
        truth = said.get((rid, int(p["index"])))
        if truth is not None and p["card"] != truth:
            tally.identity_mismatches += 1
            tally.problem(
                plan, f"round {rid} card {p['index']}: journaled {p['card']}, shoe said {truth}"
            )


def check_one_outcome_per_round(plan: SegmentPlan, rows: list[Row], tally: Tally) -> None:
    """Each round opened has exactly one outcome, but one still open at the stop; no
    outcome is unknown or belongs to a round never opened."""
    opened = [r for _, kind, r, _ in rows if kind == "round_opened"]
    ended = Counter(r for _, kind, r, _ in rows if kind == "round_ended")
    outcomes = [str(p.get("outcome")) for _, kind, _, p in rows if kind == "round_ended"]
    for outcome in outcomes:
        if outcome not in OUTCOMES:
            tally.problem(plan, f"unknown outcome {outcome!r}")
    tally.rounds.update(outcomes)
    twice = sorted(str(r) for r, n in ended.items() if n > 1)
    if twice:
        tally.problem(plan, f"rounds with more than one outcome: {twice[:5]}")
    if len(opened) != len(set(opened)):
        tally.problem(plan, "a round was opened twice")
    never = [r for r in opened if r not in ended]
    if len(never) > 1 or (never and never[0] != opened[-1]):
        tally.problem(plan, f"rounds without an outcome: {never[:5]}")
    tally.open_at_stop += len(never) == 1
    strays = sorted(str(r) for r in ended if r not in set(opened))
    if strays:
        tally.problem(plan, f"outcomes of rounds never opened: {strays[:5]}")


def check_segment(plan: SegmentPlan, journal: Path, shoe: SimulatedShoe, tally: Tally) -> None:
    """Compare the journal with what the shoe did; add to ``tally``."""
    check_journal_verifies(plan, journal, tally)
    rows = _journal_rows(journal)
    seen = check_events_journaled_once(plan, rows, shoe, tally)
    count_cards(shoe, seen, tally)
    check_identities_as_reported(plan, rows, shoe, tally)
    check_one_outcome_per_round(plan, rows, tally)


# --- the soak ------------------------------------------------------------------------------


def run_segment(plan: SegmentPlan, workdir: Path, tally: Tally) -> None:
    journal = workdir / f"segment-{plan.index:05d}.sqlite3"
    script = Script(
        wagers=frozenset(plan.wagers),
        dice=plan.dice,
        on_review=plan.on_review,
        attendant="soak",
    )
    table = SimTable(plan.address, journal, script)
    options = SimOptions.from_address(plan.address)
    tally.faults_planned.update(str(f.kind) for f in options.faults.scheduled)
    tally.segments += 1
    stalled = False
    try:
        table.start()
        stalled = not table.deal(plan.rounds)
    finally:
        table.stop()
    failure = table.controller.failure
    if failure is not None:
        tally.crashes += 1
        tally.problem(plan, f"the controller failed: {failure}")
    elif stalled:
        tally.stalls += 1
        with table.shoe() as shoe:
            state = (
                f"phase {table.controller.phase}, shoe gate {shoe.gate.name}, "
                f"{shoe.cards_left} cards left, unacked {shoe.unacked[:5]}"
            )
        tally.problem(plan, f"stalled after {table.log.finished_rounds()} rounds: {state}")
    tally.decks_removed += table.decks_removed
    with table.shoe() as shoe:
        check_segment(plan, journal, shoe, tally)
    journal.unlink(missing_ok=True)
    for suffix in ("-wal", "-shm"):
        Path(f"{journal}{suffix}").unlink(missing_ok=True)


class _ErrorCounter(logging.Handler):
    """Counts what the product logs at ERROR or above: an exception caught in a thread."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


def soak(
    rounds: int,
    seed: int,
    segment_rounds: int = SEGMENT_ROUNDS,
    kinds: tuple[str, ...] = CARD_FAULTS,
    on_segment: Callable[[Tally], None] | None = None,
) -> tuple[Tally, dict[str, Any]]:
    """Run ``rounds`` rounds in segments; returns the tally and the report line."""
    rng = random.Random(seed)
    tally = Tally()
    errors = _ErrorCounter()
    product_log = logging.getLogger("shoe_controller")
    product_log.addHandler(errors)
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
            done = 0
            index = 0
            while done < rounds:
                size = min(segment_rounds, rounds - done)
                run_segment(plan_segment(rng, index, size, kinds), Path(tmp), tally)
                done += size
                index += 1
                if on_segment is not None:
                    on_segment(tally)
    finally:
        product_log.removeHandler(errors)
    elapsed = time.perf_counter() - started
    tally.crashes += len(errors.records)
    tally.problems += [f"logged error: {text}" for text in errors.records[:10]]
    line = report_line(tally, rounds, seed, elapsed)
    line["fault_kinds"] = list(kinds)
    return tally, line


def report_line(tally: Tally, rounds: int, seed: int, elapsed: float) -> dict[str, Any]:
    counted = sum(tally.rounds.values())
    invariants = {
        "no_card_lost": tally.lost == 0,
        "no_card_duplicated": tally.duplicates == 0 and tally.identity_mismatches == 0,
        "one_outcome_per_round": not any("outcome" in p for p in tally.problems),
        "no_crash": tally.crashes == 0,
        "no_stall": tally.stalls == 0,
        "journal_verifies": not any("does not verify" in p for p in tally.problems),
    }
    return {
        "name": "soak",
        "ok": not tally.problems,
        "invariants": invariants,
        "rounds_requested": rounds,
        "rounds_finished": counted,
        "rounds_by_outcome": {o: tally.rounds.get(o, 0) for o in OUTCOMES},
        "open_at_stop": tally.open_at_stop,
        "cards": {
            "drawn": tally.cards_drawn,
            "reported": tally.cards_reported,
            "unseen": tally.cards_unseen,
            "acknowledged": tally.cards_acknowledged,
            "journaled": tally.cards_journaled,
            "not_acknowledged": tally.cards_unacknowledged,
            "lost_in_shoe_restart": tally.cards_lost_in_shoe,
        },
        "events": {
            "issued": tally.events_issued,
            "journaled": tally.events_journaled,
            "lost_in_shoe_restart": tally.events_lost_in_shoe,
        },
        "duplicates": tally.duplicates,
        "lost": tally.lost,
        "identity_mismatches": tally.identity_mismatches,
        "crashes": tally.crashes,
        "stalls": tally.stalls,
        "decks_removed": tally.decks_removed,
        "segments": tally.segments,
        "faults_planned": dict(sorted(tally.faults_planned.items())),
        "problems": tally.problems[:20],
        "seed": seed,
        "elapsed_s": round(elapsed, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10_000, help="rounds to deal")
    parser.add_argument("--seed", type=int, default=20261129, help="seed of the fault plans")
    parser.add_argument("--quick", action="store_true", help="a short run (50 rounds)")
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        choices=CARD_FAULTS,
        help="leave this card fault out of the mix (repeatable)",
    )
    parser.add_argument("--progress", action="store_true", help="a line per segment on stderr")
    args = parser.parse_args(argv)
    rounds = 50 if args.quick else args.rounds
    if rounds < 1:
        parser.error("--rounds must be 1 or more")
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")

    def progress(tally: Tally) -> None:
        print(
            f"segment {tally.segments}: {sum(tally.rounds.values())} rounds, "
            f"{len(tally.problems)} problems",
            file=sys.stderr,
            flush=True,
        )

    kinds = tuple(k for k in CARD_FAULTS if k not in args.without)
    if not kinds:
        parser.error("--without leaves no card fault: keep at least one")
    _, line = soak(rounds, args.seed, kinds=kinds, on_segment=progress if args.progress else None)
    print(json.dumps(line))
    return 0 if line["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
