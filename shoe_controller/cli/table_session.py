"""``shoe-controller run`` and ``demo``: wire the table controller to a croupier and to the
terminal, count rounds, and stop cleanly."""

from __future__ import annotations

import argparse
import getpass
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from shoe_controller.box.installation import system_files
from shoe_controller.cli.croupier import (
    Script,
    ScriptedCroupier,
    TerminalCroupier,
    check_positions,
    check_script_start,
)
from shoe_controller.cli.forwarding import forwarding
from shoe_controller.cli.narration import Narrator
from shoe_controller.cli.output import Output
from shoe_controller.errors import ConfigError, DeviceNotFound, NotApproved, ShoeControllerError
from shoe_controller.floor.settings import floor_settings
from shoe_controller.hal.addresses import check_shoe_address, open_transport
from shoe_controller.journal.keys import key_exposure
from shoe_controller.journal.paths import default_journal_path, default_key_path
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config, load_config
from shoe_controller.service.controller import TableController

if TYPE_CHECKING:
    from shoe_controller.api.auth import Authenticator
    from shoe_controller.api.server import ApiServer

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
    config = _run_config(args.config, demo)
    _check_wagers(args, config)
    device = args.device or (DEMO_DEVICE if demo else config.device)
    address = check_shoe_address(device)
    bench = demo or bool(getattr(args, "bench", False))
    if not bench:
        _refuse_automation_at_a_table(args)
    script = _script(args, demo)
    if script is not None:
        # Before any round opens: a round would otherwise be journaled as not played.
        check_script_start(script, config.table)
    simulated = address.scheme == "sim"
    if simulated and not bench:
        raise _simulator_off_bench(device)
    out = Output(json_mode=args.json, color=args.color or config.color)
    # The simulator inside this program is always there: only a real device is tried first.
    waiting = False if simulated else _preflight(device, wait=args.wait, out=out)
    _check_someone_gives_inputs(args, config, demo)
    if done.is_set():
        return 0
    listen = _api_listen(args, config, demo)
    floor = floor_settings(
        config.floor, broker=getattr(args, "broker", None), table_id=getattr(args, "table_id", None)
    )
    with _journal_path(args, config, demo) as journal_path:
        _warn_if_key_exposed(config, journal_path, out)
        controller = TableController(
            config,
            journal_path=journal_path,
            device=device,
            bench=bench,
            system_files=system_files(),
        )
        session, croupier_thread = _open_session(
            controller, args, demo, out, done=done, waiting=waiting, journal_path=journal_path
        )
        if not args.json and demo:
            out.line(f"Demo on a simulated shoe, rounds: {args.rounds}; journal: {journal_path}")
        api = None if listen is None else _start_api(controller, args, config, journal_path, out)
        try:
            with forwarding(floor, journal_path, controller, out):
                _play_until_done(controller, done, croupier_thread, api)
        finally:
            if api is not None:
                api.stop()
        _raise_failure(controller, session)
        if not args.json:
            out.line(session.narrator.totals())
    return 0


def _check_wagers(args: argparse.Namespace, config: Config) -> None:
    """--wagers names betting positions of the configured rules profile."""
    if args.wagers is None:
        return
    try:
        check_positions(args.wagers, config.table)
    except ValueError as exc:
        raise ConfigError(f"--wagers: {exc} (rules profile {config.profile.label})") from None


#: The automatic croupier's options: a test bench's, never a table's (E4).
AUTOMATIC_OPTIONS = (
    ("wagers", "--wagers"),
    ("on_review", "--on-review"),
    ("attendant", "--attendant"),
    ("stub_count", "--stub-count"),
    ("dice", "--dice"),
    ("rng", "--rng"),
)


def _scripted(args: argparse.Namespace) -> list[str]:
    """The automatic croupier's options given, as written."""
    return [
        flag for name, flag in AUTOMATIC_OPTIONS if getattr(args, name, None) not in (None, False)
    ]


def _script(args: argparse.Namespace, demo: bool) -> Script | None:
    """The bench's automatic croupier the options describe (the demo's always), or None
    when people give the inputs."""
    if not (demo or _scripted(args)):
        return None
    return Script(
        wagers=args.wagers if args.wagers is not None or not demo else DEMO_WAGERS,
        dice=args.dice,
        on_review=args.on_review,
        attendant=args.attendant,
        stub_count=args.stub_count,
    )


def _refuse_automation_at_a_table(args: argparse.Namespace) -> None:
    given = _scripted(args)
    if given:
        raise ConfigError(
            f"{given[0]} belongs to a test bench's automatic croupier: at a table every input "
            "comes from a signed-in person (E4); add --bench to run a test bench"
        )


def _check_someone_gives_inputs(args: argparse.Namespace, config: Config, demo: bool) -> None:
    """Before anything runs: someone can give the inputs, each a signed-in person's (E4)."""
    if demo or _scripted(args) or _api_listen(args, config, demo) is not None:
        return
    if not (sys.stdin.isatty() and not args.json):
        raise ConfigError(
            "nobody could give the inputs: every one comes from a signed-in person (E4); serve "
            "the dealer console (--api or [api] listen), or run at a terminal to sign in there"
        )


def _simulator_off_bench(device: str) -> ConfigError:
    # Only a demo or a declared test bench may deal on the in-process simulator: no real
    # shoe is behind it.
    return ConfigError(
        f"{device!r} is the simulated shoe inside this program, which deals only in "
        "demonstrations and on test benches: run 'shoe-controller demo', or add --bench "
        "to run a test bench (the journal records it as one)"
    )


def _run_config(path: Path | None, demo: bool) -> Config:
    config = load_config(path)
    if demo:
        # A demo never writes into the configured journal, nor uses its key.
        config = replace(config, journal_path=None, journal_key=None)
    return config


def _warn_if_key_exposed(config: Config, journal_path: Path, out: Output) -> None:
    """A journal key that other accounts may read is warned about, not refused: the run
    goes on."""
    exposed = key_exposure(config.journal_key or default_key_path(journal_path))
    if exposed is not None:
        out.warn(f"{PROG}: warning: {exposed}")


def _open_session(
    controller: TableController,
    args: argparse.Namespace,
    demo: bool,
    out: Output,
    *,
    done: threading.Event,
    waiting: bool,
    journal_path: Path,
) -> tuple[_Session, threading.Thread | None]:
    """The run's narration and round count, then whoever answers the prompts. The session
    subscribes first, so that each event is told before a croupier sees it."""
    session = _Session(out, args.rounds, done, controller.rules.deal_size)
    if waiting:
        session.narrator.waiting_announced()
    controller.subscribe(session.on_event)
    croupier_thread = _attach_croupier(
        controller, args, demo, out, session, journal_path=journal_path
    )
    return session, croupier_thread


def _play_until_done(
    controller: TableController,
    done: threading.Event,
    croupier_thread: threading.Thread | None,
    api: ApiServer | None = None,
) -> None:
    """Run the controller until the run is over, then stop it and the terminal croupier
    (the API's last records first, while the controller still journals)."""
    controller.start()
    try:
        done.wait()
    finally:
        if api is not None:
            api.flush()
        controller.stop()
        if croupier_thread is not None:
            croupier_thread.join(timeout=1.0)


def _raise_failure(controller: TableController, session: _Session) -> None:
    """End the command with what stopped the run, the controller's failure first."""
    if controller.failure is not None:
        raise controller.failure
    if session.error is not None:
        raise session.error


def _preflight(device: str, wait: bool, out: Output) -> bool:
    """Open and close the device once, so that a wrong path, a missing permission or a port
    held by another process ends the command with its own message and exit code. With
    ``wait``, a shoe that is not there is waited for: the link finds it when it appears.
    Returns whether the shoe is waited for (and the wait was announced)."""
    transport = open_transport(device)
    try:
        transport.open()
    except DeviceNotFound as exc:
        if not wait:
            raise
        out.warn(f"{PROG}: waiting for the shoe: {exc}")
        return True
    finally:
        transport.close()
    return False


@contextmanager
def _journal_path(args: argparse.Namespace, config: Config, demo: bool) -> Iterator[Path]:
    if args.journal is not None:
        yield args.journal
    elif demo:
        with tempfile.TemporaryDirectory(prefix="shoe-demo-") as tmp:
            yield Path(tmp) / "journal.sqlite3"
    elif config.journal_path is not None:
        yield config.journal_path
    else:
        yield default_journal_path(service="STATE_DIRECTORY" in os.environ)


def _api_listen(args: argparse.Namespace, config: Config, demo: bool) -> str | None:
    """Where ``run`` serves the console and the API: --api, else [api] listen, else not."""
    if demo:
        return None
    listen: str | None = args.api or config.api.listen
    return listen


def _start_api(
    controller: TableController,
    args: argparse.Namespace,
    config: Config,
    journal_path: Path,
    out: Output,
) -> ApiServer:
    """Serve the console and the API, before the controller starts, so that its first
    events reach them (clients are let in once the shoe's port is opened); a bad address,
    TLS file or users file ends the run here (exit code 3)."""
    from shoe_controller.api.app import serve

    listen = _api_listen(args, config, demo=False)
    assert listen is not None
    api = serve(
        controller,
        config.api,
        listen,
        args.users or config.api.users,
        journal_path,
    )
    if not out.json_mode:
        out.line(f"Dealer console and API: {api.url}")
    if api.max_connections < config.api.max_connections:
        out.warn(
            f"{PROG}: warning: the API takes at most {api.max_connections} connections, not "
            f"{config.api.max_connections}: the open-file limit leaves no more once the "
            "table's descriptors are kept; raise it (LimitNOFILE= in the service's unit)"
        )
    return api


def _attach_croupier(
    controller: TableController,
    args: argparse.Namespace,
    demo: bool,
    out: Output,
    session: _Session,
    *,
    journal_path: Path,
) -> threading.Thread | None:
    """Who gives the inputs: a bench's automatic croupier (the demo, ``run --bench`` with
    its options), the people signed in at the console (``--api``), or the croupier signed
    in at this terminal. The shoe's buttons act for whoever is signed in at the console."""
    script = _script(args, demo)
    if script is not None:
        croupier = ScriptedCroupier(controller, script, session.fail, session.waiting)
        # Once the rounds asked for are done, the script answers nothing more.
        controller.subscribe(lambda event: None if session.done.is_set() else croupier(event))
        return None
    if _api_listen(args, controller.config, demo) is not None:
        # The signed-in people at the console give the inputs; the shoe's buttons reach
        # the controller itself.
        return None
    if sys.stdin.isatty() and not args.json:
        terminal = TerminalCroupier(
            controller, input, _authenticator(args, controller, journal_path), getpass.getpass
        )
        controller.subscribe(terminal)
        thread = threading.Thread(
            target=terminal.serve, args=(session.done, out.line), name="croupier", daemon=True
        )
        thread.start()
        return thread
    # Refused before the run began (_check_someone_gives_inputs).
    raise AssertionError("no croupier could be attached")


def _authenticator(
    args: argparse.Namespace, controller: TableController, journal_path: Path
) -> Authenticator:
    """The users file the terminal's croupier signs in with: the console's."""
    from shoe_controller.api.auth import Authenticator
    from shoe_controller.api.users import UsersFile, default_users_path

    path = getattr(args, "users", None) or controller.config.api.users
    users = UsersFile(path or default_users_path(journal_path))
    authenticator = Authenticator(users)
    if not any(u.role.value in ("dealer", "supervisor") for u in authenticator.users().values()):
        raise ConfigError(
            f"no dealer or supervisor may sign in at the terminal: the users file {users.path} "
            "has none; add one with 'shoe-diag users add NAME --role dealer'"
        )
    return authenticator


class _Session:
    """Counts rounds, renders events, and says when the run is over."""

    def __init__(
        self, out: Output, rounds: int | None, done: threading.Event, deal_size: int
    ) -> None:
        self.out = out
        self.rounds = rounds
        self.finished = 0
        self.done = done
        self.error: ShoeControllerError | None = None
        self.narrator = Narrator(out, deal_size=deal_size)
        #: Rounds opened in this run: a round voided at start-up is not one of its rounds.
        self._opened: set[str] = set()
        self._waits: set[str] = set()

    def waiting(self, text: str) -> None:
        """A scripted run waits on a person: say so, once for each thing it waits for."""
        if text not in self._waits:
            self._waits.add(text)
            if not self.out.json_mode:
                self.narrator.say(text)

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
        if isinstance(event, ev.StateEvent) and event.state == "deck_loaded" and event.round:
            self._opened.add(event.round)
        if isinstance(event, ev.ConnectedEvent) and not event.approved:
            self.fail(
                NotApproved(
                    f"shoe {event.model} {event.serial} (firmware {event.firmware}) at "
                    f"{event.device} cannot be armed: {event.reason}; add it to "
                    "[[approved_shoes]] in the configuration, or diagnose it with "
                    "shoe-diag info"
                )
            )
        elif self._finishes_a_round(event):
            self._round_finished()
        elif isinstance(event, ev.StoppedEvent):
            self.done.set()

    def _finishes_a_round(self, event: ev.ServiceEvent) -> bool:
        """A round of this run was played to its end: closed, or void."""
        if event.round not in self._opened:
            return False
        if isinstance(event, ev.RoundClosedEvent):
            return True
        return isinstance(event, ev.RoundEndEvent) and event.outcome not in (
            "dealt",
            "not_played",
        )

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
