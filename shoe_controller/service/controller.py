"""The table controller: one event-loop thread that owns the procedure, the link and the
journal, and is a thin table from inputs to procedure calls.

Shoe events (from the link's reader thread) and people's inputs (from any thread) go into
one queue. The loop takes what is waiting as a batch and, inside one journal transaction,
turns each item into a call of the procedure and journals the item and every decision.
Only after the commit does it acknowledge the shoe's events, set the gate, answer the
caller and publish the public projection of the records it committed (rule E3: journal
first, then acknowledge). Every rule (stopping, restarting, resuming, the link's grace, the
gate's window) is the procedure's: time is passed to it, and the loop wakes when the
procedure asks to be told the time (:meth:`Procedure.next_deadline`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from firmware_protocol import (
    Button,
    ButtonPressed,
    CardDrawn,
    DeckLoaded,
    DeckRemoved,
    DoorClosed,
    DoorOpened,
    DoubleCard,
    Fault,
    GateMode,
    Jam,
    JamCleared,
    Message,
    SetDisplay,
    SetGate,
    ShoeEmpty,
)
from shoe_controller.errors import JournalError, ProcedureError, ShoeControllerError
from shoe_controller.hal.addresses import check_shoe_address
from shoe_controller.journal.records import Kind, Record
from shoe_controller.journal.stub_commitment import StubCommitter, stub_committer
from shoe_controller.journal.writer import Journal
from shoe_controller.link import events as link_events
from shoe_controller.link.driver import LinkDriver
from shoe_controller.link.identity import ShoeIdentity
from shoe_controller.link.sequence import ResumePoint
from shoe_controller.procedure import decisions as d
from shoe_controller.procedure import refusals
from shoe_controller.procedure.authority import Person, Role
from shoe_controller.procedure.declarations import declaration
from shoe_controller.procedure.machine import Phase
from shoe_controller.procedure.procedure import LINK_GRACE, Procedure
from shoe_controller.procedure.start import RandomSource
from shoe_controller.procedure.table import TableRules
from shoe_controller.profiles.evidence import RngSignature, StubRecord
from shoe_controller.service import events as ev
from shoe_controller.service.clockwatch import ClockWatcher
from shoe_controller.service.config import Config
from shoe_controller.service.external_rng import ExternalRng, SignedNumber
from shoe_controller.service.journaling import (
    carry_from,
    decision_records,
    identity_record,
    resume_points,
    shoe_event_record,
)
from shoe_controller.service.manifest import manifest_sha256, software_manifest
from shoe_controller.service.provenance import ClockState, clock_state, service_started
from shoe_controller.service.public import public_event
from shoe_controller.service.public_state import PublicState
from shoe_controller.service.table_console import TableConsole

log = logging.getLogger(__name__)

#: Most queue items handled in one journal transaction.
MAX_BATCH = 256
#: Longest the journal's checkpoint lags its commits while events keep coming (seconds).
CHECKPOINT_INTERVAL = 0.25
#: The checkpoint is stored once the loop has waited this long for the next event.
CHECKPOINT_IDLE = 0.02
#: Journaled as who decided what no person's input did (the shoe's events, the link).
CONTROLLER = "controller"
#: The role of a test bench's automatic croupier: it gives inputs on a bench only (E4).
BENCH = "bench"
#: How often the system clock's synchronisation is read (seconds, E3).
CLOCK_CHECK_INTERVAL = 60.0
#: The refusal of an input given for a prompt that is no longer the table's.
MOVED_ON = "the table has moved on since that prompt: look at it again"


class TableMovedOn(ProcedureError):
    """An input answered a prompt that was no longer the table's when the controller took
    it: refused whole, whatever the table's prompt is now (its giver never saw that one)."""


@dataclass(frozen=True)
class Actor:
    """Who gives an input: a signed-in person (``role`` dealer or supervisor; a technician
    or a viewer gives none), or on a test bench its automatic croupier (role ``bench``)."""

    user: str
    role: str


class LinkLike(Protocol):
    """What the controller needs of the link driver (a test may give its own)."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def acknowledge(self, seq: int, then: Sequence[Message] = ()) -> Any: ...
    def send_command(self, message: Message) -> Any: ...


#: (model, serial number, the shoe's own event number) of a shoe's last event journaled.
ResumeAt = tuple[str, str, int]
#: The link for an address, given where the journal left off with every shoe it holds
#: events of (none for a new journal).
LinkFactory = Callable[
    [str, Config, Callable[[link_events.LinkEvent], None], Sequence[ResumeAt]], LinkLike
]


def _default_link(
    address: str,
    config: Config,
    on_event: Callable[[link_events.LinkEvent], None],
    resume: Sequence[ResumeAt],
) -> LinkLike:
    return LinkDriver(
        address, config.approved, on_event, resume=[ResumePoint(*point) for point in resume]
    )


@dataclass(frozen=True)
class _Input:
    name: str
    args: dict[str, Any]
    run: Callable[[Person], list[d.Decision]]
    future: Future[None]
    actor: Actor | None
    #: The prompt its giver answered (its record's number), or None: whatever is current.
    prompt: int | None = None


@dataclass(frozen=True)
class _Access:
    payload: dict[str, Any]
    future: Future[None]


@dataclass(frozen=True)
class _Stop:
    reason: str
    #: False for what a crash leaves: no stop of the procedure, nothing sent to the shoe
    #: (the test harness's stand-in for a process that dies).
    requested: bool = True


_Item = link_events.LinkEvent | _Input | _Access | _Stop
Subscriber = Callable[[ev.ServiceEvent], None]


@dataclass
class _Batch:
    """What one journal transaction produced, acted on once it is committed."""

    records: list[Record] = field(default_factory=list)
    transient: list[ev.ServiceEvent] = field(default_factory=list)
    ack_seq: int = 0
    set_gate: bool = False
    #: Each input's future, with the refusal to raise, or None when it was accepted.
    answers: list[tuple[Future[None], ProcedureError | None]] = field(default_factory=list)


class TableController:
    """The table-side service. Thread-safe input methods return a Future that completes
    once the input is journaled (or fails with the ProcedureError saying why it was
    refused; the refusal is journaled too). Subscribers are called on the loop thread and
    must not block."""

    def __init__(
        self,
        config: Config,
        *,
        journal_path: os.PathLike[str] | str,
        device: str | None = None,
        rng: RandomSource | None = None,
        link_factory: LinkFactory = _default_link,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        link_grace: float = LINK_GRACE,
        bench: bool = False,
        clock_sync: Callable[[], ClockState] = clock_state,
        system_files: Sequence[Path] = (),
    ) -> None:
        self.config = config
        self.device = device or config.device
        #: A test bench, not a table (journaled in service_started); the in-process
        #: simulator deals only on one.
        self.bench = bench or self.device.strip().lower().startswith("sim:")
        self._clock_watch = ClockWatcher(clock, monotonic)
        self.journal_path = journal_path
        #: The installed files the software manifest records (the udev rules, the unit).
        self._system_files = tuple(system_files)
        self._rng = rng
        self._link_factory = link_factory
        self._clock = clock
        self._monotonic = monotonic
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._subscribers: list[Subscriber] = []
        self._sub_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._procedure = Procedure(
            config.table, round_ids=self._new_round_id, link_grace=link_grace
        )
        self._journal: Journal | None = None
        #: Commits the stub's cards instead of journaling them, where the profile says so.
        self._stub: StubCommitter | None = None
        #: Checks an external generator's numbers (its signature, its counter).
        self._external_rng = ExternalRng(None, required=False)
        self._link: LinkLike | None = None
        #: The shoe now connected, as it introduced itself.
        self._shoe: ShoeIdentity | None = None
        #: The dealer signed in at the table's console: the shoe's buttons act for them (E4).
        self._console = TableConsole()
        #: What the shoe's display was last told (None: to be told again).
        self._display: str | None = None
        self._clock_sync = clock_sync
        #: When the clock's synchronisation was last read (monotonic seconds).
        self._clock_read_at = -CLOCK_CHECK_INTERVAL
        self._batch = _Batch()
        #: The number of the prompt record the table stands at: what an input's ``prompt``
        #: must name (None: no prompt since the last change of state).
        self._prompt_id: int | None = None
        self._public_state = PublicState(config.table.positions)
        self._checkpoint_at = monotonic()
        self._stopped = threading.Event()
        #: Why the loop stopped: None for a requested stop, else the fatal error.
        self.failure: ShoeControllerError | None = None

    # --- life cycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Open the journal, take over what it says the table was doing (F3, F4), connect
        the shoe and start the loop. Errors a person can fix raise here, before anything
        runs. The journal is opened on the loop thread, which alone uses it from then on."""
        if self._link_factory is _default_link:
            # A mistake in the address is refused now, not retried for ever by the link.
            check_shoe_address(self.device)
        ready: Future[None] = Future()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="table-controller", daemon=True
        )
        self._thread.start()
        try:
            ready.result()
        except BaseException:
            self._thread.join()
            self._thread = None
            raise

    def stop(self, reason: str = "stopped") -> None:
        """Stop as the operator asks (F4): the round in progress ends as the procedure
        says, the gate is locked, the link and the loop stop, the journal is closed.
        Idempotent."""
        if self._thread is None:
            return
        self._queue.put(_Stop(reason))
        self._thread.join()
        self._thread = None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the loop stopped (by stop() or a fatal error)."""
        return self._stopped.wait(timeout)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` with every public event, on the loop thread; returns a
        function that unsubscribes it."""
        with self._sub_lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._sub_lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def snapshot(self) -> dict[str, Any]:
        """The table's public state, folded from the published events (what a console shows
        after it connects): never a card identity the events did not carry (E1)."""
        return self._public_state.as_json()

    @property
    def phase(self) -> Phase:
        """The procedure's phase now (read from any thread; it may change at once)."""
        return self._procedure.phase

    @property
    def rules(self) -> TableRules:
        """The table's rules: positions, cards, the stub (from the rules profile)."""
        return self.config.table

    # --- people's inputs -----------------------------------------------------------------

    # Every input names the signed-in person who gives it (``actor``); the procedure
    # refuses what their role may not give (E4). On a bench alone, an automatic croupier
    # (role "bench") gives inputs as a supervisor would.
    #
    # ``prompt`` is the prompt the input answers, as its giver saw it (the ``id`` of its
    # PromptEvent). The loop takes inputs in order with the shoe's events and everyone
    # else's inputs; an input whose prompt is no longer the table's by then is refused
    # with TableMovedOn and journaled, never applied to a prompt its giver did not see.
    # Without ``prompt``, the input answers whatever the table asks when it is taken.

    def give(
        self,
        name: str,
        values: Mapping[str, Any] | None = None,
        *,
        actor: Actor | None = None,
        prompt: int | None = None,
    ) -> Future[None]:
        """The input ``name`` (declared in :mod:`~shoe_controller.procedure.declarations`)
        with its ``values``, by name: journaled with its giver, then applied. The API gives
        inputs this way; the methods below are its spelling for Python callers."""
        try:
            decl = declaration(name)
            given = dict(values or {})
            for key, param in ((p.name, p) for p in decl.params):
                given.setdefault(key, param.default)
            early = decl.refuse_early(given) if decl.refuse_early is not None else None
        except ProcedureError as exc:
            early = exc
        if early is not None:
            refused: Future[None] = Future()
            refused.set_exception(early)
            return refused
        return self._input(
            decl.journal_name,
            decl.args(given),
            lambda by: decl.call(self, given, by),
            actor,
            prompt,
        )

    def set_wagers(
        self, positions: Iterable[int], *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        """The positions holding a wager, entered while bets are open (A3)."""
        values = {"positions": sorted(set(positions))}
        return self.give("set_wagers", values, actor=actor, prompt=prompt)

    def no_more_bets(
        self,
        wagered: Iterable[int] | None = None,
        *,
        actor: Actor | None = None,
        prompt: int | None = None,
    ) -> Future[None]:
        """No more bets: with ``wagered``, those positions; without, the wagers entered
        with :meth:`set_wagers` (refused when none were entered) (A3)."""
        values = {"wagered": None if wagered is None else sorted(set(wagered))}
        return self.give("no_more_bets", values, actor=actor, prompt=prompt)

    def confirm_shuffle(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        """The deck in the shoe was shuffled and cut (Section 10.4): the round opens (A2)."""
        return self.give("confirm_shuffle", actor=actor, prompt=prompt)

    def start_by_dice(
        self, d1: int, d2: int, d3: int, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        """The starting position from three dice, journaled with who typed them (B1)."""
        return self.give("start_by_dice", {"dice": [d1, d2, d3]}, actor=actor, prompt=prompt)

    def start_by_rng(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        """The starting position from the controller's own generator (B1)."""
        return self.give("start_by_rng", actor=actor, prompt=prompt)

    def start_by_external_rng(
        self,
        number: int,
        *,
        signed: SignedNumber | None = None,
        actor: Actor | None = None,
        prompt: int | None = None,
    ) -> Future[None]:
        """The starting position from an approved external generator's number, journaled
        with who typed it, with the value it signed when it signs them (B1)."""
        values: dict[str, Any] = {"number": number}
        if signed is not None:
            values |= {"counter": signed.counter, "signature": signed.signature.hex()}
        return self.give("start_by_external_rng", values, actor=actor, prompt=prompt)

    def wager_settled(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        """The dice wager is settled; the deal may begin (B2)."""
        return self.give("wager_settled", actor=actor, prompt=prompt)

    def stub_counted(
        self, count: int, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        """The croupier's count of the stub, once the shoe has finished it (D1)."""
        return self.give("stub_counted", {"count": count}, actor=actor, prompt=prompt)

    def accept_stub_count(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        """A supervisor accepts the croupier's count that the figures disagree with (D1)."""
        return self.give("accept_stub_count", actor=actor, prompt=prompt)

    def misdeal_determination(
        self, misdealt: bool, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        """The croupier's determination for a stub that is not 4; one against a conclusive
        record is a supervisor's (D2)."""
        values = {"misdealt": misdealt}
        return self.give("misdeal_determination", values, actor=actor, prompt=prompt)

    def confirm_new_deck(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        """A supervisor determines that the deck now in the shoe is a different deck,
        shuffled and cut (D2)."""
        return self.give("confirm_new_deck", actor=actor, prompt=prompt)

    def clear_fault(
        self,
        attendant: str | None = None,
        *,
        actor: Actor | None = None,
        void_round: bool = False,
        prompt: int | None = None,
    ) -> Future[None]:
        """A supervisor clears the fault (F1); while the shoe is away with cards at stake,
        only choosing to void the round (F2). ``attendant`` names a supervisor on a bench,
        whose automatic croupier clears."""
        who = actor or (Actor(attendant, BENCH) if attendant else None)
        values = {"void_round": bool(void_round)}
        return self.give("clear_fault", values, actor=who, prompt=prompt)

    def void_round(
        self, reason: str, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        """A supervisor ends the round void, with a reason (F6). A reason over the most a
        person's text may be is refused here, before the journal: no record keeps a flood."""
        return self.give("void_round", {"reason": reason}, actor=actor, prompt=prompt)

    def close_round(self, *, actor: Actor | None = None, prompt: int | None = None) -> Future[None]:
        """Settlement is done: publish the round record (E2)."""
        return self.give("close_round", actor=actor, prompt=prompt)

    # --- what an input's call acts on (declarations.InputTarget) -------------------------

    @property
    def procedure(self) -> Procedure:
        """The procedure an input's call acts on: only from the controller's own thread,
        as it takes the input."""
        return self._procedure

    @property
    def rng(self) -> RandomSource | None:
        """The controller's own generator for a start by RNG (None: the system's) (B1)."""
        return self._rng

    def start_external(
        self, number: int, counter: int | None, signature: str | None, by: Person
    ) -> list[d.Decision]:
        """A start from an external generator's number: its signed value, when given, is
        checked and journaled before the start is set (B1)."""
        signed = None
        if counter is not None and signature is not None:
            signed = SignedNumber(number, counter, bytes.fromhex(signature))
        record = self._external_rng.check(number, signed)  # a bad or replayed value: refused
        decisions = self._procedure.start_by_external_rng(number, by=by)
        self._append(Kind.EXTERNAL_RNG, record, self._procedure.round_id)
        self._external_rng.accepted(record)
        return decisions

    def record_access(
        self,
        action: str,
        *,
        user: str,
        role: str | None,
        accepted: bool,
        detail: str = "",
        session: str | None = None,
    ) -> Future[None]:
        """Journal a sign-in, a sign-out, a lockout or a refusal by role; with ``session``
        (its id), what became of that session. The shoe's buttons follow these records
        (E4): ``at_console`` (a dealer's session became the table's console's),
        ``left_console`` and ``session_ended`` (that session is no longer there)."""
        future: Future[None] = Future()
        payload: dict[str, Any] = {
            "action": action,
            "user": user,
            "role": role,
            "accepted": accepted,
            "detail": detail,
        }
        if session is not None:
            payload["session"] = session
        if self._stopped.is_set():
            future.set_exception(refusals.controller_stopped().error())
        else:
            self._queue.put(_Access(payload, future))
        return future

    def _input(
        self,
        name: str,
        args: dict[str, Any],
        run: Callable[[Person], list[d.Decision]],
        actor: Actor | None,
        prompt: int | None = None,
    ) -> Future[None]:
        future: Future[None] = Future()
        if self._stopped.is_set():
            future.set_exception(refusals.controller_stopped().error())
            return future
        self._queue.put(_Input(name, args, run, future, actor, prompt))
        return future

    def _person(self, actor: Actor | None) -> Person:
        """The person an input names, as the procedure knows people (E4): a signed-in
        dealer or supervisor, or on a bench its automatic croupier."""
        if actor is None:
            raise ProcedureError(
                "an input needs the signed-in person who gives it: sign in at the console or "
                "the terminal (E4)"
            )
        if actor.role == BENCH:
            if not self.bench:
                raise ProcedureError(
                    f"{actor.user} is an automatic croupier, which gives inputs on a test bench "
                    "only: a signed-in person gives them at a table (E4)"
                )
            return Person(actor.user, Role.SUPERVISOR)
        try:
            role = Role(actor.role)
        except ValueError:
            raise ProcedureError(
                f"{actor.user} is signed in as a {actor.role}, who gives no input at the table: "
                "a dealer or a supervisor must (E4)"
            ) from None
        return Person(actor.user, role)

    # --- the loop ------------------------------------------------------------------------

    def _run(self, ready: Future[None]) -> None:
        try:
            self._open()
        except BaseException as exc:
            if self._journal is not None:
                self._journal.close()
            self._stopped.set()
            ready.set_exception(exc)
            return
        ready.set_result(None)
        try:
            self._loop()
        except ShoeControllerError as exc:
            log.error("table controller stopped: %s", exc)
            self.failure = exc
            self._shutdown(str(exc))
        except Exception as exc:
            log.exception("table controller failed")
            self.failure = ShoeControllerError(f"internal error: {type(exc).__name__}: {exc}")
            self._shutdown("internal error")

    def _open(self) -> None:
        journal = Journal.open(self.journal_path, self.config.journal_key)
        self._journal = journal
        self._stub = stub_committer(
            self.config.evidence.stub is StubRecord.COMMITMENT,
            journal.key_path,
            self.config.table.deal_size,
        )
        self._external_rng = ExternalRng.at_start(
            self.config.external_rng,
            required=self.config.evidence.external_rng_signature is RngSignature.REQUIRED,
            journaled=(r.payload_object() for r in journal.records_of(Kind.EXTERNAL_RNG)),
        )
        journal.defer_checkpoints()
        # Before the link, and before the API lets any client in: what the card path needs
        # to store the checkpoint is open, whatever descriptors clients take later.
        journal.reserve_checkpoint()
        carry = carry_from(journal, self._clock())
        resume = resume_points(journal)
        manifest = software_manifest(self._system_files)
        started = service_started(
            self.config,
            bench=self.bench,
            manifest_sha256=manifest_sha256(manifest),
        )
        with self._transaction():
            self._append(Kind.SERVICE_STARTED, started)
            self._append(Kind.SOFTWARE_MANIFEST, manifest)
            self._decided(self._procedure.recover(carry), CONTROLLER)
            self._check_clock()
        self._act()
        self._link = self._link_factory(self.device, self.config, self._queue.put, resume)
        self._link.start()

    def _loop(self) -> None:
        while True:
            batch, stop = self._split_at_stop(self._next_batch())
            if stop is not None and not stop.requested:
                self._shutdown(stop.reason, lock=False)
                return
            with self._transaction():
                for item in batch:
                    self._handle(item)
                self._decided(
                    self._procedure.tick(self._monotonic(), wall=self._clock()), CONTROLLER
                )
                self._check_clock()
                if stop is not None:
                    self._decided(self._procedure.stop(), CONTROLLER)
                    self._append(Kind.SERVICE_STOPPED, {"reason": stop.reason})
            self._act()
            if stop is not None:
                self._shutdown(stop.reason)
                return
            self._store_checkpoint(idle=False)

    def _split_at_stop(self, batch: list[_Item]) -> tuple[list[_Item], _Stop | None]:
        """The items before a stop, and the stop; what came after it goes back to the
        queue, to be refused by the shutdown unjournaled."""
        for index, item in enumerate(batch):
            if isinstance(item, _Stop):
                for later in batch[index + 1 :]:
                    self._queue.put(later)
                return batch[:index], item
        return batch, None

    def _check_clock(self) -> None:
        """Read whether the system clock is synchronised, at start and every
        CLOCK_CHECK_INTERVAL: not synchronised, or lost, is a notice (E3)."""
        now = self._monotonic()
        if now - self._clock_read_at < CLOCK_CHECK_INTERVAL:
            return
        self._clock_read_at = now
        state = self._clock_sync()
        self._decided(self._procedure.clock(state.synchronized, state.source), CONTROLLER)

    def _store_checkpoint(self, *, idle: bool) -> None:
        """Bring the journal's checkpoint up to date once the loop is idle, or at least
        every CHECKPOINT_INTERVAL while events stream (see Journal.defer_checkpoints):
        its disk flushes then never stand between a card and its acknowledgement."""
        journal = self._journal
        assert journal is not None
        now = self._monotonic()
        if journal.checkpoint_due and (idle or now - self._checkpoint_at >= CHECKPOINT_INTERVAL):
            journal.store_checkpoint_later()
            self._checkpoint_at = now

    def _next_batch(self) -> list[_Item]:
        """What is waiting, or nothing once the procedure's deadline has come."""
        journal = self._journal
        assert journal is not None
        now = self._monotonic()
        deadline = self._procedure.next_deadline()
        clock_due = self._clock_read_at + CLOCK_CHECK_INTERVAL
        deadline = clock_due if deadline is None else min(deadline, clock_due)
        timeout = max(deadline - now, 0.0)
        if journal.checkpoint_due:
            timeout = CHECKPOINT_IDLE if timeout is None else min(timeout, CHECKPOINT_IDLE)
        try:
            batch = [self._queue.get(timeout=timeout)]
        except queue.Empty:
            self._store_checkpoint(idle=True)
            return []
        step = self._clock_watch.check()
        if step is not None:
            with self._transaction():
                self._append(Kind.CLOCK_STEP, step.payload())
        while len(batch) < MAX_BATCH:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return batch

    @contextlib.contextmanager
    def _transaction(self) -> Any:
        journal = self._journal
        assert journal is not None
        try:
            with journal.transaction():
                yield
        except JournalError:
            # Nothing of the batch was recorded, so nothing of it happened.
            lost = refusals.not_recorded().error()
            for future, _refusal in self._batch.answers:
                future.set_exception(lost)
            self._batch = _Batch()
            raise

    def _handle(self, item: _Item) -> None:
        if isinstance(item, _Input):
            self._handle_input(item)
        elif isinstance(item, _Access):
            self._append(Kind.ACCESS, item.payload)
            self._console.follow(item.payload)
            self._batch.answers.append((item.future, None))
        elif isinstance(item, _Stop):
            return
        else:
            handler = _LINK_HANDLERS.get(type(item))
            if handler is not None:
                handler(self, item)

    def _press(self, message: ButtonPressed) -> list[d.Decision]:
        """A button on the shoe: for the dealer signed in at the table's console, with a
        dealer's authority; journaled as their input, or refused when no dealer is signed
        in there (E4). "Call attendant" only calls (its event is published)."""
        name = _BUTTON_INPUTS.get(message.button)
        if name is None:
            return []
        p = self._procedure
        dealer = self._console.dealer
        record: dict[str, Any] = {
            "by": dealer,
            "role": Role.DEALER.value if dealer is not None else None,
            "name": name,
            "channel": "shoe",
        }
        try:
            if dealer is None:
                raise ProcedureError(
                    "no dealer is signed in at the table's console: the shoe's buttons act "
                    "for the dealer signed in there; sign in there, then press again (E4)"
                )
            person = Person(dealer, Role.DEALER)
            if message.button is Button.NO_MORE_BETS:
                decisions = p.no_more_bets_button(by=person)
            else:
                decisions = p.confirm_button(by=person)
        except ProcedureError as exc:
            self._append(Kind.INPUT, {**record, "accepted": False, "refused": str(exc)}, p.round_id)
            return []
        self._append(Kind.INPUT, {**record, "accepted": True}, p.round_id)
        self._decided(decisions, dealer)
        return []

    def _handle_input(self, item: _Input) -> None:
        p = self._procedure
        before = p.round_id
        actor = item.actor
        record = {
            "by": actor.user if actor is not None else None,
            "role": actor.role if actor is not None else None,
            "name": item.name,
            **item.args,
        }
        if item.prompt is not None:
            record["prompt"] = item.prompt
        try:
            person = self._person(actor)
            if item.prompt is not None and item.prompt != self._prompt_id:
                raise TableMovedOn(MOVED_ON)
            decisions = item.run(person)
        except ProcedureError as exc:
            self._append(Kind.INPUT, {**record, "accepted": False, "refused": str(exc)}, p.round_id)
            self._batch.answers.append((item.future, exc))
            return
        assert actor is not None
        self._append(Kind.INPUT, {**record, "accepted": True}, p.round_id or before)
        self._decided(decisions, actor.user)
        self._batch.answers.append((item.future, None))

    # --- the link's events ---------------------------------------------------------------

    def _on_connected(self, event: link_events.Connected) -> None:
        verdict = event.verdict
        approved = bool(verdict and verdict.approved)
        reason = verdict.reason if verdict else "no verdict"
        ident = event.identity
        self._shoe = ident
        self._display = None  # a shoe that (re)connects is told its display again
        self._append(
            Kind.SHOE_CONNECTED,
            {
                "identity": identity_record(ident),
                "approved": approved,
                "reason": reason,
                "device": self.device,
            },
        )
        shoe = (ident.model, ident.serial_number)
        self._decided(
            self._procedure.shoe_connected(shoe, approved=approved, reason=reason), CONTROLLER
        )
        # Whatever the shoe's gate is now (a previous run opened it, a restart locked it, a
        # command died with the link), set it as the procedure has it: the limit is a draw
        # index, so this never lets out more cards than the procedure allows.
        self._batch.set_gate = True

    def _on_shoe_event(self, event: link_events.ShoeEvent) -> None:
        message = event.message
        shoe_seq = event.shoe_seq
        self._append(
            Kind.SHOE_EVENT,
            shoe_event_record(event.seq, shoe_seq, message, self._shoe),
            self._procedure.round_id,
        )
        self._batch.ack_seq = max(self._batch.ack_seq, event.seq)
        if isinstance(message, ButtonPressed):
            self._press(message)
            return
        step = _SHOE_MESSAGES.get(type(message))
        if step is not None:
            self._decided(step(self._procedure, message), CONTROLLER)

    def _on_link_down(self, event: link_events.LinkDown) -> None:
        self._append(Kind.LINK, {"state": "lost", "detail": str(event)})
        self._decided(self._procedure.link_lost(self._monotonic()), CONTROLLER)

    def _on_events_lost(self, event: link_events.EventsLost) -> None:
        self._append(Kind.LINK, {"state": "events_lost", "detail": str(event)})
        self._decided(self._procedure.events_lost(str(event)), CONTROLLER)

    def _on_approval(self, event: link_events.ApprovalChanged) -> None:
        verdict = event.verdict
        self._append(Kind.LINK, {"state": "approval", "detail": str(verdict)})
        shoe = self._shoe
        if verdict.approved and shoe is not None:
            decisions = self._procedure.shoe_connected(
                (shoe.model, shoe.serial_number), approved=True, reason=verdict.reason
            )
            self._batch.set_gate = True
        else:
            decisions = self._procedure.shoe_unapproved(verdict.reason)
        self._decided(decisions, CONTROLLER)

    def _on_link_error(self, event: link_events.ProtocolMismatch | link_events.DriverError) -> None:
        self._append(Kind.LINK, {"state": "error", "detail": str(event)})

    def _on_reconnecting(self, event: link_events.Reconnecting) -> None:
        self._batch.transient.append(ev.LinkStatusEvent(status="reconnecting", message=str(event)))

    def _on_command_failed(self, event: link_events.CommandFailed) -> None:
        message = event.handle.message
        if not isinstance(message, SetGate) or event.reason in (
            "link_down",
            "shoe_restarted",
            "superseded",
        ):
            # A command lost with the link is not the shoe refusing it: the gate is set
            # again at the next connection. One superseded gave way to a later one.
            return
        wanted = self._procedure.gate_command()
        if (message.mode, message.limit) != (wanted.mode, wanted.limit):
            return  # a later gate command has replaced it
        self._decided(self._procedure.gate_refused(str(event)), CONTROLLER)

    # --- decisions and records -----------------------------------------------------------

    def _append(self, kind: Kind, payload: dict[str, Any], round_id: str | None = None) -> None:
        journal = self._journal
        assert journal is not None
        record = journal.append_record(kind, payload, round_id)
        self._batch.records.append(record)
        # The table's prompt, as its public state folds it: a prompt stands until the next
        # one or a change of state (docs/api.md, "Prompts").
        if kind is Kind.PROMPT:
            self._prompt_id = record.seq
        elif kind is Kind.STATE:
            self._prompt_id = None

    def _decided(self, decisions: list[d.Decision], by: str) -> None:
        """Journal ``decisions`` in this transaction; note what they ask of the shoe."""
        for kind, payload, round_id in decision_records(decisions, self._procedure.round_id, by):
            # Where the profile keeps the stub as commitments, no stub card is journaled (E1).
            kept = payload if self._stub is None else self._stub.commit(kind, payload, round_id)
            self._append(kind, kept, round_id)
        for decision in decisions:
            if isinstance(decision, d.GateCommand):
                self._batch.set_gate = True

    def _act(self) -> None:
        """The transaction is committed: now, and only now, tell anyone (E3)."""
        batch, self._batch = self._batch, _Batch()
        commands: list[Message] = []
        if batch.set_gate:
            command = self._procedure.gate_command()
            commands.append(SetGate(command.mode, command.limit))
        display = self._procedure.display
        if display != self._display:
            # The phase, or what the hands at the shoe must do: never a card, never a hand.
            self._display = display
            commands.append(SetDisplay(display))
        if batch.ack_seq:
            self._acknowledge(batch.ack_seq, commands)
        else:
            for message in commands:
                self._command(message)
        for future, refusal in batch.answers:
            if refusal is None:
                future.set_result(None)
            else:
                future.set_exception(refusal)
        for record in batch.records:
            event = public_event(record)
            if event is not None:
                self._publish(event)
        for event in batch.transient:
            self._publish(event)

    def _acknowledge(self, seq: int, commands: list[Message]) -> None:
        """The acknowledgement and the commands that follow it, in one write: after a
        card, the gate's next limit travels with the card's acknowledgement."""
        if self._link is None:
            return
        try:
            self._link.acknowledge(seq, commands)
        except ShoeControllerError as exc:
            log.warning("command not sent: %s", exc)

    def _command(self, message: Message) -> None:
        if self._link is None:
            return
        try:
            self._link.send_command(message)
        except ShoeControllerError as exc:
            # The link refuses to open the gate of a shoe that is not armed; the procedure
            # learns of the shoe's state from the link's own events.
            log.warning("command %s not sent: %s", type(message).__name__, exc)

    def _new_round_id(self) -> str:
        journal = self._journal
        assert journal is not None
        stamp = datetime.fromtimestamp(self._clock(), UTC).strftime("%Y%m%dT%H%M%SZ")
        return f"{stamp}-{journal.pending_seq + 1}"

    # --- publishing ----------------------------------------------------------------------

    def _publish(self, event: ev.ServiceEvent) -> None:
        self._public_state.apply(event)
        with self._sub_lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(event)
            except Exception:
                log.exception("subscriber %r failed on %s", callback, event.NAME)

    def _shutdown(self, reason: str, *, lock: bool = True) -> None:
        link, self._link = self._link, None
        if link is not None:
            if lock:
                with contextlib.suppress(ShoeControllerError):
                    link.send_command(SetGate(GateMode.LOCKED))
            link.stop()
        # Whatever is still queued was never journaled: refuse it, never drop it silently.
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _Input | _Access):
                item.future.set_exception(refusals.stopped_before_journaled().error())
        if self._journal is not None:
            self._journal.close()
        self._stopped.set()
        if self.failure is not None:
            self._publish(ev.StoppedEvent(reason=reason, round=self._procedure.round_id))


#: The inputs the shoe's buttons give (``call_attendant`` gives none: it calls).
_BUTTON_INPUTS = {Button.NO_MORE_BETS: "button_no_more_bets", Button.CONFIRM: "button_confirm"}


_SHOE_MESSAGES: dict[type[Message], Callable[[Procedure, Any], list[d.Decision]]] = {
    CardDrawn: lambda p, m: p.card_drawn(
        m.draw_index, None if m.card.is_unreadable else m.card, m.gate_mode
    ),
    DeckLoaded: lambda p, m: p.deck_loaded(),
    DeckRemoved: lambda p, m: p.deck_removed(),
    DoubleCard: lambda p, m: p.double_card(m.draw_index),
    Jam: lambda p, m: p.jam(),
    JamCleared: lambda p, m: p.jam_cleared(m.card_left),
    DoorOpened: lambda p, m: p.door_opened(),
    DoorClosed: lambda p, m: p.door_closed(),
    ShoeEmpty: lambda p, m: p.shoe_empty(m.drawn),
    Fault: lambda p, m: p.shoe_fault(m.code, m.text),
}

_LINK_HANDLERS: dict[type[Any], Callable[[TableController, Any], None]] = {
    link_events.Connected: TableController._on_connected,
    link_events.ShoeEvent: TableController._on_shoe_event,
    link_events.LinkDown: TableController._on_link_down,
    link_events.EventsLost: TableController._on_events_lost,
    link_events.ApprovalChanged: TableController._on_approval,
    link_events.ProtocolMismatch: TableController._on_link_error,
    link_events.DriverError: TableController._on_link_error,
    link_events.Reconnecting: TableController._on_reconnecting,
    link_events.CommandFailed: TableController._on_command_failed,
}
