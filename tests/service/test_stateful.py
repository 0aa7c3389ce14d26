"""One stateful test of the whole table service.

A hypothesis state machine over the real :class:`TableController` (its link driver, its
procedure, its journal on a SQLite file), with in-process simulated shoes as ground truth
(:mod:`tests.service.stateful_table`). Every person at the table is a rule, and each rule may
come at any time, right or wrong for the phase:

- the croupier's inputs, with valid and invalid values, and the attendant's clear;
- the croupier's hands at the shoe: cards pulled through the gate or forced past it,
  every card fault of the simulator at the next card, a jam, the door, the button, the
  gate's motor busy, a deck taken out or loaded (standard, short, long, duplicate);
- the link: the cable out and back, the shoe dropping its link, the shoe restarting with
  or without its events, another shoe at the table and the first one back (the table's
  own shoe may also send on a line with every line fault of the simulator);
- the service: stopped by the operator, or the process dying (its state dropped, the
  journal opened again by a new controller);
- time passing, and a number of regular steps (what a well-run table does next).

After every step, once the table is still (:meth:`TableStateMachine.problems`; each problem
names the rule it breaks):

- E3: every event a shoe issued and saw acknowledged is journaled, none twice, and every
  card among them with the identity the shoe reported, once;
- E1, E2: no published event carries a card identity but the record of a closed, dealt
  round, which holds the banker's and the wagered hands as journaled and no stub card;
  the shoe's display never shows a card;
- F2: what a shoe lost in a restart that kept nothing, unjournaled, is journaled as lost
  once the shoe has said so to the link (a Hello or Heartbeat naming the oldest event it
  holds, which the line may lose), and nothing more is;
- Outcomes: every round has at most one; the journal verifies;
- F5: the shoe's gate never lets out more than the window; F1: it is locked outside the
  deal whenever the shoe hears the controller;
- nothing is logged as an error.

Each input is held to the procedure's table of which input each phase takes: a refused
input raises the product's error and changes nothing; a taken one leads where the rules
say (A2, D1, D2, E2). Card faults in the deal, stops and crashes are held to C3, C4, F3 and
F4. At the end of every example, from wherever it stopped, a bounded run of regular steps
(attendant clears, deck changes, croupier inputs, the cable back in, time) deals a round:
no state is a dead end (F3). Where they fit, the soak's own segment checks hold the journal
too.

The default run (CI) is a fixed budget of derandomized examples; ``SHOE_STATEFUL=long``
selects the long profile, which ``benchmarks/stateful.py`` runs from a seed.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import random
import sqlite3
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from benchmarks.soak import SegmentPlan, Tally, check_segment
from firmware_protocol import DECK_53, Button, Card, GateMode
from firmware_protocol.timing import COMMAND_ATTEMPTS
from shoe_controller.errors import ShoeControllerError
from shoe_controller.link.core import LinkState
from shoe_controller.procedure import TableRules, UnreadCardPolicy
from shoe_controller.procedure.declarations import DECLARATIONS
from shoe_controller.procedure.machine import PRE_DEAL, UNDECIDED, Phase
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.service.controller import Actor
from shoe_controller.simulator.deck import build_deck
from shoe_controller.simulator.faults import CardFault, ScheduledFault
from shoe_controller.simulator.options import DeckVariant
from tests.service.stateful_checks import ErrorLog, JournalCheck
from tests.service.stateful_table import CARD_WORD, PHASES_DEALING, WAIT, StatefulTable
from tools import children

#: Which person's input each phase takes (docs/procedure.md, the machine's diagram).
ACCEPTED_IN: dict[str, frozenset[Phase]] = {
    "confirm_shuffle": frozenset({Phase.SHUFFLE_CHECK}),
    "confirm_new_deck": frozenset({Phase.DECK_REMOVED}),
    "set_wagers": frozenset({Phase.DECK_LOADED}),
    "no_more_bets": frozenset({Phase.DECK_LOADED}),
    "start_by_dice": frozenset({Phase.BETS_CLOSED}),
    "start_by_rng": frozenset({Phase.BETS_CLOSED}),
    "wager_settled": frozenset({Phase.START_SET}),
    "stub_counted": frozenset({Phase.STUB_CONFIRM, Phase.STUB_DISPUTE}),
    "accept_stub_count": frozenset({Phase.STUB_DISPUTE}),
    "misdeal_determination": frozenset({Phase.MISDEAL_REVIEW}),
    "close_round": frozenset({Phase.DEALT}),
    "clear_fault": frozenset({Phase.FAULT}),
    "void_round": frozenset(UNDECIDED),
}
#: Inputs whose acceptance in their phase depends on more than the phase: a new deck is
#: confirmed only once one is in the shoe (D2), a clear waits for the jam to be cleared at
#: the shoe (C4, F1) and for the shoe to be back unless it voids the round (F2), the clock
#: may hold the first round.
DEPENDS = frozenset({"confirm_new_deck", "clear_fault", "confirm_shuffle"})
#: The inputs only a supervisor gives (E4); a misdeal determination against the record's
#: proposal too.
SUPERVISOR_INPUTS = frozenset(
    {"confirm_new_deck", "clear_fault", "accept_stub_count", "void_round"}
)
#: The people at the table (E4).
DEALER = Actor("dana", "dealer")
SUPERVISOR = Actor("sam", "supervisor")
CROUPIER_INPUTS = tuple(sorted(ACCEPTED_IN))
CARD_FAULTS = tuple(fault.value for fault in CardFault if fault is not CardFault.EARLY_DRAW)
#: A round's regular wagers, for the steps that run the table as it should be run.
REGULAR_WAGERS = frozenset({2, 4, 5})
#: Between rounds, or no shoe yet: a deck may go in.
BETWEEN_ROUNDS = frozenset(
    {Phase.NO_SHOE, Phase.IDLE, Phase.CLOSED, Phase.VOID_MISDEAL, Phase.VOID_FAULT}
)
#: Regular steps within which a table must deal a round, from any state (F3).
LIVENESS_STEPS = 400
#: Decks of the wrong size whose deal can be complete: their stub is not 4 (D1, D2). A long
#: deck whose extra card is the 54th keeps it in the shoe when the gate locks at the 53rd.
LONG_EXTRA_LAST = "long, the extra card last"
WRONG_SIZE_DECKS = ("short", LONG_EXTRA_LAST)


def deck_defect(cards: list[Card]) -> frozenset[Card]:
    """The cards a deck is missing or holds twice."""
    counts = Counter(cards)
    return frozenset(c for c in DECK_53 if counts[c] != 1) | frozenset(counts) - set(DECK_53)


PROFILES = {
    # CI: a fixed budget well under a minute on two cores.
    "ci": settings(
        max_examples=25,
        stateful_step_count=25,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    ),
    # The benchmark's long run (benchmarks/stateful.py): more and longer examples.
    "long": settings(
        max_examples=400,
        stateful_step_count=60,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    ),
}
_examples = itertools.count(1)
#: The journal's directory: memory where there is some. Every commit of the journal waits
#: for the disk (synchronous=FULL), which is not what this test is about and would take
#: most of its time; the crash tests hold the journal to the disk.
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None

F = TypeVar("F", bound=Callable[..., Any])


def step(method: F) -> F:
    """A step that fails marks the example broken, so that the teardown does not pile a
    second failure (the liveness run) on the first."""

    @functools.wraps(method)
    def wrapper(self: TableStateMachine, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except BaseException:
            self.broken = True
            raise

    return wrapper  # type: ignore[return-value]


class Stats:
    """What the runs did, for the benchmark's report line."""

    def __init__(self) -> None:
        self.examples = 0
        self.steps = 0
        self.rules: dict[str, int] = {}
        self.outcomes: dict[str, int] = {}
        self.refused = 0
        self.accepted = 0
        self.liveness_steps_max = 0
        #: Examples the soak's segment checks also held (where they fit).
        self.soak_checked = 0
        #: Phases the table was in after a step.
        self.phases: dict[str, int] = {}
        #: Decks that left the table with a known defect, and those refused as the removed
        #: deck back (D3).
        self.defects = 0
        self.refused_decks = 0
        #: Called after each example (the benchmark's progress line).
        self.on_example: Callable[[Stats], None] | None = None

    def count(self, name: str) -> None:
        self.steps += 1
        self.rules[name] = self.rules.get(name, 0) + 1


STATS = Stats()


class TableStateMachine(RuleBasedStateMachine):
    """The table service and every person at it (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = False
        self.workdir: Path | None = None
        self._table: StatefulTable | None = None
        self._check: JournalCheck | None = None
        self.errors = ErrorLog()
        self.deck_rng = random.Random(0)
        #: The decks with a defect the croupier loaded, and the defects of those put back.
        self.defective: list[list[Card]] = []
        self.returned_defects: list[frozenset[Card]] = []
        #: The journal's records of decks refused as the removed deck, seen so far.
        self.refused_seen: set[int] = set()
        #: The journal's records of decks that left with a defect, seen so far.
        self.defects_seen: set[int] = set()
        #: The regular steps put a removed deck back once per example.
        self.put_back_done = False

    @property
    def table(self) -> StatefulTable:
        assert self._table is not None
        return self._table

    # --- setting up and tearing down --------------------------------------------------

    @initialize(
        seed=st.integers(0, 2**31),
        dice_wager=st.booleans(),
        record_unknown=st.booleans(),
        line_faults=st.booleans(),
        warmup=st.integers(0, 70),
    )
    def set_up(
        self, seed: int, dice_wager: bool, record_unknown: bool, line_faults: bool, warmup: int
    ) -> None:
        """A table with its journal, its shoe (on a bad line or not) and the other shoes;
        then as many regular steps as ``warmup`` says, so that the example starts anywhere
        in a round."""
        STATS.examples += 1
        policy = UnreadCardPolicy.RECORD_UNKNOWN if record_unknown else UnreadCardPolicy.VOID
        config = Config(table=TableRules(dice_wager=dice_wager, unread_card_policy=policy))
        # Removed even when the run is killed: /dev/shm is memory.
        self.workdir = children.scratch_directory("shoe-stateful-", under=SCRATCH)
        logging.getLogger("shoe_controller").addHandler(self.errors)
        self.deck_rng = random.Random(seed)
        self._table = StatefulTable(
            self.workdir, next(_examples), seed, config, line_faults=line_faults
        )
        self._check = JournalCheck(self._table)
        try:
            self.table.start()
            for _ in range(warmup):
                self.regular_step()
        except BaseException:
            self.broken = True
            raise

    def teardown(self) -> None:
        try:
            if self._table is not None and not self.broken:
                self.deal_a_round()
                problems = self.problems() + self.soak_checks()
                assert not problems, "\n".join(problems)
        finally:
            logging.getLogger("shoe_controller").removeHandler(self.errors)
            if self._table is not None:
                self._table.close()
            if self.workdir is not None:
                children.remove(self.workdir)
            if STATS.on_example is not None:
                STATS.on_example(STATS)

    # --- what holds after every step --------------------------------------------------

    @invariant()
    def everything_holds(self) -> None:
        """See :meth:`problems`."""
        if self._table is None:
            return
        try:
            problems = self.problems()
        except BaseException:
            self.broken = True
            raise
        if problems:
            self.broken = True
        assert not problems, "\n".join(problems)
        phase = self.table.controller.phase.value
        STATS.phases[phase] = STATS.phases.get(phase, 0) + 1

    def problems(self) -> list[str]:
        """What breaks a rule now, one line each, starting with the rule: the journal and
        what was published (E1, E2, E3, F2, one outcome a round: JournalCheck), the shoe's
        gate (F1, F5) and display (E1), and errors logged by the product."""
        table = self.table
        assert self._check is not None
        problems = self._check.check()
        with table.truth.runner.locked() as shoe:
            gate, left, display = shoe.gate, shoe.gate_limit_left, shoe.display
        window = table.config.table.gate_window
        if gate is not GateMode.LOCKED and (left is None or left > window):
            problems.append(f"F5: the shoe's gate lets {left} cards out, the window is {window}")
        phase = table.controller.phase
        if table.heard() and phase not in PHASES_DEALING and gate is not GateMode.LOCKED:
            problems.append(f"F1: the gate is {gate.name} in phase {phase}")
        if CARD_WORD.search(display):
            problems.append(f"E1: the shoe displays a card: {display!r}")
        problems += self.returned_problems()
        problems += [f"logged: {line}" for line in self.errors.lines]
        return problems

    def returned_problems(self) -> list[str]:
        """D3: a deck refused as the removed deck is one the croupier put back: its defect
        is one of a deck put back at the table."""
        assert self._check is not None
        problems = []
        for seq, kind, _, payload in self._check.rows:
            if kind == "deck_defect" and seq not in self.defects_seen:
                self.defects_seen.add(seq)
                STATS.defects += 1
            if kind != "deck_defect" or payload.get("returned") is None:
                continue
            cards = payload["cards"]
            named = {Card.parse(t) for part in cards.values() for t in part}
            if seq not in self.refused_seen:
                self.refused_seen.add(seq)
                STATS.refused_decks += 1
            if not any(named & defect for defect in self.returned_defects):
                problems.append(
                    f"D3: a deck refused as the removed deck was never put back: {cards}"
                )
        return problems

    def soak_checks(self) -> list[str]:
        """The soak's own checks of a segment (benchmarks/soak.py), where they fit: one
        shoe at the table all along (the soak counts events by the shoe's own numbers),
        no event lost in a restart of the shoe (the soak's shoes lose events only where
        a reboot without persistence is planned), and no two cards of a round with the
        same draw index (the soak changes decks between rounds only, and tells cards apart
        by round and draw index)."""
        table = self.table
        check = self._check
        assert check is not None
        drawn = Counter(
            (round_id, p["message"]["draw_index"])
            for _, kind, round_id, p in check.rows
            if kind == "shoe_event" and p["message"]["type"] == "CardDrawn"
        )
        twice = any(n > 1 for n in drawn.values())
        if table.swapped or table.truth.lost or twice:
            return []
        plan = SegmentPlan(0, 0, "stateful", (), None)
        tally = Tally()
        with table.truth.runner.locked() as shoe:
            check_segment(plan, table.journal, shoe, tally)
        STATS.soak_checked += 1
        return tally.problems

    # --- a person's input ---------------------------------------------------------------

    def _snapshot(self) -> tuple[object, ...]:
        p = self.table.procedure
        with self.table.truth.runner.locked() as shoe:
            gate = (shoe.gate, shoe.gate_limit_left)
        return (p.phase, p.round_id, p.facts(), p.gate_command(), p.cards_dealt, p.faults, gate)

    def _input(self, name: str, call: Callable[[], Future[None]], *, valid: bool = True) -> bool:
        """Give an input; a refusal must be the product's error and change nothing, and the
        phase's table says whether it is taken (see ACCEPTED_IN)."""
        table = self.table
        phase = table.controller.phase
        expected: bool | None = phase in ACCEPTED_IN[name] and valid
        if expected and name in DEPENDS:
            expected = None
        before = self._snapshot()
        heard = self._link_news()
        published = len(table.public_events())
        try:
            call().result(timeout=WAIT)
        except ShoeControllerError as exc:
            refusal: ShoeControllerError | None = exc
        else:
            refusal = None
        table.settle()
        code = getattr(refusal, "code", None)
        if code is not None and name in DECLARATIONS:
            # Each input meets only the refusals its declaration names (x-refusals).
            allowed = {c.value for c in DECLARATIONS[name].may_refuse}
            assert code in allowed, f"{name} in phase {phase} was refused with {code}"
        if refusal is not None:
            STATS.refused += 1
            # An event whose frame the line lost comes again with time, or when a damaged
            # frame makes the link ask for it: whenever that is, what it changes is the
            # shoe's doing. The refusal is held to "nothing changed" when the link brought
            # nothing meanwhile.
            if self._link_news() == heard:
                after = self._snapshot()
                assert after == before, f"refused {name} ({refusal}) changed {before} to {after}"
                fresh = table.public_events()[published:]
                assert not fresh, f"refused {name} published {[e.NAME for e in fresh]}"
        else:
            STATS.accepted += 1
        if expected is not None:
            verdict = "accepted" if refusal is None else f"refused ({refusal})"
            assert (refusal is None) == expected, (
                f"{name} in phase {phase} was {verdict}; the procedure "
                f"{'takes' if expected else 'refuses'} it there"
            )
        return refusal is None

    def _link_news(self) -> tuple[int, ...]:
        """What the link has brought the controller so far: the shoe's events and losses,
        connections and links lost."""
        driver = self.table.driver
        assert driver is not None
        stats = driver.stats
        return (
            stats.events_delivered,
            stats.events_lost,
            stats.handshakes,
            stats.links_lost,
            stats.shoe_restarts,
        )

    def _round_ends(self, since: int, round_id: str | None) -> list[ev.RoundEndEvent]:
        return [
            e
            for e in self.table.public_events()[since:]
            if isinstance(e, ev.RoundEndEvent) and e.round == round_id
        ]

    # --- croupier inputs, right or wrong for the phase ------------------------------------

    # Every rule takes one argument (details are drawn from ``data``): hypothesis orders
    # rules by their number of arguments and picks the first ones far more often.

    @rule(data=st.data())
    @step
    def croupier_input(self, data: st.DataObject) -> None:
        """Any input of the croupier or the supervisor, right or wrong for the phase, with
        right or wrong values: wagers on positions that cannot hold one, dice that are not
        dice, the stub as counted or miscounted, a determination for or against the record;
        given by a dealer or a supervisor, whoever may give it or not (E4)."""
        name = data.draw(st.sampled_from(CROUPIER_INPUTS), label="input")
        by = data.draw(st.sampled_from((DEALER, SUPERVISOR)), label="by")
        STATS.count(f"input {name}")
        wagers = frozenset[int]()
        dice = (3, 4, 5)
        count: str | int = "truth"
        misdealt = True
        void = False
        if name in ("set_wagers", "no_more_bets"):
            wagers = data.draw(st.frozensets(st.integers(1, 8), max_size=4), label="wagers")
        elif name == "start_by_dice":
            die = st.integers(0, 7)
            dice = data.draw(st.tuples(die, st.integers(1, 6), st.integers(1, 6)), label="dice")
        elif name == "stub_counted":
            count = data.draw(
                st.one_of(st.just("truth"), st.integers(-1, 8), st.just(99)), label="count"
            )
        elif name == "misdeal_determination":
            misdealt = data.draw(st.booleans(), label="misdealt")
        elif name == "clear_fault":
            void = data.draw(st.booleans(), label="void")
        self.person(
            name, by=by, wagers=wagers, dice=dice, count=count, misdealt=misdealt, void=void
        )

    def person(
        self,
        name: str,
        *,
        by: Actor = DEALER,
        wagers: frozenset[int] = REGULAR_WAGERS,
        dice: tuple[int, int, int] = (3, 4, 5),
        count: str | int = "truth",
        misdealt: bool = True,
        void: bool = False,
    ) -> bool:
        """One input of a person at the table, with the checks of what it must lead to once
        taken (A2, B1, D1, D2, E2, E4, F6)."""
        table = self.table
        c = table.controller
        since = len(table.public_events())
        round_id = table.procedure.round_id
        allowed = by.role == "supervisor" or name not in SUPERVISOR_INPUTS
        if name == "stub_counted":
            number = table.stub_in_hand() if count == "truth" else int(count)
            taken = self._input(
                name, lambda: c.stub_counted(number, actor=by), valid=0 <= number <= 53
            )
            if taken:
                self.counted_by = (round_id, by.user)
                self._counted(since, round_id, number)
            return taken
        if name == "accept_stub_count":
            counts = [
                e.count
                for e in table.public_events()
                if isinstance(e, ev.StubEvent) and e.source == "croupier" and e.round == round_id
            ]
            # E5: another person than the one who entered the count accepts it.
            other = getattr(self, "counted_by", None) != (round_id, by.user)
            taken = self._input(
                name, lambda: c.accept_stub_count(actor=by), valid=allowed and other
            )
            if taken:
                ends = self._round_ends(since, round_id)
                # D4: a deck the shoe read whole has the stub its reading says.
                read = self.read_stub(round_id)
                decided = read if read is not None and read != 4 else counts[-1]
                self.decided = (round_id, decided)
                if decided == 4:
                    assert [e.outcome for e in ends] == ["dealt"], f"D1: accepted 4 gave {ends}"
                else:
                    assert not ends, f"D2: an accepted stub of {decided} ended the round"
                    assert table.controller.phase is Phase.MISDEAL_REVIEW
            return taken
        if name == "misdeal_determination":
            # Whether every position holds 7 is a fact of the deal's cards, whatever the
            # stub: then "misdealt" contradicts the record, and the deck leaves anyway.
            decided = dict([getattr(self, "decided", (None, 0))]).get(round_id, 0)
            excluded = self.every_position_complete(round_id) and decided >= 4
            read = self.read_stub(round_id) is not None
            contradicts = misdealt and excluded
            allowed = by.role == "supervisor" or not contradicts
            taken = self._input(
                name, lambda: c.misdeal_determination(misdealt, actor=by), valid=allowed
            )
            if taken:
                proposal = self.proposal()
                leaves = excluded or read
                assert proposal == ("no-misdeal" if leaves else None), (
                    f"D2: the record {'decides' if leaves else 'cannot tell'} whether the "
                    f"deck leaves, the controller proposed {proposal}"
                )
                want = "void_misdeal" if misdealt and not leaves else "void_deck_removed"
                ends = self._round_ends(since, round_id)
                assert [e.outcome for e in ends] == [want], f"D2: determined {misdealt}: {ends}"
                [determined] = [
                    e for e in table.public_events()[since:] if isinstance(e, ev.DeterminationEvent)
                ]
                assert determined.contradicts is contradicts, "D2: a contradiction unrecorded"
            return taken
        if name == "void_round":
            taken = self._input(
                name,
                lambda: c.void_round("the supervisor stops the round", actor=by),
                valid=allowed,
            )
            if taken:
                ends = self._round_ends(since, round_id)
                assert [e.outcome for e in ends] == ["void_fault"], f"F6: a void gave {ends}"
            return taken
        if name == "close_round":
            taken = self._input(name, lambda: c.close_round(actor=by))
            if taken:
                closed = [
                    e
                    for e in table.public_events()[since:]
                    if isinstance(e, ev.RoundClosedEvent) and e.round == round_id
                ]
                assert len(closed) == 1, f"E2: closing round {round_id} published {closed}"
            return taken
        valid = all(2 <= p <= 7 for p in wagers)
        dice_wager = table.config.table.dice_wager
        calls: dict[str, tuple[Callable[[], Future[None]], bool | None]] = {
            "confirm_shuffle": (lambda: c.confirm_shuffle(actor=by), True),
            "confirm_new_deck": (lambda: c.confirm_new_deck(actor=by), allowed),
            "set_wagers": (lambda: c.set_wagers(wagers, actor=by), valid),
            "no_more_bets": (lambda: c.no_more_bets(wagers, actor=by), valid),
            "start_by_dice": (
                lambda: c.start_by_dice(*dice, actor=by),
                all(1 <= d <= 6 for d in dice),
            ),
            # B2: while a dice-decided wager is offered, a start by RNG is refused.
            "start_by_rng": (lambda: c.start_by_rng(actor=by), not dice_wager),
            "wager_settled": (lambda: c.wager_settled(actor=by), True),
            "clear_fault": (lambda: c.clear_fault(actor=by, void_round=void), allowed),
        }
        call, ok = calls[name]
        taken = self._input(name, call, valid=bool(ok))
        if taken and name in ("confirm_shuffle", "confirm_new_deck"):
            assert table.controller.phase is Phase.DECK_LOADED
            assert table.procedure.round_id not in (None, round_id), "A2: no new round opened"
        return taken

    def _journaled(self, *kinds: str) -> list[tuple[int, str, str | None, dict[str, Any]]]:
        """The journal's records of ``kinds`` as (seq, kind, round, payload), in order."""
        conn = sqlite3.connect(f"file:{self.table.journal}?mode=ro", uri=True)
        try:
            marks = ", ".join("?" * len(kinds))
            rows = conn.execute(
                "SELECT seq, kind, round_id, payload FROM records "
                f"WHERE kind IN ({marks}) ORDER BY seq",
                kinds,
            ).fetchall()
        finally:
            conn.close()
        return [(seq, kind, rid, json.loads(text)) for seq, kind, rid, text in rows]

    def read_stub(self, round_id: str | None) -> int | None:
        """D4, from the journal alone: the stub's size when the shoe read the whole deck
        (every position complete, the shoe's count the stub cards it journaled, each read,
        in sequence, with no double or jam while they passed), else None."""
        if not self.every_position_complete(round_id):
            return None
        records = self._journaled("card", "stub_card", "stub_counted", "shoe_event")
        last_card = max(seq for seq, kind, rid, _ in records if kind == "card" and rid == round_id)
        shoe = [
            (seq, p["count"])
            for seq, kind, rid, p in records
            if kind == "stub_counted" and rid == round_id and p["source"] == "shoe"
        ]
        if not shoe:
            return None
        counted_at, count = shoe[0]
        stub = [p for _, kind, rid, p in records if kind == "stub_card" and rid == round_id]
        deal = self.table.config.table.deal_size
        if len(stub) != count or any(p.get("card") in ("??", None) for p in stub):
            return None
        if [p["index"] for p in stub] != list(range(deal + 1, deal + 1 + count)):
            return None
        irregular = any(
            kind == "shoe_event"
            and p["message"]["type"] in ("Jam", "DoubleCard", "JamCleared")
            and last_card < seq < counted_at
            for seq, kind, _, p in records
        )
        return None if irregular else count

    def every_position_complete(self, round_id: str | None) -> bool:
        """D2, from the journal alone: the round's deal gave every position its cards, each
        read, and the shoe reported no jam while the deal was under way (two cards may have
        passed as one). The stub is no part of it."""
        if round_id is None:
            return False
        records = self._journaled("state", "card", "shoe_event")
        cards = [(seq, p) for seq, kind, rid, p in records if kind == "card" and rid == round_id]
        rules = self.table.config.table
        if len(cards) != rules.deal_size:
            return False
        held = Counter(p["position"] for _, p in cards)
        if any(held[p] != rules.cards_per_position for p in range(1, rules.positions + 1)):
            return False
        if any(p["card"] == "??" for _, p in cards):
            return False
        dealing = min(
            seq
            for seq, kind, rid, p in records
            if kind == "state" and rid == round_id and p["new"] == Phase.DEALING.value
        )
        last_card = cards[-1][0]
        return not any(
            kind == "shoe_event" and p["message"]["type"] == "Jam" and dealing < seq < last_card
            for seq, kind, _, p in records
        )

    def _counted(self, since: int, round_id: str | None, number: int) -> None:
        """D1: the croupier's count decides when every figure agrees with it and it is 4;
        otherwise a supervisor is asked to accept it."""
        table = self.table
        [counted] = [
            e
            for e in table.public_events()[since:]
            if isinstance(e, ev.StubEvent) and e.source == "croupier"
        ]
        ends = self._round_ends(since, round_id)
        figures = counted.figures or {}
        agree = figures.get("shoe") == figures.get("read") == figures.get("deal") == number
        assert counted.agrees is (agree and number == 4), f"D1: {counted} for a count of {number}"
        if counted.agrees:
            assert [e.outcome for e in ends] == ["dealt"], f"D1: a stub of 4 gave {ends}"
        else:
            assert not ends, f"D1: a disputed count of {number} ended the round: {ends}"
            assert table.controller.phase is Phase.STUB_DISPUTE

    @rule(who=st.sampled_from((SUPERVISOR, SUPERVISOR, DEALER)), void=st.booleans())
    @step
    def attendant_clears(self, who: Actor, void: bool) -> None:
        """A supervisor clears the fault (F1), choosing or not to void the round (F2); a
        dealer's clear is refused (E4)."""
        STATS.count("attendant clears")
        self.person("clear_fault", by=who, void=void)

    # --- the croupier's hands at the shoe -------------------------------------------------

    # Rules have no preconditions: what a rule may do depends on the table, which threads
    # move, and hypothesis requires the rules it may choose to depend on its draws alone.
    # A card the shoe cannot release (no deck, a jam, the door open, silent) is not pulled.

    def _can_pull(self) -> bool:
        with self.table.truth.runner.locked() as shoe:
            return shoe.deck_present and not (shoe.jammed or shoe.door_open or shoe.stalled)

    @rule(cards=st.one_of(st.integers(1, 8), st.just(60)))
    @step
    def pull_cards(self, cards: int) -> None:
        """The croupier pulls cards as the gate lets them out, the controller catching up
        with each (the gate's window is one card)."""
        STATS.count("pull cards")
        for _ in range(cards):
            if not self.pull_one():
                return

    def pull_one(self) -> bool:
        with self.table.shoe() as shoe:
            if not (shoe.deck_present and shoe.gate_allows) or shoe.stalled:
                return False
            pulled = shoe.pull_card()
        self.table.settle()
        return pulled

    @rule(cards=st.integers(1, 2))
    @step
    def early_draw(self, cards: int) -> None:
        """Cards forced past the gate, one after the other (F1, A3, F5)."""
        STATS.count("early draw")
        for _ in range(cards):
            with self.table.shoe() as shoe:
                shoe.pull_card(force=True)
            self.table.settle()

    @rule(data=st.data())
    @step
    def card_fault(self, data: st.DataObject) -> None:
        """The simulator's card fault at the next card the croupier pulls (through the
        gate if it is open, else forced past it): a restart keeping its events or not, a
        silence shorter or longer than the link's limit."""
        kind = data.draw(st.sampled_from(CARD_FAULTS), label="fault")
        persist = data.draw(st.booleans(), label="persist") if kind == "reboot" else True
        silent_for = (
            data.draw(st.sampled_from((1.0, 5.0)), label="for") if kind == "silent" else 1.0
        )
        STATS.count(f"card fault {kind}")
        if not self._can_pull():
            return
        table = self.table
        phase = table.controller.phase
        round_id = table.procedure.round_id
        since = len(table.public_events())
        heard = table.heard()
        with table.shoe() as shoe:
            fault = ScheduledFault(CardFault(kind), shoe.next_card_number)
            plan = shoe.options.faults
            shoe.options = shoe.options.with_changes(
                faults=replace(plan, scheduled=(*plan.scheduled, fault)),
                persist=persist,
                silent_for=silent_for,
            )
            through_gate = shoe.gate_allows
            # The fault's effect is known when the card is one of the deal's, not its last.
            in_deal = (
                phase is Phase.DEALING
                and through_gate
                and shoe.cards_left >= 2
                and shoe.draw_index + 1 < table.config.table.deal_size
                and heard
            )
            shoe.pull_card(force=not through_gate)
        table.settle()
        with table.shoe() as shoe:
            # What the fault leads to is known once the controller has seen all the shoe
            # said: on a bad line, a frame lost comes again only with time.
            seen = not shoe.unacked
        if not (in_deal and seen):
            return
        ends = [e.outcome for e in self._round_ends(since, round_id)]
        policy = table.config.table.unread_card_policy
        if kind == "misread":
            voids = policy is UnreadCardPolicy.VOID
            assert ends == (["void_fault"] if voids else []), f"C3: a card unread gave {ends}"
        elif kind == "double_detected":
            assert ends == ["void_misdeal"], f"C4: a double card gave {ends}"
        elif kind == "door":
            assert ends == ["void_fault"], f"C4: the door opened in the deal gave {ends}"
        elif kind == "jam":
            assert ends == [], f"C4: a jam ended the round: {ends}"
            assert table.controller.phase is Phase.FAULT, "C4, F1: a jam must block dealing"

    @rule(
        action=st.sampled_from(
            (
                "jam",
                "clear_jam",
                "open_door",
                "close_door",
                "press_no_more_bets",
                "gate_busy",
                "gate_stuck",
            )
        )
    )
    @step
    def shoe_mechanism(self, action: str) -> None:
        """The croupier at the shoe: a jam and its clearing, the door, the button; or the
        gate's motor, busy for the next command that opens it (sent again, docs/protocol.md
        9) or for every attempt at it (refused: a fault, F1)."""
        STATS.count(action)
        self.mechanism(action)

    def mechanism(self, action: str) -> None:
        with self.table.shoe() as shoe:
            if action == "jam":
                shoe.jam()
            elif action == "clear_jam":
                shoe.clear_jam()
            elif action == "open_door":
                shoe.open_door()
            elif action == "close_door":
                shoe.close_door()
            elif action == "gate_busy":
                shoe.busy_left = 1
            elif action == "gate_stuck":
                shoe.busy_left = COMMAND_ATTEMPTS
            else:
                shoe.press(Button.NO_MORE_BETS)
        self.table.settle()

    @rule(
        deck=st.sampled_from(
            (
                None,
                None,
                DeckVariant.STANDARD,
                DeckVariant.STANDARD,
                *list(DeckVariant),
                "put back",
            )
        )
    )
    @step
    def change_deck(self, deck: DeckVariant | str | None) -> None:
        """The croupier takes the deck out of the shoe (None), or loads one, standard or
        not (a deck still in the shoe comes out first), or puts back a deck with a defect
        loaded before (D3)."""
        if deck == "put back":
            if self._can_put_back():
                STATS.count("put back deck")
                self.put_back()
            else:
                # A deck with its second card a copy of its first: its defect shows at once,
                # so that it leaves the table and can be put back later.
                STATS.count("load deck")
                cards = build_deck(DeckVariant.STANDARD, self.deck_rng)
                self.load([cards[0], cards[0], *cards[2:]])
            return
        variant = deck if isinstance(deck, DeckVariant) else DeckVariant.STANDARD
        STATS.count("take out deck" if deck is None else "load deck")
        self.deck(load=deck is not None, variant=variant)

    def deck(self, *, load: bool, variant: DeckVariant = DeckVariant.STANDARD) -> None:
        if load:
            self.load(build_deck(variant, self.deck_rng))
            return
        with self.table.shoe() as shoe:
            if shoe.deck_present:
                shoe.remove_deck()
        self.table.settle()

    def different_deck(self, deck: str) -> list[Card]:
        """A deck of ``deck``'s kind whose defect shares no card with a deck loaded before in
        the example: another deck by every figure the controller has, so that only a deck
        put back is refused as the removed one (D3)."""
        known = [deck_defect(cards) for cards in self.defective]
        for _ in range(100):
            if deck == LONG_EXTRA_LAST:
                cards = self.long_deck_extra_last()
            else:
                cards = build_deck(DeckVariant(deck), self.deck_rng)
            if not any(deck_defect(cards) & defect for defect in known):
                return cards
        raise AssertionError(f"no {deck} deck unlike the {len(known)} loaded before")

    def long_deck_extra_last(self) -> list[Card]:
        """54 cards, the 54th a second copy of one of the 53: the gate locks at the 53rd
        with it still in the shoe, and the croupier counts a stub of 5 (D1, D2)."""
        cards = build_deck(DeckVariant.STANDARD, self.deck_rng)
        return [*cards, self.deck_rng.choice(cards)]

    def load(self, cards: list[Card], *, returned: bool = False) -> None:
        """The croupier loads ``cards``; a deck with a defect is remembered, so that it can
        be put back at the table (D3)."""
        truth = self.table.truth
        with self.table.shoe() as shoe:
            shoe.load_deck(cards)
            truth.deck_sizes[shoe.deck_number] = len(cards)
            defect = deck_defect(cards)
            if defect:
                self.defective.append(list(cards))
                if returned:
                    self.returned_defects.append(defect)
        self.table.settle()

    def put_back_once(self) -> bool:
        """Put back a deck the table removed for its defect, once per example."""
        if self.put_back_done or not self._can_put_back():
            return False
        self.put_back_done = True
        STATS.count("put back deck")
        self.put_back()
        return True

    def _can_put_back(self) -> bool:
        """Whether the croupier holds a deck with a defect that could be the one removed:
        a deck leaves the table for a defect also when the shoe did not read one of its
        cards (a card fault), and the croupier may never have loaded a defective deck."""
        return bool(self.defective) and bool(self._removed_defects())

    def _removed_defects(self) -> list[set[Card]]:
        """The defects the journal recorded for decks that left the table."""
        payloads = [p for _, _, _, p in self._journaled("deck_defect")]
        return [{Card.parse(t) for part in p["cards"].values() for t in part} for p in payloads]

    def put_back(self) -> None:
        """The croupier puts back at the table a deck with a defect that was loaded before,
        reshuffled: the removed deck coming back (D2, D3). One the table removed for its
        defect if there is one (the journal says which), else the last loaded."""
        removed = self._removed_defects()
        known = [cards for cards in self.defective if any(deck_defect(cards) & r for r in removed)]
        cards = list((known or self.defective)[-1])
        self.deck_rng.shuffle(cards)
        self.load(cards, returned=True)

    # --- the link and the shoes -----------------------------------------------------------

    @rule(action=st.sampled_from(("cable", "cable", "blip")))
    @step
    def link(self, action: str) -> None:
        """The shoe's cable comes out, or goes back in (``cable``); or the shoe drops its
        link for a moment (``blip``, the simulator's disconnect) (F2)."""
        table = self.table
        if action == "blip" and table.cable:
            STATS.count("link drops")
            with table.shoe() as shoe:
                shoe.drop_link()
            table.settle()
        elif table.cable:
            STATS.count("cable out")
            table.unplug()
        else:
            STATS.count("cable in")
            table.plug()

    @rule(persist=st.booleans())
    @step
    def shoe_reboots(self, persist: bool) -> None:
        """The shoe restarts, keeping its unacknowledged events or losing them (F2)."""
        STATS.count(f"shoe reboots persist={int(persist)}")
        with self.table.shoe() as shoe:
            shoe.options = shoe.options.with_changes(persist=persist)
            shoe.reboot()
        self.table.settle()

    @rule(key=st.sampled_from(("first", "other", "same_serial")))
    @step
    def swap_shoe(self, key: str) -> None:
        """Another shoe at the table: another serial number, or the same serial number on
        another model (A1, F2); or the table's own shoe back."""
        if key == self.table.at_table:
            key = "first" if key != "first" else "other"
        STATS.count(f"swap to {key}")
        self.table.swap(key)

    @rule(seconds=st.sampled_from((0.5, 2.0, 4.0, 11.0)))
    @step
    def time_passes(self, seconds: float) -> None:
        """Heartbeats, silences, retransmissions and the link's grace (F2) move with it."""
        STATS.count("time passes")
        self.table.time_passes(seconds)

    # --- the controller -------------------------------------------------------------------

    @rule(how=st.sampled_from(("stop", "crash", "crash, a card out meanwhile")))
    @step
    def controller_restarts(self, how: str) -> None:
        """The operator stops the service and starts it again (F4), or the process dies
        (nothing stopped, sent or journaled) and a new controller starts on the same
        journal and shoe (F3); meanwhile the croupier may pull a card, if the gate the dead
        controller left lets one out (F5)."""
        STATS.count(f"controller {how}")
        table = self.table
        assert self._check is not None
        problems = self._check.check()
        assert not problems, "\n".join(problems)
        phase = table.controller.phase
        round_id = table.procedure.round_id
        outcomes = self._check.outcomes.get(round_id or "", [])
        open_round = round_id is not None and not outcomes
        in_play = outcomes == ["dealt"] and not self._check.closed[round_id or ""]
        since = len(table.public_events())
        heard = table.heard()

        def meanwhile() -> None:
            with table.shoe() as shoe:
                if how == "stop" and heard and not shoe.stalled:
                    assert shoe.gate is GateMode.LOCKED, "F4: the stop left the gate open"
                if how.endswith("meanwhile") and shoe.gate_allows and not shoe.stalled:
                    shoe.pull_card()

        table.restart(crashed=how != "stop", between=meanwhile)
        ends = [e.outcome for e in self._round_ends(since, round_id)]
        if outcomes:
            assert ends == [], f"F3, F4: round {round_id} ended again at the restart: {ends}"
        if how != "stop":
            if open_round:
                assert ends == ["void_fault"], f"F3: round {round_id} open at a crash: {ends}"
            if open_round or in_play:
                assert table.controller.phase is Phase.FAULT, "F3: the gate waits for a clear"
            return
        if phase in PRE_DEAL:
            assert ends == ["not_played"], f"F4: a round stopped before its gate gave {ends}"
            faults = [e for e in table.public_events()[since:] if isinstance(e, ev.FaultEvent)]
            assert not faults, f"F4: the next start needs no attendant, got {faults}"
        elif phase in UNDECIDED:
            assert ends == ["void_fault"], f"F4: a round stopped with cards at stake gave {ends}"
        elif phase is Phase.FAULT:
            assert table.controller.phase is Phase.FAULT, "F3: a fault stands across a stop"

    # --- the table run as it should be ----------------------------------------------------

    @rule(steps=st.integers(1, 25))
    @step
    def advance(self, steps: int) -> None:
        """The regular next steps of a well-run table (see regular_step)."""
        STATS.count("advance")
        for _ in range(steps):
            self.regular_step()

    @rule(deck=st.sampled_from(WRONG_SIZE_DECKS), misdealt=st.booleans())
    @step
    def round_on_a_deck_of_the_wrong_size(self, deck: str, misdealt: bool) -> None:
        """Once the table is between rounds, the croupier loads a deck of the wrong size and
        the regular steps deal its round; at the review the croupier determines
        ``misdealt``, a supervisor giving one against a record that shows every position
        complete (D1, D2, E4). The deck must leave the table whatever the determination."""
        STATS.count(f"wrong-size deck {deck}")
        table = self.table
        loaded_at: int | None = None
        for _ in range(LIVENESS_STEPS):
            phase = table.controller.phase
            if loaded_at is None:
                with table.shoe() as shoe:
                    deck_present = shoe.deck_present
                between = phase in BETWEEN_ROUNDS or phase is Phase.DECK_REMOVED
                if between and not deck_present and table.cable:
                    loaded_at = len(table.public_events())
                    self.load(self.different_deck(deck))
                    continue
            elif phase is Phase.MISDEAL_REVIEW:
                complete = self.every_position_complete(table.procedure.round_id)
                by = SUPERVISOR if misdealt and complete else DEALER
                STATS.count(f"wrong-size review {'complete' if complete else 'open'}")
                self.person("misdeal_determination", misdealt=misdealt, by=by)
                return
            elif any(isinstance(e, ev.RoundEndEvent) for e in table.public_events()[loaded_at:]):
                return
            self.regular_step()

    def regular_step(self) -> str:  # noqa: C901 (one branch per prompt the model answers)
        """One thing the people at the table do next to get a round dealt, whatever the
        state: put the cable back, let time pass for a silent or restarting shoe, clear a
        jam or close the door, clear a fault, change a spent deck, answer the prompt, pull
        the next card."""
        table = self.table
        if not table.cable:
            table.plug()
            return "cable in"
        with table.shoe() as shoe:
            stalled, jammed, door = shoe.stalled, shoe.jammed, shoe.door_open
            deck_present, fresh = shoe.deck_present, shoe.deck_present and shoe.draw_index == 0
            gate_allows, unacked = shoe.gate_allows, bool(shoe.unacked)
        core = table.core
        assert core is not None
        if stalled or unacked or core.state is not LinkState.CONNECTED:
            # The shoe is silent, or restarting, or holds events the controller has not
            # seen (lost on the line): they come with time.
            table.time_passes(0.5)
            return "time passes"
        if jammed or door:
            self.mechanism("clear_jam" if jammed else "close_door")
            return "jam or door"
        phase = table.controller.phase
        if phase is Phase.FAULT:
            if not self.person("clear_fault", by=SUPERVISOR):
                table.time_passes(0.5)
            return "clear"
        if phase in BETWEEN_ROUNDS or phase is Phase.DECK_REMOVED:
            if (
                phase is Phase.DECK_REMOVED
                and fresh
                and self.person("confirm_new_deck", by=SUPERVISOR)
            ):
                return "new deck"
            # The round is over: its deck comes out as the soak's croupier takes it out,
            # then a fresh one goes in (its shuffle's check follows, or its confirmation
            # as a different deck).
            if table.take_out_spent_deck():
                table.settle()
                return "spent deck out"
            if phase is Phase.DECK_REMOVED and not deck_present and self.put_back_once():
                # A careless croupier puts the removed deck back, once: it is refused
                # when its defect shows again (D3), and a different deck follows.
                return "deck put back"
            self.deck(load=not deck_present)
            return "deck"
        answers = {
            Phase.SHUFFLE_CHECK: "confirm_shuffle",
            Phase.DECK_LOADED: "no_more_bets",
            Phase.BETS_CLOSED: "start_by_dice",
            Phase.START_SET: "wager_settled",
            Phase.STUB_CONFIRM: "stub_counted",
            Phase.DEALT: "close_round",
        }
        if phase is Phase.MISDEAL_REVIEW:
            # The croupier follows the record where it proposes an outcome, and where it
            # cannot, finds a position with more or fewer than 7 (D2).
            self.person("misdeal_determination", misdealt=self.proposal() is None)
            return "misdeal_determination"
        if phase is Phase.STUB_DISPUTE:
            self.person("accept_stub_count", by=SUPERVISOR)
            return "accept_stub_count"
        if phase in answers:
            self.person(answers[phase])
            return answers[phase]
        if phase in PHASES_DEALING:
            if gate_allows and deck_present:
                self.pull_one()
                return "card"
            if phase is Phase.STUB_COUNT and deck_present:
                # The gate locked at the deck's last card with cards still in the shoe (a
                # long deck): the croupier takes them out to count the stub (D1).
                self.deck(load=False)
                return "stub out"
        table.time_passes(0.5)
        return "time passes"

    def proposal(self) -> str | None:
        """The outcome the controller proposed with its last prompt for a determination."""
        prompts = [
            e
            for e in self.table.public_events()
            if isinstance(e, ev.PromptEvent) and e.need == "misdeal_determination"
        ]
        proposal = prompts[-1].proposal if prompts else None
        return proposal if isinstance(proposal, str) else None

    def deal_a_round(self) -> None:
        """F3: from wherever the example stopped, regular steps deal a round."""
        table = self.table
        since = len(table.public_events())
        done: list[str] = []
        for number in range(LIVENESS_STEPS):
            dealt = [
                e
                for e in table.public_events()[since:]
                if isinstance(e, ev.RoundEndEvent) and e.outcome == "dealt"
            ]
            if dealt:
                STATS.liveness_steps_max = max(STATS.liveness_steps_max, number)
                for e in table.public_events():
                    if isinstance(e, ev.RoundEndEvent):
                        STATS.outcomes[e.outcome] = STATS.outcomes.get(e.outcome, 0) + 1
                return
            done.append(self.regular_step())
        raise AssertionError(
            f"no round dealt after {LIVENESS_STEPS} regular steps: {table.describe()}; "
            f"last steps {done[-12:]}"
        )


PROFILE = os.environ.get("SHOE_STATEFUL", "ci")
TableStateMachine.TestCase.settings = PROFILES[PROFILE]
#: pytest's limit for the whole run: room to shrink a failure in CI, none for the long run.
TIMEOUTS = {"ci": 900, "long": 0}


class TestTableStateful(TableStateMachine.TestCase):  # type: ignore[misc,valid-type]
    pytestmark = [
        pytest.mark.timeout(TIMEOUTS[PROFILE]),
        pytest.mark.rule("A2"),
        pytest.mark.rule("A3"),
        pytest.mark.rule("B1"),
        pytest.mark.rule("B2"),
        pytest.mark.rule("C3"),
        pytest.mark.rule("C4"),
        pytest.mark.rule("D1"),
        pytest.mark.rule("D2"),
        pytest.mark.rule("D4"),
        pytest.mark.rule("E1"),
        pytest.mark.rule("E5"),
        pytest.mark.rule("E2"),
        pytest.mark.rule("E3"),
        pytest.mark.rule("F1"),
        pytest.mark.rule("F2"),
        pytest.mark.rule("F3"),
        pytest.mark.rule("F4"),
        pytest.mark.rule("F5"),
    ]
