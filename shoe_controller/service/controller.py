"""The table controller: one event-loop thread that owns the procedure, the link and the
journal.

Shoe events (from the link's reader thread) and croupier inputs (from any thread) go into
one queue. The loop takes what is waiting as a batch and, inside one journal transaction,
steps the procedure and journals every input, decision and card. Only after the commit does
it acknowledge the shoe's events, command the gate, answer the caller and publish events
to subscribers (rule E3: journal first, then acknowledge). Subscribers never see a card
identity while a round is open, nor ever the stub's or an unwagered hand's (E1, E2).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from firmware_protocol import (
    Button,
    ButtonPressed,
    Card,
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
from shoe_controller.journal.records import Kind
from shoe_controller.journal.writer import Journal
from shoe_controller.link import events as link_events
from shoe_controller.link.driver import LinkDriver
from shoe_controller.procedure import decisions as d
from shoe_controller.procedure.machine import Phase
from shoe_controller.procedure.procedure import Procedure
from shoe_controller.procedure.start import RandomSource, StartMethod
from shoe_controller.service import events as ev
from shoe_controller.service.clockwatch import ClockWatcher
from shoe_controller.service.config import Config
from shoe_controller.service.journaling import (
    decision_records,
    identity_record,
    plain,
    resume_point,
    shoe_event_record,
)
from shoe_controller.service.provenance import service_started

log = logging.getLogger(__name__)

#: How long the link may be down during a round before the procedure is told (seconds). A
#: shoe that comes back within it sends again what it held and the round goes on as if
#: nothing happened (F2); after it, the lost link is a fault only an attendant clears (F1).
LINK_GRACE = 10.0
RESTART_REASON = (
    "the controller stopped while the round was open; void under Section 10.13 (rule F3)"
)
#: Most queue items handled in one journal transaction.
MAX_BATCH = 256

_PROMPTS: dict[Phase, tuple[str, str]] = {
    Phase.DECK_LOADED: ("no_more_bets", "Bets are open: announce no more bets."),
    Phase.BETS_CLOSED: ("start_position", "Set the starting position: dice or RNG."),
    Phase.START_SET: ("wager_settled", "Settle the dice wagers before the first card."),
    Phase.DEALT: ("close_round", "Hands are in play: close the round after settlement."),
    Phase.FAULT: ("attendant_clear", "Dealing is blocked until an attendant clears the fault."),
}

_BUTTONS = {
    Button.NO_MORE_BETS: "no_more_bets",
    Button.CONFIRM: "confirm",
    Button.CALL_ATTENDANT: "call_attendant",
}


class LinkLike(Protocol):
    """What the controller needs of the link driver (a test may give its own)."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def acknowledge(self, seq: int) -> None: ...
    def send_command(self, message: Message) -> Any: ...


LinkFactory = Callable[[str, Config, Callable[[link_events.LinkEvent], None]], LinkLike]


def _default_link(
    address: str, config: Config, on_event: Callable[[link_events.LinkEvent], None]
) -> LinkLike:
    return LinkDriver(address, config.approved, on_event)


@dataclass(frozen=True)
class _Input:
    name: str
    args: dict[str, Any]
    run: Callable[[], list[d.Decision]]
    future: Future[None]


@dataclass(frozen=True)
class _Stop:
    reason: str


@dataclass(frozen=True)
class _LinkGraceOver:
    """The link, lost during a round, did not come back within the grace period."""

    outage: int


_Item = link_events.LinkEvent | _Input | _Stop | _LinkGraceOver
Subscriber = Callable[[ev.ServiceEvent], None]


class TableController:
    """The table-side service. Thread-safe input methods return a Future that completes
    once the input is journaled (or fails with the ProcedureError saying why it was
    refused). Subscribers are called on the loop thread and must not block."""

    def __init__(
        self,
        config: Config,
        *,
        journal_path: Path,
        device: str | None = None,
        rng: RandomSource | None = None,
        link_factory: LinkFactory = _default_link,
        clock: Callable[[], float] = time.time,
        link_grace: float = LINK_GRACE,
        bench: bool = False,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.device = device or config.device
        #: A test bench, not a table (journaled in service_started); the in-process
        #: simulator deals only on one.
        self.bench = bench or self.device.strip().lower().startswith("sim:")
        self._clock_watch = ClockWatcher(clock, monotonic)
        self.journal_path = journal_path
        self._rng = rng
        self._link_factory = link_factory
        self._clock = clock
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._subscribers: list[Subscriber] = []
        self._sub_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._procedure = Procedure(config.table)
        self._journal: Journal | None = None
        self._link: LinkLike | None = None
        self._link_up = False
        self._link_grace = link_grace
        #: Counts link losses, so that a grace timer of an earlier outage does nothing.
        self._outage = 0
        self._grace_timer: threading.Timer | None = None
        #: True once the procedure was told that the link is lost.
        self._procedure_knows_down = False
        self._held_deck: bool = False
        #: A deck loaded while the previous round's hands were in play.
        self._deck_waiting = False
        #: The shoe now connected, as (serial number, boot id).
        self._shoe: tuple[str, int] | None = None
        #: The last event journaled before this start, as (serial, boot id, event seq): a
        #: shoe sends again what was journaled but not acknowledged when we stopped.
        self._resume: tuple[str, int, int] | None = None
        self._stopped = threading.Event()
        #: Why the loop stopped: None for a requested stop, else the fatal error.
        self.failure: ShoeControllerError | None = None

    # --- life cycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Open the journal, void a round left open by a previous run (F3), connect the
        shoe and start the loop. Errors a person can fix raise here, before anything runs.

        The journal is opened on the loop thread, which alone uses it from then on."""
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

    def _open(self) -> None:
        journal = Journal.open(self.journal_path, self.config.journal_key)
        self._journal = journal
        voided = journal.void_open_rounds(RESTART_REASON)
        self._resume = resume_point(journal)
        journal.append(Kind.SERVICE_STARTED, service_started(self.config, bench=self.bench))
        pending: list[Callable[[], None]] = []
        for rnd in voided:
            decisions = self._procedure.restarted_mid_round(rnd.round_id, RESTART_REASON)
            # The journal already holds the round's end: record the rest, publish all.
            with journal.transaction():
                self._journal_decisions(
                    [x for x in decisions if not isinstance(x, d.RoundEnded)], rnd.round_id
                )
            self._after_commit(decisions, pending)
        for action in pending:
            action()
        self._link = self._link_factory(self.device, self.config, self._queue.put)
        self._link.start()

    def stop(self, reason: str = "stopped") -> None:
        """Lock the gate, stop the link and the loop, close the journal. Idempotent."""
        if self._thread is None:
            return
        self._queue.put(_Stop(reason))
        self._thread.join()
        self._thread = None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the loop stopped (by stop() or a fatal error)."""
        return self._stopped.wait(timeout)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        with self._sub_lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._sub_lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    @property
    def phase(self) -> Phase:
        return self._procedure.phase

    # --- croupier and attendant inputs ---------------------------------------------------

    def no_more_bets(self, wagered: Iterable[int]) -> Future[None]:
        positions = tuple(sorted(set(wagered)))
        return self._input(
            "no_more_bets",
            {"wagered": list(positions)},
            lambda: self._procedure.no_more_bets(positions),
        )

    def start_by_dice(self, d1: int, d2: int, d3: int) -> Future[None]:
        return self._input(
            "start_position",
            {"method": "dice", "dice": [d1, d2, d3]},
            lambda: self._procedure.set_start_dice(d1, d2, d3),
        )

    def start_by_rng(self) -> Future[None]:
        return self._input(
            "start_position", {"method": "rng"}, lambda: self._procedure.draw_start(self._rng)
        )

    def start_by_external_rng(self, number: int) -> Future[None]:
        return self._input(
            "start_position",
            {"method": "rng", "number": number, "source": "external"},
            lambda: self._procedure.set_start_rng(number),
        )

    def wager_settled(self) -> Future[None]:
        return self._input("wager_settled", {}, self._procedure.wager_settled)

    def stub_counted(self, count: int) -> Future[None]:
        return self._input(
            "stub_counted", {"count": count}, lambda: self._procedure.stub_counted(count)
        )

    def misdeal_determination(self, misdealt: bool) -> Future[None]:
        return self._input(
            "misdeal_determination",
            {"misdealt": misdealt},
            lambda: self._procedure.misdeal_determination(misdealt),
        )

    def confirm_new_deck(self) -> Future[None]:
        """The croupier confirms that the deck now in the shoe is a different deck (D2)."""
        return self._input("new_deck", {}, self._load_new_deck)

    def clear_fault(self, attendant: str) -> Future[None]:
        return self._input(
            "attendant_clear",
            {"attendant": attendant},
            lambda: self._procedure.attendant_clear(attendant),
            by="attendant",
        )

    def close_round(self) -> Future[None]:
        return self._input("close_round", {}, self._procedure.close_round)

    def _input(
        self,
        name: str,
        args: dict[str, Any],
        run: Callable[[], list[d.Decision]],
        by: str = "croupier",
    ) -> Future[None]:
        future: Future[None] = Future()
        if self._stopped.is_set():
            future.set_exception(ProcedureError("the table controller is stopped"))
            return future
        self._queue.put(_Input(name, {"by": by, **args}, run, future))
        return future

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
        journal = self._journal
        assert journal is not None
        try:
            while True:
                batch = [self._queue.get()]
                step = self._clock_watch.check()
                if step is not None:
                    journal.append(Kind.CLOCK_STEP, step.payload())
                while len(batch) < MAX_BATCH:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                stop = next((item for item in batch if isinstance(item, _Stop)), None)
                self._handle_batch(journal, [i for i in batch if not isinstance(i, _Stop)])
                if stop is not None:
                    self._shutdown(stop.reason)
                    return
        except ShoeControllerError as exc:
            log.error("table controller stopped: %s", exc)
            self.failure = exc
            self._shutdown(str(exc))
        except Exception as exc:
            log.exception("table controller failed")
            self.failure = ShoeControllerError(f"internal error: {type(exc).__name__}: {exc}")
            self._shutdown("internal error")

    def _handle_batch(self, journal: Journal, batch: list[_Item]) -> None:
        if not batch:
            return
        after: list[Callable[[], None]] = []
        ack_seq = 0
        try:
            with journal.transaction():
                for item in batch:
                    if isinstance(item, _Input):
                        self._handle_input(item, after)
                    elif isinstance(item, link_events.ShoeEvent):
                        self._handle_shoe_event(item, after)
                        ack_seq = max(ack_seq, item.seq)
                    elif not isinstance(item, _Stop):
                        self._handle_link_event(item, after)
        except JournalError:
            for item in batch:
                if isinstance(item, _Input) and not item.future.done():
                    item.future.set_exception(
                        ProcedureError("the input was not recorded: the journal failed")
                    )
            raise
        # Committed: now, and only now, tell anyone (E3).
        if ack_seq and self._link is not None:
            self._link.acknowledge(ack_seq)
        for action in after:
            action()

    def _handle_input(self, item: _Input, after: list[Callable[[], None]]) -> None:
        journal = self._journal
        assert journal is not None
        round_id = self._procedure.round_id
        try:
            decisions = item.run()
        except ProcedureError as exc:
            journal.append(
                Kind.INPUT,
                {**item.args, "name": item.name, "accepted": False, "refused": str(exc)},
                None,
            )
            after.append(partial(item.future.set_exception, exc))
            return
        journal.append(Kind.INPUT, {**item.args, "name": item.name, "accepted": True}, None)
        self._journal_decisions(decisions, self._procedure.round_id or round_id)
        self._after_commit(decisions, after)
        if self._deck_waiting and self._procedure.phase is Phase.CLOSED:
            self._deck_waiting = False
            opened = self._procedure.deck_loaded(self._new_round_id())
            self._journal_decisions(opened, self._procedure.round_id)
            self._after_commit(opened, after)
        after.append(lambda: item.future.set_result(None))

    def _load_new_deck(self) -> list[d.Decision]:
        if not self._held_deck:
            raise ProcedureError("no new deck is waiting: load a different deck into the shoe")
        decisions = self._procedure.deck_loaded(self._new_round_id(), new_deck=True)
        self._held_deck = False
        return decisions

    def _handle_shoe_event(
        self, event: link_events.ShoeEvent, after: list[Callable[[], None]]
    ) -> None:
        journal = self._journal
        assert journal is not None
        p = self._procedure
        message = event.message
        resume = self._resume
        if resume is not None and self._shoe == resume[:2] and event.seq <= resume[2]:
            # Journaled before the restart, never acknowledged: acknowledge it now (the
            # batch's acknowledgement covers it) without journaling or stepping it twice.
            return
        journal.append(
            Kind.SHOE_EVENT, shoe_event_record(event.seq, message, self._shoe), p.round_id
        )
        decisions: list[d.Decision] = []
        if isinstance(message, CardDrawn):
            card: Card | None = None if message.card.is_unreadable else message.card
            decisions = p.card_drawn(message.draw_index, card, message.gate_mode)
        elif isinstance(message, DeckLoaded):
            if p.phase is Phase.DEALT:
                # The next deck went in while this round's hands are still in play: its
                # round opens once the croupier has closed this one.
                self._deck_waiting = True
            elif p.phase is Phase.DECK_REMOVED:
                # Only a different deck leaves this state: the croupier must confirm it.
                self._held_deck = True
                after.append(
                    lambda: self._publish(
                        ev.Prompt(
                            need="new_deck",
                            message="A deck was loaded: confirm it is a different deck (D2).",
                        )
                    )
                )
            else:
                decisions = p.deck_loaded(self._new_round_id())
        elif isinstance(message, DeckRemoved):
            self._held_deck = False
            self._deck_waiting = False
            decisions = p.deck_removed()
        elif isinstance(message, DoubleCard):
            decisions = p.double_card(message.draw_index)
        elif isinstance(message, Jam):
            decisions = p.jam()
        elif isinstance(message, JamCleared):
            decisions = p.jam_cleared(message.card_left)
        elif isinstance(message, DoorOpened):
            decisions = p.door_opened()
        elif isinstance(message, DoorClosed):
            decisions = p.door_closed()
        elif isinstance(message, ShoeEmpty):
            decisions = p.shoe_empty(message.drawn)
        elif isinstance(message, ButtonPressed):
            name = _BUTTONS.get(message.button, str(message.button))
            after.append(lambda: self._publish(ev.ButtonPressed(button=name, round=p.round_id)))
        elif isinstance(message, Fault):
            decisions = p.shoe_fault(message.code, message.text)
        self._journal_decisions(decisions, p.round_id)
        self._after_commit(decisions, after)
        if isinstance(message, JamCleared | DoorClosed) and p.gate is not GateMode.LOCKED:
            # The shoe refuses to open its gate while jammed or open: ask again now.
            after.append(self._regate)
        if isinstance(message, JamCleared | DoorClosed) and p.phase is Phase.FAULT:
            # The shoe's own condition is gone: the attendant may now clear the fault.
            after.append(
                self._publisher(
                    ev.Prompt(
                        need="attendant_clear",
                        message="The shoe reports the condition cleared: an attendant may "
                        "now clear the fault.",
                        round=p.round_id,
                    )
                )
            )

    def _handle_link_event(
        self, event: link_events.LinkEvent | _LinkGraceOver, after: list[Callable[[], None]]
    ) -> None:
        journal = self._journal
        assert journal is not None
        p = self._procedure
        decisions: list[d.Decision] = []
        if isinstance(event, link_events.Connected):
            verdict = event.verdict
            approved = bool(verdict and verdict.approved)
            reason = verdict.reason if verdict else "no verdict"
            ident = event.identity
            other_shoe = self._shoe is not None and self._shoe[0] != ident.serial_number
            self._shoe = (ident.serial_number, ident.boot_id)
            journal.append(
                Kind.SHOE_CONNECTED,
                {"identity": identity_record(ident), "approved": approved, "reason": reason},
                None,
            )
            was_down = self._procedure_knows_down
            self._procedure_knows_down = False
            self._link_up = True
            self._cancel_grace()
            if other_shoe and p.round_open:
                # Another shoe answers at this address: what the first one held is lost.
                journal.append(
                    Kind.LINK,
                    {"state": "events_lost", "detail": f"a different shoe answered: {ident}"},
                    None,
                )
                if not was_down:
                    decisions += p.link_lost()
                decisions += p.link_restored(events_lost=True)
            elif approved and was_down:
                decisions += p.link_restored(events_lost=False)
            if approved:
                decisions += p.shoe_approved()
            else:
                decisions += p.shoe_unapproved(reason)
            # Whatever the shoe's gate is now (a previous run opened it, a restart locked it,
            # a command died with the link), set it as the procedure has it. The limit is
            # a draw index, so this never lets out more cards than the deal's.
            after.append(partial(self._regate))
            if was_down and p.phase is Phase.FAULT:
                after.append(
                    self._publisher(
                        ev.Prompt(
                            need="attendant_clear",
                            message="The shoe is back: an attendant may now clear the fault.",
                            round=p.round_id,
                        )
                    )
                )
            connected = ev.Connected(
                device=self.device,
                model=ident.model,
                serial=ident.serial_number,
                firmware=ident.firmware_version,
                approved=approved,
                reason=reason,
            )
            after.append(lambda: self._publish(connected))
        elif isinstance(event, link_events.ApprovalChanged):
            v = event.verdict
            journal.append(Kind.LINK, {"state": "approval", "detail": str(v)}, None)
            decisions = p.shoe_approved() if v.approved else p.shoe_unapproved(v.reason)
        elif isinstance(event, link_events.LinkDown):
            self._link_up = False
            self._outage += 1
            journal.append(Kind.LINK, {"state": "down", "detail": str(event)}, None)
            after.append(self._publisher(ev.LinkChanged(status="lost", message=str(event))))
            if p.round_open and self._link_grace > 0:
                self._start_grace(self._outage)
            else:
                decisions = self._tell_link_lost()
        elif isinstance(event, _LinkGraceOver):
            if not self._link_up and event.outage == self._outage:
                detail = f"the shoe did not come back within {self._link_grace:g} s"
                journal.append(Kind.LINK, {"state": "lost", "detail": detail}, None)
                decisions = self._tell_link_lost()
        elif isinstance(event, link_events.EventsLost):
            journal.append(Kind.LINK, {"state": "events_lost", "detail": str(event)}, None)
            decisions = p.link_lost() + p.link_restored(events_lost=True)
            after.append(self._publisher(ev.LinkChanged(status="events_lost", message=str(event))))
        elif isinstance(event, link_events.Reconnecting):
            after.append(self._publisher(ev.LinkChanged(status="reconnecting", message=str(event))))
        elif isinstance(event, link_events.ProtocolMismatch | link_events.DriverError):
            journal.append(Kind.LINK, {"state": "error", "detail": str(event)}, None)
            after.append(self._publisher(ev.LinkChanged(status="error", message=str(event))))
        elif isinstance(event, link_events.CommandFailed):
            message = event.handle.message
            if isinstance(message, SetGate) and event.reason not in ("link_down", "shoe_restarted"):
                # A command lost with the link is not the shoe refusing it: the gate is
                # locked again at the next connection, and the procedure is told of the
                # outage itself.
                text = f"the shoe did not take the gate command ({event})"
                journal.append(Kind.FAULT, {"code": "gate_command", "reason": text, "rule": "F1"})
                after.append(self._publisher(ev.FaultRaised(code="gate_command", message=text)))
        self._journal_decisions(decisions, p.round_id)
        self._after_commit(decisions, after)

    def _tell_link_lost(self) -> list[d.Decision]:
        self._procedure_knows_down = True
        return self._procedure.link_lost()

    def _start_grace(self, outage: int) -> None:
        self._cancel_grace()
        timer = threading.Timer(self._link_grace, self._queue.put, args=(_LinkGraceOver(outage),))
        timer.daemon = True
        timer.start()
        self._grace_timer = timer

    def _cancel_grace(self) -> None:
        if self._grace_timer is not None:
            self._grace_timer.cancel()
            self._grace_timer = None

    # --- decisions -----------------------------------------------------------------------

    def _journal_decisions(self, decisions: list[d.Decision], round_id: str | None) -> None:
        journal = self._journal
        assert journal is not None
        for kind, payload, rid in decision_records(decisions, round_id):
            journal.append(kind, payload, rid)

    def _after_commit(self, decisions: list[d.Decision], after: list[Callable[[], None]]) -> None:
        """Queue what the decisions ask of the world, to run once they are durable."""
        round_id = self._procedure.round_id
        for decision in decisions:
            if isinstance(decision, d.GateCommand):
                after.append(partial(self._command, SetGate(decision.mode, decision.limit)))
            event = public_event(decision, round_id)
            if event is not None:
                after.append(self._publisher(event))
            if isinstance(decision, d.StateChanged):
                after.append(partial(self._display, decision.new))
                prompt = self._prompt_for(decision, decisions, round_id)
                if prompt is not None:
                    after.append(self._publisher(prompt))

    def _prompt_for(
        self, change: d.StateChanged, decisions: list[d.Decision], round_id: str | None
    ) -> ev.Prompt | None:
        try:
            phase = Phase(change.new)
        except ValueError:
            return None
        if phase is Phase.MISDEAL_REVIEW:
            ask = next((x for x in decisions if isinstance(x, d.AskCroupier)), None)
            if ask is None:
                return None
            return ev.Prompt(
                need="misdeal_determination",
                message=ask.question,
                proposal=_proposal(ask.proposal),
                evidence=plain(ask.evidence),
                round=round_id,
            )
        if phase is Phase.DECK_REMOVED:
            return ev.Prompt(
                need="remove_deck",
                message="The deck must leave the table: remove it and load a different deck.",
                round=round_id,
            )
        if phase is Phase.FAULT and not self._link_up:
            # Clearing before the shoe is back would void the round for nothing (F2): the
            # prompt comes when the link is restored.
            return None
        if phase in _PROMPTS:
            need, text = _PROMPTS[phase]
            return ev.Prompt(need=need, message=text, round=round_id)
        return None

    def _command(self, message: Message) -> None:
        if self._link is None:
            return
        try:
            self._link.send_command(message)
        except ShoeControllerError as exc:
            log.warning("command %s not sent: %s", type(message).__name__, exc)
            self._publish(ev.FaultRaised(code="command_refused", message=str(exc)))

    def _regate(self) -> None:
        command = self._procedure.gate_command()
        self._command(SetGate(command.mode, command.limit))

    def _display(self, state: str) -> None:
        # The shoe's display shows the phase only: never a card, never a position's hand.
        self._command(SetDisplay(state.replace("_", " ").upper()[:32]))

    def _new_round_id(self) -> str:
        journal = self._journal
        assert journal is not None
        stamp = datetime.fromtimestamp(self._clock(), UTC).strftime("%Y%m%dT%H%M%SZ")
        return f"{stamp}-{journal.last_seq + 1}"

    # --- publishing ----------------------------------------------------------------------

    def _publisher(self, event: ev.ServiceEvent) -> Callable[[], None]:
        return lambda: self._publish(event)

    def _publish(self, event: ev.ServiceEvent) -> None:
        with self._sub_lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(event)
            except Exception:
                log.exception("subscriber %r failed on %s", callback, event.NAME)

    def _shutdown(self, reason: str) -> None:
        self._cancel_grace()
        if self._link is not None:
            with contextlib.suppress(ShoeControllerError):
                self._link.send_command(SetGate(GateMode.LOCKED))
            self._link.stop()
            self._link = None
        # Whatever is still queued was never journaled: refuse it, never drop it silently.
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _Input):
                item.future.set_exception(ProcedureError("the table controller stopped"))
        if self._journal is not None:
            self._journal.close()
        self._stopped.set()
        self._publish(ev.Stopped(reason=reason, round=self._procedure.round_id))


def _proposal(outcome: d.Outcome | None) -> str | None:
    if outcome is None:
        return None
    return "misdeal" if outcome is d.Outcome.VOID_MISDEAL else "no-misdeal"


def public_event(decision: d.Decision, round_id: str | None) -> ev.ServiceEvent | None:
    """The event subscribers may see for ``decision``, or None. Restricted decisions (card
    identities for the audit journal) never produce one (E1)."""
    if decision.restricted:
        return None
    if isinstance(decision, d.StateChanged):
        return ev.StateChanged(state=decision.new, previous=decision.old, round=round_id)
    if isinstance(decision, d.StartPositionSet):
        start = decision.start
        if start.method is StartMethod.DICE:
            dice = tuple(start.raw)
            return ev.StartPosition(
                position=start.position,
                method="dice",
                dice=(dice[0], dice[1], dice[2]),
                round=round_id,
            )
        return ev.StartPosition(
            position=start.position, method="rng", value=start.raw[0], round=round_id
        )
    if isinstance(decision, d.CardAssigned):
        return ev.CardDealt(index=decision.draw_index, position=decision.position, round=round_id)
    if isinstance(decision, d.StubCounted):
        return ev.StubCounted(count=decision.count, round=round_id)
    if isinstance(decision, d.FaultRaised):
        return ev.FaultRaised(
            code=str(decision.code), message=decision.reason, rule=decision.rule, round=round_id
        )
    if isinstance(decision, d.FaultCleared):
        return ev.FaultCleared(by=decision.by, round=round_id)
    if isinstance(decision, d.RoundEnded):
        counts = decision.cards_per_position or ()
        return ev.RoundEnded(
            outcome=str(decision.outcome),
            reason=decision.reason,
            start_position=decision.start.position if decision.start else None,
            cards_per_position={str(i + 1): n for i, n in enumerate(counts)},
            wagered=decision.wagered,
            collected_unseen=decision.collected_unseen,
            round=decision.round_id,
        )
    if isinstance(decision, d.RoundClosed):
        return ev.RoundClosed(
            hands={str(h.position): tuple(c.text for c in h.cards) for h in decision.hands},
            round=decision.round_id,
        )
    return None
