"""When PIN checks run (shoe_controller/api/pinchecks.py): never while cards leave the shoe
nor a second after, 30 s at most; the table console's lane apart from the others'; a lane
resting three times as long as its check. On a simulated clock: its waits end at once."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import shoe_controller
from shoe_controller.api.pinchecks import (
    DEAL_UNDER_WAY,
    DEFER_S,
    NO_DEAL,
    SETTLE_S,
    DealWatch,
    PinCheckPacing,
    SystemClock,
)
from shoe_controller.procedure.machine import Phase
from shoe_controller.service import events as ev
from tests.api.client import post_json
from tests.api.conftest import PEOPLE, StartServer
from tests.api.fakes import FakeTable

START = 1000.0
#: A guard on the waits of the real threads below, never reached when all is well.
GUARD_S = 10.0


class SimClock:
    """Seconds that pass only in waits, and at once: a wait runs the actions due before its
    end (the table entering a phase at a time), in their order, and ends as soon as its
    event is set. Thread-safe, for the lanes' threads."""

    def __init__(self) -> None:
        self.time = START
        self._lock = threading.RLock()
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        with self._lock:
            return self.time

    def at(self, when: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._due, (when, next(self._order), action))

    def wait(self, event: threading.Event, timeout: float) -> bool:
        with self._lock:
            end = self.time + timeout
            while not event.is_set() and self._due and self._due[0][0] <= end:
                when, _, action = heapq.heappop(self._due)
                self.time = max(self.time, when)
                action()
            if event.is_set():
                return True
            self.time = end
            return False

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.time += seconds


# --- the phases ---------------------------------------------------------------------------


def test_the_phases_are_the_machines() -> None:
    assert all(isinstance(phase, Phase) for phase in DEAL_UNDER_WAY | NO_DEAL)


def test_every_phase_is_placed_once() -> None:
    """A phase added to the machine fails here until it is placed: beside the deal or not."""
    assert not DEAL_UNDER_WAY & NO_DEAL
    assert set(Phase) - (DEAL_UNDER_WAY | NO_DEAL) == set()


def test_cards_leave_the_shoe_in_the_deal_and_the_stubs_reading() -> None:
    assert {Phase.DEALING, Phase.STUB_COUNT} == DEAL_UNDER_WAY


# --- a pause in the deal ------------------------------------------------------------------


@pytest.fixture
def sim() -> SimClock:
    return SimClock()


@pytest.fixture
def deals(sim: SimClock) -> DealWatch:
    return DealWatch(sim)


def _waited(sim: SimClock, deals: DealWatch) -> float:
    """How long a check waits for a pause in the deal, from now."""
    began = sim.now()
    deals.wait_for_a_pause()
    return sim.now() - began


def test_out_of_a_deal_a_check_waits_for_nothing(sim: SimClock, deals: DealWatch) -> None:
    assert _waited(sim, deals) == 0
    deals.table_in(Phase.DECK_LOADED)
    assert _waited(sim, deals) == 0


def test_during_a_deal_a_check_waits_for_its_end_and_a_second(
    sim: SimClock, deals: DealWatch
) -> None:
    deals.table_in(Phase.DEALING)
    sim.at(START + 3, lambda: deals.table_in(Phase.STUB_COUNT))
    sim.at(START + 5, lambda: deals.table_in(Phase.DEALT))
    assert _waited(sim, deals) == 5 + SETTLE_S


def test_a_deal_just_ended_is_waited_for_only_the_rest_of_the_second(
    sim: SimClock, deals: DealWatch
) -> None:
    deals.table_in(Phase.DEALING)
    deals.table_in(Phase.STUB_CONFIRM)
    sim.advance(0.25)
    assert _waited(sim, deals) == pytest.approx(SETTLE_S - 0.25)


def test_a_fault_ends_the_deal(sim: SimClock, deals: DealWatch) -> None:
    """A supervisor called to a fault is checked a second after it."""
    deals.table_in(Phase.DEALING)
    sim.at(START + 2, lambda: deals.table_in(Phase.FAULT))
    assert _waited(sim, deals) == 2 + SETTLE_S


def test_a_deal_that_begins_again_is_waited_for_too(sim: SimClock, deals: DealWatch) -> None:
    deals.table_in(Phase.DEALING)
    sim.at(START + 5, lambda: deals.table_in(Phase.DEALT))
    sim.at(START + 5.5, lambda: deals.table_in(Phase.DEALING))
    sim.at(START + 8, lambda: deals.table_in(Phase.CLOSED))
    assert _waited(sim, deals) == 8 + SETTLE_S


def test_a_check_waits_for_a_deal_at_most_thirty_seconds(sim: SimClock, deals: DealWatch) -> None:
    deals.table_in(Phase.DEALING)
    assert _waited(sim, deals) == DEFER_S
    # The limit holds the second after a deal too.
    sim.at(sim.now() + DEFER_S - 0.5, lambda: deals.table_in(Phase.DEALT))
    assert _waited(sim, deals) == DEFER_S


def test_phases_that_stay_out_of_a_deal_do_not_restart_the_second(
    sim: SimClock, deals: DealWatch
) -> None:
    deals.table_in(Phase.DEALING)
    sim.at(START + 1, lambda: deals.table_in(Phase.STUB_CONFIRM))
    sim.at(START + 1.5, lambda: deals.table_in(Phase.DEALT))
    assert _waited(sim, deals) == 1 + SETTLE_S


def test_closing_ends_every_wait(sim: SimClock, deals: DealWatch) -> None:
    deals.table_in(Phase.DEALING)
    sim.at(START + 4, deals.close)
    assert _waited(sim, deals) == 4
    # A deal told after the close keeps nobody waiting.
    deals.table_in(Phase.DEALING)
    assert _waited(sim, deals) == 0


def test_closing_ends_the_second_after_a_deal(sim: SimClock, deals: DealWatch) -> None:
    deals.table_in(Phase.DEALING)
    sim.at(START + 2, lambda: deals.table_in(Phase.DEALT))
    sim.at(START + 2.5, deals.close)
    assert _waited(sim, deals) == 2.5


# --- the lanes ----------------------------------------------------------------------------


@pytest.fixture
def pacing(sim: SimClock) -> Iterator[PinCheckPacing]:
    made = PinCheckPacing(clock=sim)
    yield made
    made.close()


def _taking(sim: SimClock, seconds: float) -> Callable[[Callable[[], None]], float]:
    """A check that waits for a pause in the deal, then takes ``seconds``; it answers when
    it began, after that wait."""

    def check(before_check: Callable[[], None]) -> float:
        before_check()
        began = sim.now()
        sim.advance(seconds)
        return began

    return check


def test_a_lane_rests_three_times_as_long_as_its_check(
    sim: SimClock, pacing: PinCheckPacing
) -> None:
    # Held until four checks wait on the lane (a check that takes no time: no rest).
    release = threading.Event()
    pacing.submit(lambda before_check: release.wait(GUARD_S), at_table=False)
    first = pacing.submit(_taking(sim, 0.2), at_table=False)
    second = pacing.submit(_taking(sim, 0.2), at_table=False)
    third = pacing.submit(_taking(sim, 0.4), at_table=False)
    fourth = pacing.submit(_taking(sim, 0.2), at_table=False)
    release.set()
    # Each rest is queued behind the checks already waiting on the lane: three of them here.
    assert first.result(GUARD_S) == START
    assert second.result(GUARD_S) == pytest.approx(START + 0.2)
    assert third.result(GUARD_S) == pytest.approx(START + 0.4)
    assert fourth.result(GUARD_S) == pytest.approx(START + 0.8)
    # One more, once those rests are over: 0.6 + 0.6 + 1.2 + 0.6 after the last check's end.
    fifth = pacing.submit(_taking(sim, 0.2), at_table=False)
    assert fifth.result(GUARD_S) == pytest.approx(START + 1.0 + 3.0)


def test_a_lone_check_takes_a_quarter_of_the_time(sim: SimClock, pacing: PinCheckPacing) -> None:
    assert pacing.submit(_taking(sim, 0.2), at_table=False).result(GUARD_S) == START
    after = pacing.submit(_taking(sim, 0.2), at_table=False).result(GUARD_S)
    assert after == pytest.approx(START + 0.2 + 0.6)


def test_the_wait_for_the_deal_is_not_counted_as_the_checks_time(
    sim: SimClock, pacing: PinCheckPacing
) -> None:
    pacing.table_in(Phase.DEALING)
    sim.at(START + 5, lambda: pacing.table_in(Phase.DEALT))
    began = pacing.submit(_taking(sim, 0.2), at_table=True).result(GUARD_S)
    assert began == START + 5 + SETTLE_S
    # The check's wait for the deal (6 s) is not followed by 18 s of rest: 0.6 s.
    after = pacing.submit(_taking(sim, 0.2), at_table=True).result(GUARD_S)
    assert after == pytest.approx(began + 0.2 + 0.6)


def test_a_check_that_needs_no_pin_does_not_wait_for_the_deal(
    sim: SimClock, pacing: PinCheckPacing
) -> None:
    """A name refused while locked is answered without a PIN check, so without a wait."""
    pacing.table_in(Phase.DEALING)
    answered = pacing.submit(lambda before_check: sim.now(), at_table=False)
    assert answered.result(GUARD_S) == START


def test_the_table_consoles_lane_never_queues_behind_the_others(
    pacing: PinCheckPacing,
) -> None:
    release = threading.Event()
    try:
        busy = pacing.submit(lambda before_check: release.wait(GUARD_S), at_table=False)
        queued = pacing.submit(lambda before_check: "elsewhere", at_table=False)
        at_table = pacing.submit(lambda before_check: "at the table", at_table=True)
        assert at_table.result(GUARD_S) == "at the table"
        assert not queued.done()
    finally:
        release.set()
    assert busy.result(GUARD_S) is True
    assert queued.result(GUARD_S) == "elsewhere"


def test_closing_cancels_the_queued_checks_and_refuses_new_ones(
    pacing: PinCheckPacing,
) -> None:
    release = threading.Event()
    try:
        busy = pacing.submit(lambda before_check: release.wait(GUARD_S), at_table=False)
        queued = pacing.submit(lambda before_check: "never", at_table=False)
        pacing.close()
        assert queued.cancelled()
        with pytest.raises(RuntimeError):
            pacing.submit(lambda before_check: "never", at_table=True)
    finally:
        release.set()
    assert busy.result(GUARD_S) is True


class _RealWaits(SystemClock):
    """The real waits, told to the test, with seconds that a check moves on by itself."""

    def __init__(self) -> None:
        self.time = START
        self.waiting = threading.Event()
        self.waited = threading.Event()

    def now(self) -> float:
        return self.time

    def wait(self, event: threading.Event, timeout: float) -> bool:
        self.waiting.set()
        try:
            return super().wait(event, timeout)
        finally:
            self.waited.set()


def test_closing_ends_a_lanes_rest() -> None:
    clock = _RealWaits()
    pacing = PinCheckPacing(clock=clock)
    try:

        def an_hour(before_check: Callable[[], None]) -> None:
            clock.time += 3600  # a rest of three hours follows, unless closed

        pacing.submit(an_hour, at_table=False).result(GUARD_S)
        assert clock.waiting.wait(GUARD_S)
    finally:
        pacing.close()
    assert clock.waited.wait(GUARD_S)


def test_closing_lets_a_check_waiting_for_the_deal_go_on() -> None:
    clock = _RealWaits()
    pacing = PinCheckPacing(clock=clock)
    pacing.table_in(Phase.DEALING)
    try:
        waiting = pacing.submit(lambda before_check: before_check(), at_table=True)
        assert clock.waiting.wait(GUARD_S)
    finally:
        pacing.close()
    assert waiting.result(GUARD_S) is None


# --- the server tells the phases; the checking process stays small -----------------------


def test_a_state_the_machine_does_not_have_is_logged_and_stops_nothing(
    start_server: StartServer, fake: FakeTable, caplog: pytest.LogCaptureFixture
) -> None:
    server = start_server(fake)
    fake.publish(ev.StateEvent(state="dealing", previous="start_set"))
    fake.publish(ev.StateEvent(state="no such state", previous="dealing"))
    assert "the machine does not have" in caplog.text
    fake.publish(ev.StateEvent(state="dealt", previous="stub_count"))
    login = {"user": "dana", "pin": PEOPLE["dana"][1]}
    status, body, _ = asyncio.run(post_json(server.url + "api/v1/login", login))
    assert (status, body["user"]) == (200, "dana")


def test_the_checking_process_imports_neither_the_procedure_nor_asyncio() -> None:
    """The process imports the modules of the functions it runs (pinprocess and users):
    argon2 and little else, not what the pacing's phases need."""
    probe = (
        "import sys, shoe_controller.api.pinprocess, shoe_controller.api.users; "
        "print(sorted(m for m in sys.modules "
        "if m.startswith(('shoe_controller.procedure', 'asyncio', 'transitions'))))"
    )
    tree = Path(shoe_controller.__file__).parents[1]
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tree, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
