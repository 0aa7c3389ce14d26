"""``shoe-controller run`` and ``demo``: wire the table controller to a croupier and to the
terminal, count rounds, and stop cleanly."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from shoe_controller.cli.croupier import (
    ButtonCroupier,
    Script,
    ScriptedCroupier,
    TerminalCroupier,
)
from shoe_controller.cli.forwarding import forwarding
from shoe_controller.cli.narration import Narrator
from shoe_controller.cli.output import Output
from shoe_controller.errors import DeviceNotFound, NotApproved, ShoeControllerError
from shoe_controller.hal.addresses import open_transport
from shoe_controller.journal.paths import default_journal_path
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config, load_config
from shoe_controller.service.controller import TableController
from shoe_controller.service.floor_settings import floor_settings

PROG = "shoe-controller"
DEMO_DEVICE = "sim://?pace=0.002"
#: The demo's wagers, so that it shows unwagered hands collected unseen.
DEMO_WAGERS = frozenset({2, 4, 5})


def run_session(args: argparse.Namespace, demo: bool) -> int:
    done = threading.Event()
    # From the first moment, SIGTERM (systemd's stop) and Ctrl-C end the run cleanly.
    with _stop_on_signals(done):
        return _run(args, demo, done)


def _run(args: argparse.Namespace, demo: bool, done: threading.Event) -> int:
    config = load_config(args.config)
    device = args.device or (DEMO_DEVICE if demo else config.device)
    out = Output(json_mode=args.json, color=args.color or config.color)
    if not device.startswith("sim:"):
        _preflight(device, wait=args.wait, out=out)
    if done.is_set():
        return 0
    floor = floor_settings(
        config.floor, broker=getattr(args, "broker", None), table_id=getattr(args, "table_id", None)
    )
    with _journal_path(args, config, demo) as journal_path:
        controller = TableController(config, journal_path=journal_path, device=device)
        session = _Session(out, args.rounds, done)
        controller.subscribe(session.on_event)
        croupier_thread = _attach_croupier(controller, args, demo, out, session)
        if not args.json and demo:
            out.line(f"Demo on a simulated shoe, rounds: {args.rounds}; journal: {journal_path}")
        with forwarding(floor, journal_path, controller, out):
            controller.start()
            try:
                done.wait()
            finally:
                controller.stop()
                if croupier_thread is not None:
                    croupier_thread.join(timeout=1.0)
        if controller.failure is not None:
            raise controller.failure
        if session.error is not None:
            raise session.error
        if not args.json:
            out.line(session.narrator.totals())
    return 0


def _preflight(device: str, wait: bool, out: Output) -> None:
    """Open and close the device once, so that a wrong path, a missing permission or a port
    held by another process ends the command with its own message and exit code. With
    ``wait``, a shoe that is not there is waited for: the link finds it when it appears."""
    transport = open_transport(device)
    try:
        transport.open()
    except DeviceNotFound as exc:
        if not wait:
            raise
        out.warn(f"{PROG}: waiting for the shoe: {exc}")
    finally:
        transport.close()


@contextmanager
def _journal_path(args: argparse.Namespace, config: Config, demo: bool) -> Iterator[Path]:
    if args.journal is not None:
        yield args.journal
    elif config.journal_path is not None:
        yield config.journal_path
    elif demo:
        with tempfile.TemporaryDirectory(prefix="shoe-demo-") as tmp:
            yield Path(tmp) / "journal.sqlite3"
    else:
        yield default_journal_path(service="STATE_DIRECTORY" in os.environ)


def _attach_croupier(
    controller: TableController,
    args: argparse.Namespace,
    demo: bool,
    out: Output,
    session: _Session,
) -> threading.Thread | None:
    scripted = demo or any(
        (args.wagers is not None, args.dice is not None, args.rng, args.on_review, args.attendant)
    )
    if scripted:
        wagers = args.wagers if args.wagers is not None or not demo else DEMO_WAGERS
        script = Script(
            wagers=wagers, dice=args.dice, on_review=args.on_review, attendant=args.attendant
        )
        croupier = ScriptedCroupier(controller, script, session.fail)
        # Once the rounds asked for are done, the script answers nothing more.
        controller.subscribe(lambda event: None if session.done.is_set() else croupier(event))
        return None
    if sys.stdin.isatty() and not args.json:
        terminal = TerminalCroupier(controller, input)
        controller.subscribe(terminal)
        thread = threading.Thread(
            target=terminal.serve, args=(session.done, out.line), name="croupier", daemon=True
        )
        thread.start()
        return thread
    controller.subscribe(ButtonCroupier(controller, args.wagers))
    return None


class _Session:
    """Counts rounds, renders events, and says when the run is over."""

    def __init__(self, out: Output, rounds: int | None, done: threading.Event) -> None:
        self.out = out
        self.rounds = rounds
        self.finished = 0
        self.done = done
        self.error: ShoeControllerError | None = None
        self.narrator = Narrator(out)

    def fail(self, error: ShoeControllerError) -> None:
        self.error = error
        self.done.set()

    def on_event(self, event: ev.ServiceEvent) -> None:
        try:
            if self.out.json_mode:
                self.out.json(event.to_json())
            else:
                self.narrator.tell(event)
        except BrokenPipeError:
            # Whoever read our output went away: stop cleanly, as a pipe's writer does.
            self.done.set()
            return
        if isinstance(event, ev.Connected) and not event.approved:
            self.fail(
                NotApproved(
                    f"shoe {event.model} {event.serial} (firmware {event.firmware}) at "
                    f"{event.device} cannot be armed: {event.reason}; add it to "
                    "[[approved_shoes]] in the configuration, or diagnose it with "
                    "shoe-diag info"
                )
            )
        elif (isinstance(event, ev.RoundEnded) and event.outcome != "dealt") or isinstance(
            event, ev.RoundClosed
        ):
            self._round_finished()
        elif isinstance(event, ev.Stopped):
            self.done.set()

    def _round_finished(self) -> None:
        self.finished += 1
        if self.rounds is not None and self.finished >= self.rounds:
            self.done.set()


@contextmanager
def _stop_on_signals(done: threading.Event) -> Iterator[None]:
    """SIGTERM (systemd's stop) and SIGINT end the run through the same clean stop."""

    def handler(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
