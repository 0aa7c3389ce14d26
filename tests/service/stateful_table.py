"""The table the stateful test drives: the soak's :class:`~benchmarks.soak.SimTable`
with a clock the test moves, shoes it can plug, unplug and swap, a controller it can stop
or crash and start again on the same journal, and a way to wait until the table is still.

Time stands still unless the test moves it (:meth:`StatefulTable.time_passes`): heartbeats,
silences, retransmissions and the link's grace all run on :class:`ManualClock`, which the
shoes, the link and the controller share. Nothing here sleeps: waiting means waiting on a
condition, with a bound, for something the table is expected to do.

"Still" (:meth:`StatefulTable.settle`): the link reader has taken everything the shoe sent
and the shoe has taken everything the controller sent (a ``Ping`` answered, or, without a
connected shoe, two whole reader cycles with no byte either way), the controller has
handled everything queued before a barrier, and none of that changed anything.

The ground truth is the shoes' own record (``draws``, ``events``, ``acknowledged``),
what :class:`ShoeTruth` adds to it (the events a shoe lost in a restart, the size of each
deck loaded), and what each shoe told the link of the events it holds in the frames the
link decoded (:meth:`StatefulTable.told`); :mod:`tests.service.stateful_checks` holds the
journal to it.
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.soak import LINE_FAULTS, SimTable
from firmware_protocol import GateMode, Heartbeat, Hello, Ping, StreamDecoder
from shoe_controller.errors import DeviceNotFound
from shoe_controller.link import events as link_events
from shoe_controller.link.core import LinkCore, LinkState
from shoe_controller.link.driver import LinkDriver
from shoe_controller.link.pending import PendingCommand
from shoe_controller.link.sequence import ResumePoint
from shoe_controller.procedure.machine import Phase
from shoe_controller.procedure.procedure import Procedure
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.service.controller import LinkLike, ResumeAt, TableController
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.runner import ShoeRunner
from shoe_controller.simulator.shoe import SimulatedShoe
from shoe_controller.simulator.transport import SimTransport, switch_off
from tests.service.helpers import crash

#: Longest real wait for anything the table is expected to do at once (seconds).
WAIT = 10.0
#: The longest step by which the clock moves: well under the heartbeat period, so that a
#: live link never looks silent because the test moved time in one jump.
TIME_STEP = 0.25
#: The link reader's longest wait between two looks at the clock (real seconds).
POLL = 0.002
#: How long a Ping may take before the test looks at the reader's cycles instead (real
#: seconds; a Ping takes about a millisecond).
PING_WAIT = 0.05
#: A card identity on the shoe's display.
CARD_WORD = re.compile(r"\b(?:[A2-9TJQK][SHDC]|JK)\b")
#: What the simulated croupier must never do by itself here: the test is its hands.
NEVER = 10**9
BARRIER = "stateful barrier"


class ManualClock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        with self._lock:
            self._now += seconds
            return self._now


class SeededRandom:
    """The controller's random source for start_by_rng, seeded (``randbelow`` as in
    :mod:`secrets`)."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def randbelow(self, exclusive_upper_bound: int, /) -> int:
        return self._random.randrange(exclusive_upper_bound)


#: Called with a shoe's (model, serial number) and the oldest event it holds, as one of
#: its frames that a link decoded says.
Told = Callable[[tuple[str, str], int], None]


class WatchedCore(LinkCore):
    """The product's link core, unchanged, letting the test see the reader thread's
    progress: the time it last applied, and how many whole cycles (read, tick, write) it
    went through without a byte in or out since it last had something to do.

    It also reads what the core reads, with a decoder of its own, and passes to ``told``
    what the shoe said of the events it holds (a Hello's ``next_event_seq``, a Heartbeat's
    oldest unacknowledged event): events a shoe lost are known to the link only from
    such a frame (docs/protocol.md, 8), which the line may lose or damage."""

    def __init__(self, resume: list[ResumePoint], told: Told | None = None) -> None:
        super().__init__(resume=resume)
        self.watch = threading.Condition()
        self.ticked_at = -math.inf
        self.idle_cycles = 0
        self._busy = False
        self._told = told
        self._reading = StreamDecoder()
        #: The shoe that said Hello on this connection: whose frames these are.
        self._talking: tuple[str, str] | None = None

    def _busy_now(self) -> None:
        with self.watch:
            self._busy = True
            self.watch.notify_all()

    def start(self, now: float) -> None:
        super().start(now)
        self._reading = StreamDecoder()
        self._talking = None
        self._busy_now()

    def receive_data(self, data: bytes, now: float) -> None:
        reading = self.state not in (LinkState.IDLE, LinkState.DOWN)
        super().receive_data(data, now)
        if reading:
            self._read(data)
        self._busy_now()

    def _read(self, data: bytes) -> None:
        """What the shoe said of its events, in the frames the core just read."""
        self._reading.receive_data(data)
        while (packet := self._reading.next_packet()) is not None:
            message = packet.message
            if isinstance(message, Hello):
                self._talking = (message.model, message.serial_number)
                oldest = message.next_event_seq
            elif isinstance(message, Heartbeat):
                oldest = message.last_event_seq - message.unacked + 1
            else:
                continue
            if self._talking is not None and self._told is not None:
                self._told(self._talking, oldest)

    def data_to_send(self) -> bytes:
        data = super().data_to_send()
        if data:
            self._busy_now()
        return data

    def connection_lost(
        self, detail: str, now: float, reason: link_events.DownReason = "transport"
    ) -> None:
        super().connection_lost(detail, now, reason)
        self._busy_now()

    def tick(self, now: float) -> None:
        super().tick(now)
        with self.watch:
            self.ticked_at = now
            if self._busy:
                self._busy = False
            else:
                self.idle_cycles += 1
            self.watch.notify_all()


@dataclass(frozen=True)
class ShoeSpec:
    """One simulated shoe the test may put at the table."""

    key: str
    serial: str
    model: str
    address: str


def shoe_specs(example: int, seed: int, *, line_faults: bool) -> dict[str, ShoeSpec]:
    """The shoes of one example: the table's own, another serial number, and the table's
    serial number on another model (another shoe to the procedure, A1, F2). The croupier
    inside the simulator only loads the first deck: the test is the croupier's hands.
    With ``line_faults``, the table's own shoe sends on a bad line (every line fault of the
    simulator, at the soak's highest rates)."""
    serial = f"MT{example:05d}"
    hands = f"pace={NEVER}&autoload=0&jam_for={NEVER}&door_for={NEVER}"
    line = ",".join(f"{name}={rate}" for name, rate in LINE_FAULTS.items())
    specs = {}
    for key, (number, model) in {
        "first": (serial, "ES-SIM"),
        "other": (f"{serial}B", "ES-SIM"),
        "same_serial": (serial, "ES-SIM-2"),
    }.items():
        address = f"sim://?seed={seed}&{hands}&serial={number}&model={model}"
        if line_faults and key == "first":
            address += f"&faults={line}"
        specs[key] = ShoeSpec(key, number, model, address)
    return specs


@dataclass
class ShoeTruth:
    """What the test knows of one shoe beyond the shoe's own record."""

    spec: ShoeSpec
    runner: ShoeRunner
    #: Events the shoe issued and lost in a restart that kept nothing (persist=0).
    lost: set[int] = field(default_factory=set)
    #: Cards in each deck loaded, by the shoe's deck number (the first is standard).
    deck_sizes: dict[int, int] = field(default_factory=lambda: {1: 53})


class StatefulTable(SimTable):
    """See the module's docstring. The test is every person at the table: croupier,
    attendant, the hands at the shoe, the technician with the cable."""

    def __init__(
        self, workdir: Path, example: int, seed: int, config: Config, *, line_faults: bool
    ) -> None:
        self.specs = shoe_specs(example, seed, line_faults=line_faults)
        self._keys = {(spec.model, spec.serial): key for key, spec in self.specs.items()}
        self._told_lock = threading.Lock()
        self._oldest_told: dict[str, int] = {}
        self.manual = ManualClock()
        self.seed = seed
        #: Controllers started on the journal so far.
        self.runs = 0
        self.at_table = "first"
        self.cable = True
        #: Whether another shoe was ever put at the table.
        self.swapped = False
        self.core: WatchedCore | None = None
        self.driver: LinkDriver | None = None
        self._to_controller: Callable[[link_events.LinkEvent], None] | None = None
        #: The last Ping that settling sent, which may still wait for its answer.
        self._ping: PendingCommand | None = None
        #: Whether the shoe answered the Ping of the last settling: every command the
        #: controller gave before it reached the shoe.
        self._heard = False
        self._barriers = 0
        super().__init__(
            self.specs["first"].address,
            workdir / "journal.sqlite3",
            None,
            config=config,
            clock=self.manual,
        )
        self.shoes = {"first": ShoeTruth(self.specs["first"], self.runner)}
        for key in ("other", "same_serial"):
            spec = self.specs[key]
            self.shoes[key] = ShoeTruth(spec, self.switch_on(spec.address))

    # --- the controller ------------------------------------------------------------------

    def new_controller(self, **options: Any) -> TableController:
        return super().new_controller(
            clock=lambda: 1.9e9 + self.manual(),
            monotonic=self.manual,
            rng=SeededRandom(self.seed + self.runs),
            **options,
        )

    def start(self) -> None:
        self.runs += 1
        self.controller.start()
        self.settle()

    def restart(self, *, crashed: bool, between: Callable[[], None] | None = None) -> None:
        """Stop the controller as the operator asks, or crash it (the process dies: nothing
        stopped, sent or journaled), then start a new one on the same journal and shoe;
        ``between`` runs while no controller runs."""
        if crashed:
            crash(self.controller)
        else:
            self.controller.stop()
        if between is not None:
            between()
        self.controller = self.new_controller()
        self.start()

    def close(self) -> None:
        try:
            self.controller.stop()
        finally:
            for spec in self.specs.values():
                switch_off(spec.address)

    @property
    def procedure(self) -> Procedure:
        """The controller's procedure, read (never driven) while the table is still."""
        return self.controller._procedure

    # --- the link and the shoes --------------------------------------------------------

    def _link(
        self,
        address: str,
        config: Config,
        on_event: Callable[[link_events.LinkEvent], None],
        resume: Sequence[ResumeAt],
    ) -> LinkLike:
        core = WatchedCore([ResumePoint(*point) for point in resume], self._told)
        driver = LinkDriver(
            address,
            config.approved,
            on_event,
            clock=self.manual,
            opener=self._open_shoe,
            reconnect_delay=lambda attempt: 0.01,
            core=core,
            poll_interval=POLL,
        )
        self.core, self.driver, self._to_controller = core, driver, on_event
        self._ping = None
        return driver

    def _told(self, shoe: tuple[str, str], oldest: int) -> None:
        """A link decoded a frame in which ``shoe`` says the oldest event it holds (the
        reader thread)."""
        key = self._keys.get(shoe)
        if key is not None:
            with self._told_lock:
                self._oldest_told[key] = max(self._oldest_told.get(key, 0), oldest)

    def told(self, key: str) -> int:
        """The highest "oldest event I hold" that shoe ``key`` said in a frame a link
        decoded: of the events it lost, those below it are known to the link (F2)."""
        with self._told_lock:
            return self._oldest_told.get(key, 0)

    def _open_shoe(self, address: str) -> SimTransport:
        """The link opens whatever shoe is at the table, if its cable is in."""
        if not self.cable:
            raise DeviceNotFound("the shoe's cable is out")
        spec = self.specs[self.at_table]
        return SimTransport(
            SimOptions.from_address(spec.address), address=spec.address, clock=self.manual
        )

    @property
    def truth(self) -> ShoeTruth:
        return self.shoes[self.at_table]

    @contextmanager
    def shoe(self) -> Iterator[SimulatedShoe]:
        """The shoe at the table, held; what it lost meanwhile is noted on the way out."""
        truth = self.truth
        with truth.runner.locked() as shoe:
            yield shoe
            held = set(shoe.unacked)
            truth.lost |= {
                seq for seq, _ in shoe.events if seq > shoe.acknowledged and seq not in held
            }

    def unplug(self) -> None:
        self.cable = False
        with self.shoe() as shoe:
            shoe.drop_link()
        self.settle()

    def plug(self) -> None:
        self.cable = True
        self.settle()

    def swap(self, key: str) -> None:
        """Another shoe at the table: the cable goes to it."""
        if self.cable:
            with self.shoe() as shoe:
                shoe.drop_link()
        self.at_table = key
        self.swapped = True
        self.runner = self.truth.runner
        self.settle()

    def heard(self) -> bool:
        """Whether, when the table last settled, the shoe at the table answered the link:
        every command the controller gave had reached it, and what it says reaches the
        controller."""
        return self._heard

    # --- time ----------------------------------------------------------------------------

    def time_passes(self, seconds: float) -> None:
        """Move the clock in steps, letting the link and the controller catch up with each."""
        left = seconds
        while left > 1e-9:
            step = min(TIME_STEP, left)
            left -= step
            self.manual.advance(step)
            self.truth.runner.wake()
            self.settle()

    # --- settling ------------------------------------------------------------------------

    def settle(self) -> None:
        """Wait until the table is still (see the module's docstring)."""
        give_up = time.monotonic() + WAIT
        self._flush_link(give_up)
        while True:
            before = self.fingerprint()
            self._controller_barrier(give_up)
            self._flush_link(give_up)
            if self.fingerprint() == before:
                return
            if time.monotonic() > give_up:
                raise AssertionError(f"the table did not settle: {self.describe()}")

    def _flush_link(self, give_up: float) -> None:
        """Until the reader has taken what the shoe sent and the shoe what was written."""
        core, driver = self.core, self.driver
        assert core is not None and driver is not None
        if self.cable:
            # A reconnection is at most one short pause away: wait for it.
            self._wait_core(lambda: core.state not in (LinkState.DOWN, LinkState.IDLE), give_up)
        with self.truth.runner.locked() as shoe:
            stalled = shoe.stalled
        connected = self.cable and core.state is LinkState.CONNECTED and not stalled
        # Commands go out one at a time: the Ping's answer comes after every byte the shoe
        # sent before it and after every command given before it. A Ping still waiting
        # means a command before it waits for a retransmission, which only the clock
        # brings (it or its answer was lost): another would wait behind it.
        ping = self._ping
        self._heard = False
        if connected and (ping is None or ping.done):
            self._ping = ping = driver.send_command(Ping())
            outcome = ping.wait(PING_WAIT)
            self._heard = isinstance(outcome, link_events.CommandCompleted)
            if outcome is not None:
                return
        # Else, or when the Ping waits: look at the reader's cycles instead.
        if core.state in (LinkState.DOWN, LinkState.IDLE):
            return
        now = self.manual()
        with core.watch:
            target = core.idle_cycles + 2

        def caught_up() -> bool:
            down = core.state in (LinkState.DOWN, LinkState.IDLE)
            return down or (core.idle_cycles >= target and core.ticked_at >= now)

        self._wait_core(caught_up, give_up)

    def _wait_core(self, predicate: Callable[[], bool], give_up: float) -> None:
        core = self.core
        assert core is not None
        with core.watch:
            if not core.watch.wait_for(predicate, max(give_up - time.monotonic(), 0.0)):
                raise AssertionError(f"the link reader did not get there: {self.describe()}")

    def _controller_barrier(self, give_up: float) -> None:
        """Everything queued to the controller before this is handled, journaled and acted
        on. The barrier is the one link event the controller publishes without journaling
        anything (a transient "reconnecting" status), sent the way the link sends events."""
        send = self._to_controller
        assert send is not None
        self._barriers += 1
        token = f"{BARRIER} {self._barriers}"
        seen = len(self.log.events)
        send(link_events.Reconnecting(0, 0.0, token))

        def passed() -> bool:
            return any(
                isinstance(e, ev.LinkStatusEvent) and token in e.message
                for e in self.log.events[seen:]
            )

        with self.log.cond:
            done = self.log.cond.wait_for(
                lambda: passed() or self.controller.wait(0),
                max(give_up - time.monotonic(), 0.0),
            )
        failure = self.controller.failure
        if failure is not None:
            raise AssertionError(f"the controller failed: {failure}")
        if not done:
            raise AssertionError(f"the controller did not take a barrier: {self.describe()}")

    def public_events(self) -> list[ev.ServiceEvent]:
        """What the controllers published, but the link's transient status."""
        with self.log.cond:
            return [
                e
                for e in self.log.events
                if not (isinstance(e, ev.LinkStatusEvent) and e.status == "reconnecting")
            ]

    def fingerprint(self) -> tuple[object, ...]:
        core, driver = self.core, self.driver
        assert core is not None and driver is not None
        with self.truth.runner.locked() as shoe:
            state = (
                self.at_table,
                self.cable,
                shoe.last_event_seq,
                shoe.acknowledged,
                len(shoe.unacked),
                shoe.gate,
                shoe.gate_limit_left,
                shoe.draw_index,
                shoe.cards_left,
                shoe.boot_id,
                shoe.stalled,
                shoe.display,
            )
        stats = driver.stats
        link = (
            core.state,
            stats.handshakes,
            stats.links_lost,
            stats.shoe_restarts,
            stats.events_delivered,
            stats.acks_sent,
        )
        return (*state, *link, self.controller.phase, len(self.public_events()))

    def describe(self) -> str:
        core = self.core
        with self.truth.runner.locked() as shoe:
            gate = f"{shoe.gate.name} (+{shoe.gate_limit_left})"
            unacked = shoe.unacked[:5]
            stalled = shoe.stalled
        return (
            f"phase {self.controller.phase}, shoe {self.at_table} "
            f"({'cable in' if self.cable else 'cable out'}, gate {gate}, unacked {unacked}, "
            f"stalled {stalled}), link {core.state if core else None}, "
            f"clock {self.manual():.2f}"
        )

    # --- the croupier's count ------------------------------------------------------------

    def stub_in_hand(self) -> int:
        """The cards of the deck that the deal did not take: what the croupier counts by
        hand (D1, D2)."""
        truth = self.truth
        with truth.runner.locked() as shoe:
            dealt = [d for d in shoe.draws if d.gate_mode is GateMode.DEAL]
            deck = dealt[-1].deck if dealt else shoe.deck_number
            size = truth.deck_sizes.get(deck, 53)
            return size - sum(1 for d in dealt if d.deck == deck)


PHASES_DEALING = frozenset({Phase.DEALING, Phase.STUB_COUNT})
