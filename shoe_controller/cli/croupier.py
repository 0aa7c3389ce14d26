"""Who answers the controller's prompts from the command line: a test bench's script, or the
croupier at a terminal who signs in.

The controller publishes a Prompt event when it needs a person's input; a croupier object
answers it through the controller's input methods, naming who gives it (E4) and the prompt
it answers: an answer that reaches the controller once the table has moved on is refused,
never applied to a prompt nobody answered. Answers are queued to the controller's loop
thread, so answering from a subscriber callback never blocks the loop. The shoe's buttons
are the controller's own: they act for the dealer signed in at the table's console, which
at a terminal croupier's table is the terminal, while it serves (E4).
"""

from __future__ import annotations

import queue
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shoe_controller.cli.output import printable
from shoe_controller.errors import ConfigError, ShoeControllerError
from shoe_controller.procedure.authority import needs_supervisor
from shoe_controller.procedure.inputs import text_too_long
from shoe_controller.procedure.table import TableRules, WagerDecider
from shoe_controller.service.controller import BENCH, Actor, TableController, TableMovedOn
from shoe_controller.service.events import PromptEvent, ServiceEvent
from shoe_controller.service.external_rng import parse_signed_value
from shoe_controller.service.table_console import AT_CONSOLE, LEFT_CONSOLE

if TYPE_CHECKING:
    from shoe_controller.api.auth import Authenticator

#: Who a bench's script is in the journal: an automatic croupier, on a bench only (E4).
SCRIPT = Actor("script", BENCH)
#: The bench's second person: another than the one who counted accepts a count (E5).
SCRIPT_SUPERVISOR = Actor("script-supervisor", BENCH)
#: Longest wait for the controller to journal an answer whose refusal the terminal reports.
ANSWER_WAIT = 10.0
#: How long a supervisor who signed in for an input the controller refused stays signed in
#: at the terminal, to give it again without the PIN (seconds), as at the console.
SUPERVISOR_RETRY_S = 60.0


@dataclass(frozen=True)
class Script:
    """A test bench's automatic croupier (the demo and ``run --bench`` with its options).
    What it is not given it does not assume (A3): without wagers it waits for them to be
    entered at the console."""

    wagers: frozenset[int] | None = None  # None: entered by a person, never assumed
    dice: tuple[int, int, int] | None = None  # None: the controller's RNG
    on_review: str | None = None  # "misdeal" or "no-misdeal"; None: follow the proposal
    #: This attendant id clears every fault. None: faults wait for a person, as rule F1
    #: requires at a live table.
    attendant: str | None = None
    #: The croupier's count of the stub. None: the shoe's count, the controller's proposal.
    stub_count: int | None = None


class ScriptedCroupier:
    """Answers every prompt from a script, as the bench's automatic croupier (a supervisor's
    authority on a bench, nothing at a table). What a script cannot do (clear a fault
    without an attendant id, enter wagers it was not given) it says once through
    ``on_wait``, with how to go on."""

    def __init__(
        self,
        controller: TableController,
        script: Script,
        on_error: Callable[[ShoeControllerError], None],
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.controller = controller
        self.script = script
        self.on_error = on_error
        self.on_wait = on_wait or (lambda text: None)

    def __call__(self, event: ServiceEvent) -> None:
        if isinstance(event, PromptEvent):
            self.answer(event)

    def _refused(self, future: Future[None]) -> None:
        """A script's answer the controller refused is said (once). An answer to a prompt
        the table left before it took the answer (a later prompt of the same step, which
        the script answers in its turn) is refused too, changes nothing and needs no word."""
        error = future.exception()
        if isinstance(error, TableMovedOn):
            return
        if isinstance(error, ShoeControllerError) and not self.controller.wait(0):
            self.on_wait(f"not accepted: {error}")

    def answer(self, prompt: PromptEvent) -> None:  # noqa: C901 (one branch per prompt the script answers)
        c = _Watched(self.controller, self._refused, prompt.id)
        s = self.script
        need = prompt.need
        if need == "confirm_shuffle":
            c.confirm_shuffle(actor=SCRIPT)
        elif need in ("no_more_bets", "wagers"):
            if s.wagers is None:
                self.on_wait(
                    f"{prompt.message} Waiting for the wagers: enter them at the console (or, "
                    "on a bench, run again with --wagers)."
                )
            else:
                c.no_more_bets(s.wagers, actor=SCRIPT)
        elif need == "start_position":
            if s.dice is not None:
                c.start_by_dice(*s.dice, actor=SCRIPT)
            elif dice_decide_a_wager(self.controller.rules):
                # Refused before any round (check_script_start); said here too, should the
                # table's rules change under a running script.
                self.on_error(ConfigError(RNG_REFUSED_BY_DICE_WAGER))
            else:
                c.start_by_rng(actor=SCRIPT)
        elif need == "wager_settled":
            c.wager_settled(actor=SCRIPT)
        elif need == "stub_count":
            self._count(prompt)
        elif need == "accept_stub_count":
            c.accept_stub_count(actor=SCRIPT_SUPERVISOR)
        elif need == "misdeal_determination":
            self._determine(prompt)
        elif need == "close_round":
            c.close_round(actor=SCRIPT)
        elif need == "new_deck":
            # A deck arrived after the last one left the table: the bench's operator vouches
            # that it is a different deck.
            c.confirm_new_deck(actor=SCRIPT)
        elif need == "attendant_clear":
            if s.attendant is not None:
                c.clear_fault(actor=Actor(s.attendant, BENCH))
            else:
                self.on_wait(
                    f"{prompt.message} Waiting for an attendant: clear it from the console "
                    "(or, on a bench only, run again with --attendant ID)."
                )
        elif need == "remove_deck":
            self.on_wait(f"{prompt.message} Waiting for the deck to be changed at the shoe.")
        elif need == "wait_shoe":
            self.on_wait(f"{prompt.message} Waiting for the shoe.")

    def _count(self, prompt: PromptEvent) -> None:
        """The shoe's count when it is the stub's size, else the script's count by hand."""
        proposal = prompt.proposal if isinstance(prompt.proposal, int) else None
        expected = (prompt.evidence or {}).get("expected")
        count = proposal
        if self.script.stub_count is not None and (proposal is None or proposal != expected):
            count = self.script.stub_count
        if count is None:
            self.on_error(
                ConfigError(
                    f"{prompt.message} A scripted croupier cannot count it: pass "
                    "--stub-count N with the count"
                )
            )
            return
        _Watched(self.controller, self._refused, prompt.id).stub_counted(count, actor=SCRIPT)

    def _determine(self, prompt: PromptEvent) -> None:
        s = self.script
        c = _Watched(self.controller, self._refused, prompt.id)
        if s.on_review is not None:
            c.misdeal_determination(s.on_review == "misdeal", actor=SCRIPT)
        elif prompt.proposal is not None:
            c.misdeal_determination(prompt.proposal == "misdeal", actor=SCRIPT)
        else:
            self.on_error(
                ConfigError(
                    "the croupier must decide whether the cards were misdealt and no "
                    "--on-review answer was given: pass --on-review misdeal|no-misdeal"
                )
            )


class _Watched:
    """The controller's input methods as answers to ``prompt``: each names it, and each
    answer's refusal is passed to ``refused``."""

    def __init__(
        self,
        controller: TableController,
        refused: Callable[[Future[None]], None],
        prompt: int,
    ) -> None:
        self._controller = controller
        self._refused = refused
        self._prompt = prompt

    def __getattr__(self, name: str) -> Callable[..., Future[None]]:
        method = getattr(self._controller, name)

        def call(*args: object, **kwargs: object) -> Future[None]:
            future: Future[None] = method(*args, prompt=self._prompt, **kwargs)
            future.add_done_callback(self._refused)
            return future

        return call


class SignInRefused(ValueError):
    """A name and PIN that do not sign in (said, then asked again)."""


class TerminalCroupier:
    """The croupier at the terminal: signs in with the users file (name and PIN, as at the
    console) and gives the inputs as that person; an input only a supervisor gives asks for
    a supervisor's sign-in for that input. Prompts are queued by the loop thread and
    answered on the main thread, which owns standard input.

    Only the table's latest prompt is asked, and each answer names the prompt it answers
    and waits for the controller: a refusal is said and the question asked again, unless
    the table moved on while the question was open (then the next prompt is asked). A
    supervisor whose input was refused stays signed in for SUPERVISOR_RETRY_S, for the
    next input only a supervisor gives."""

    def __init__(
        self,
        controller: TableController,
        ask: Callable[[str], str],
        authenticator: Authenticator,
        ask_secret: Callable[[str], str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.controller = controller
        self.ask = ask
        self.ask_secret = ask_secret or ask
        self.authenticator = authenticator
        self.clock = clock
        #: The supervisor who signed in for the input under way, if any.
        self._supervisor: Actor | None = None
        #: A supervisor kept for a retry after a refusal, and until when (clock seconds).
        self._kept: tuple[Actor, float] | None = None
        self.prompts: queue.Queue[PromptEvent] = queue.Queue()
        #: Who is signed in at the terminal.
        self.person: Actor | None = None
        #: The id of the dealer's session at the table while the terminal serves.
        self._session: str | None = None
        #: One question, and its check, for each need the croupier answers here.
        self._handlers: dict[str, Callable[[PromptEvent], None]] = {
            "confirm_shuffle": self._confirm_shuffle,
            "no_more_bets": self._no_more_bets,
            "wagers": self._no_more_bets,
            "stub_count": self._stub_count,
            "accept_stub_count": self._accept_stub_count,
            "start_position": self._start_position,
            "wager_settled": self._wager_settled,
            "misdeal_determination": self._misdeal_determination,
            "close_round": self._close_round,
            "new_deck": self._new_deck,
            "attendant_clear": self._attendant_clear,
            "wait_shoe": self._wait_shoe,
        }

    def __call__(self, event: ServiceEvent) -> None:
        if isinstance(event, PromptEvent):
            self.prompts.put(event)

    def serve(self, stop: threading.Event, say: Callable[[str], None]) -> None:
        while not stop.is_set() and self.person is None:
            try:
                self.person = self.sign_in("Croupier")
            except (SignInRefused, ShoeControllerError) as exc:
                say(f"not accepted: {exc}")
        self.take_the_table()
        try:
            self._serve(stop, say)
        finally:
            self.leave_the_table("the terminal stopped")

    def take_the_table(self) -> None:
        """The dealer signed in here is the table's: the shoe's buttons act for her from now
        on (E4), as for a dealer at the console. A supervisor at the terminal leaves them to
        nobody: they never act for a supervisor."""
        person = self.person
        if person is None or person.role != "dealer" or self._session is not None:
            return
        self._session = secrets.token_hex(8)
        self.controller.record_access(
            AT_CONSOLE,
            user=person.user,
            role=person.role,
            accepted=True,
            detail="terminal",
            session=self._session,
        )

    def leave_the_table(self, why: str) -> None:
        """The dealer's session at the table ends: the buttons act for nobody."""
        person, session, self._session = self.person, self._session, None
        if person is None or session is None:
            return
        self.controller.record_access(
            LEFT_CONSOLE,
            user=person.user,
            role=person.role,
            accepted=True,
            detail=why,
            session=session,
        )

    def _serve(self, stop: threading.Event, say: Callable[[str], None]) -> None:
        while not stop.is_set():
            prompt = self._latest(timeout=0.2)
            if prompt is None:
                continue
            self._supervisor = None
            try:
                self._answer(prompt)
            except TableMovedOn as exc:
                say(f"not accepted: {exc}")
                self._keep(say)
            except (ValueError, ShoeControllerError) as exc:
                say(f"not accepted: {exc}")
                self._keep(say)
                self.prompts.put(prompt)

    def _keep(self, say: Callable[[str], None]) -> None:
        """The supervisor who signed in for a refused input stays signed in for a retry."""
        supervisor = self._supervisor
        if supervisor is None:
            return
        self._kept = (supervisor, self.clock() + SUPERVISOR_RETRY_S)
        minutes = round(SUPERVISOR_RETRY_S / 60)
        say(f"{supervisor.user} stays signed in as supervisor for {minutes} min to try again")

    def _latest(self, timeout: float) -> PromptEvent | None:
        """The latest prompt waiting (the highest ``id``): those before it are the table's
        no longer, and are not asked."""
        try:
            latest = self.prompts.get(timeout=timeout)
        except queue.Empty:
            return None
        while True:
            try:
                prompt = self.prompts.get_nowait()
            except queue.Empty:
                return latest
            if prompt.id >= latest.id:
                latest = prompt

    def sign_in(self, who: str, purpose: str = "") -> Actor:
        """Ask a name and a PIN and check them as the console does (argon2, lockout); the
        outcome is journaled like a console's sign-in."""
        from shoe_controller.api.auth import Verdict
        from shoe_controller.api.roles import USERS

        try:
            name = self._ask(f"{who}, your user name: ").strip()
        except ValueError as exc:
            raise SignInRefused(str(exc)) from None
        if not name:
            raise SignInRefused("a user name is needed to sign in")
        pin = self.ask_secret(f"{name}, your PIN: ")
        result = self.authenticator.sign_in(name, pin)
        detail = "terminal" + (f", for {purpose}" if purpose else "")
        role = result.user.role.value if result.user is not None else ""
        c = self.controller
        if result.verdict is Verdict.ACCEPTED:
            assert result.user is not None
            if role not in ("dealer", "supervisor"):
                c.record_access("refused", user=name, role=role, accepted=False, detail=detail)
                raise SignInRefused(f"{name} is a {role}: a dealer or a supervisor gives inputs")
            c.record_access("sign_in", user=name, role=role, accepted=True, detail=detail)
            return Actor(name, role)
        if result.verdict is Verdict.WRONG:
            c.record_access("sign_in", user=name, role=role, accepted=False, detail=detail)
            raise SignInRefused("wrong user name or PIN")
        if result.verdict is Verdict.WEAK_PIN:
            refusal = USERS.weak_pin_refusal(name, result.weak)
            c.record_access(
                "sign_in", user=name, role=role, accepted=False, detail=f"{detail}: {refusal}"
            )
            raise SignInRefused(refusal)
        minutes = max(1, round(result.retry_after / 60))
        c.record_access("sign_in", user=name, role=role, accepted=False, detail=detail)
        raise SignInRefused(f"{name} is locked after too many wrong PINs: try in {minutes} min")

    def _by(self, name: str, *, contradicts: bool = False) -> Actor:
        """Who gives input ``name``: the person signed in, or a supervisor who signs in for
        it when only a supervisor may give it (E4)."""
        person = self.person
        assert person is not None
        if person.role == "supervisor" or not needs_supervisor(name, contradicts=contradicts):
            return person
        kept, self._kept = self._kept, None
        if kept is not None and self.clock() < kept[1]:
            supervisor = kept[0]
        else:
            supervisor = self.sign_in("Supervisor", name.replace("_", " "))
        self._supervisor = supervisor
        return supervisor

    def _ask(self, question: str) -> str:
        """The line typed in answer, at most MAX_TEXT characters: a longer one is refused
        before anything reads it, a name or an answer."""
        # The question may quote what the shoe reported: escaped like every human line.
        answer = self.ask(printable(question))
        refusal = text_too_long("an answer", answer, "type it again")
        if refusal is not None:
            raise ValueError(refusal)
        return answer

    def _answer(self, prompt: PromptEvent) -> None:
        # A need the terminal has no question for (a deck to load or change, cards to deal)
        # is left to the narration, which already says what to do.
        handler = self._handlers.get(prompt.need)
        if handler is not None:
            handler(prompt)

    @staticmethod
    def _given(future: Future[None]) -> None:
        """Wait until the controller journaled the answer; its refusal is raised."""
        try:
            future.result(ANSWER_WAIT)
        except TimeoutError:
            raise ValueError("the controller did not answer in time: try again") from None

    def _confirm_shuffle(self, prompt: PromptEvent) -> None:
        text = self._ask("Was the deck in the shoe shuffled and cut? (y/n): ")
        if not text.strip().lower().startswith("y"):
            raise ValueError("shuffle and cut the deck (Section 10.4), load it, then answer y")
        by = self._by("confirm_shuffle")
        self._given(self.controller.confirm_shuffle(actor=by, prompt=prompt.id))

    def _no_more_bets(self, prompt: PromptEvent) -> None:
        text = self._ask("No more bets. Wagered positions (e.g. 2,4,5; - for none): ")
        if not text.strip():
            # An empty line is more likely a slip than "nobody wagered": ask for "-".
            raise ValueError("enter the wagered positions, or - when no position wagers")
        wagers = frozenset() if text.strip() == "-" else parse_positions(text)
        checked = check_positions(wagers, self.controller.rules)
        by = self._by("no_more_bets")
        self._given(self.controller.no_more_bets(checked, actor=by, prompt=prompt.id))

    def _stub_count(self, prompt: PromptEvent) -> None:
        # The shoe's count is shown as evidence, never filled in as the answer (D1).
        text = self._ask(f"{prompt.message} Cards in the stub: ")
        try:
            count = int(text)
        except ValueError:
            raise ValueError("enter the number of cards counted") from None
        by = self._by("stub_counted")
        self._given(self.controller.stub_counted(count, actor=by, prompt=prompt.id))

    def _accept_stub_count(self, prompt: PromptEvent) -> None:
        text = self._ask(
            f"{prompt.message} Accept the croupier's count? (y to accept, n to count again): "
        )
        answer = text.strip().lower()
        if answer.startswith("y"):
            by = self._by("accept_stub_count")
            self._given(self.controller.accept_stub_count(actor=by, prompt=prompt.id))
        elif answer.startswith("n"):
            self._stub_count(prompt)
        else:
            raise ValueError("answer y or n")

    def _start_position(self, prompt: PromptEvent) -> None:
        text = self._ask(
            "Starting position: three dice (e.g. 3,4,5), empty for RNG, or the external "
            "RNG's value (N, or N:COUNTER:SIGNATURE as it shows it): "
        )
        by = self._by("start_by_dice")  # every start is a dealer's alike (B1, E4)
        if ":" in text or text.strip().isdigit():
            # The external generator's number: a refusal (a signature that is not its
            # device's, a value used before) is said here, and the question asked again.
            signed = parse_signed_value(text) if ":" in text else None
            number = signed.number if signed is not None else int(text)
            self._given(
                self.controller.start_by_external_rng(
                    number, signed=signed, actor=by, prompt=prompt.id
                )
            )
        elif text.strip():
            dice = parse_dice(text)
            self._given(self.controller.start_by_dice(*dice, actor=by, prompt=prompt.id))
        else:
            self._given(self.controller.start_by_rng(actor=by, prompt=prompt.id))

    def _wager_settled(self, prompt: PromptEvent) -> None:
        # Enter only says "done": whatever was typed is not an answer.
        self._ask("Settle the dice wagers, then press Enter: ")
        by = self._by("wager_settled")
        self._given(self.controller.wager_settled(actor=by, prompt=prompt.id))

    def _misdeal_determination(self, prompt: PromptEvent) -> None:
        hint = f" [proposed: {prompt.proposal}]" if prompt.proposal else ""
        text = self._ask(f"{prompt.message} Misdealt? (y/n){hint}: ").strip().lower()
        if not text and prompt.proposal:
            # An empty answer accepts the controller's proposal, as the hint shows.
            text = "y" if prompt.proposal == "misdeal" else "n"
        if text not in ("y", "n", "yes", "no"):
            raise ValueError("answer y or n")
        misdealt = text.startswith("y")
        contradicts = misdealt and prompt.proposal == "no-misdeal"
        by = self._by("misdeal_determination", contradicts=contradicts)
        self._given(self.controller.misdeal_determination(misdealt, actor=by, prompt=prompt.id))

    def _close_round(self, prompt: PromptEvent) -> None:
        self._ask("Settle the wagers, then press Enter to close the round: ")
        by = self._by("close_round")
        self._given(self.controller.close_round(actor=by, prompt=prompt.id))

    def _new_deck(self, prompt: PromptEvent) -> None:
        text = self._ask(f"{prompt.message} Is it a different deck? (y/n): ")
        if not text.strip().lower().startswith("y"):
            raise ValueError("remove that deck and load a different one")
        by = self._by("confirm_new_deck")
        self._given(self.controller.confirm_new_deck(actor=by, prompt=prompt.id))

    def _attendant_clear(self, prompt: PromptEvent) -> None:
        self._ask(f"{prompt.message} Press Enter to clear it: ")
        by = self._by("clear_fault")
        self._given(self.controller.clear_fault(actor=by, prompt=prompt.id))

    def _wait_shoe(self, prompt: PromptEvent) -> None:
        text = self._ask(
            f"{prompt.message} Type 'void' to clear the fault and void the round, or press "
            "Enter to go on waiting: "
        )
        if text.strip().lower() == "void":
            by = self._by("clear_fault")
            self._given(self.controller.clear_fault(actor=by, void_round=True, prompt=prompt.id))


def parse_positions(text: str) -> frozenset[int]:
    """Positions written like ``2,4,5`` (which of them may wager is the table's rules')."""
    try:
        return frozenset(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a list of positions like 2,4,5") from None


#: A scripted start by the RNG at a table whose dice decide the dice wager (B2).
RNG_REFUSED_BY_DICE_WAGER = (
    "this table offers the dice wager, which the dice decide: a start by the RNG is refused "
    "(B2); pass --dice A,B,C"
)


def dice_decide_a_wager(rules: TableRules) -> bool:
    """Whether the table offers the dice wager and the dice decide it: a start by the RNG is
    then refused (B2)."""
    return rules.dice_wager and rules.dice_wager_decided_by is WagerDecider.DICE


def check_script_start(script: Script, rules: TableRules) -> None:
    """Refuse, before any round, a script that would start by the RNG where the dice must
    decide the starting position (B2)."""
    if script.dice is None and dice_decide_a_wager(rules):
        raise ConfigError(RNG_REFUSED_BY_DICE_WAGER)


def check_positions(positions: frozenset[int], rules: TableRules) -> frozenset[int]:
    """``positions``, each a betting position of the table (the banker is always in play)."""
    betting = rules.betting_positions
    bad = sorted(p for p in positions if p not in betting)
    if bad:
        raise ValueError(
            f"position {bad[0]} cannot wager: player positions are {betting[0]}..{betting[-1]}"
        )
    return positions


def parse_dice(text: str) -> tuple[int, int, int]:
    try:
        dice = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise ValueError(f"{text!r} is not three dice like 3,4,5") from None
    if len(dice) != 3 or not all(1 <= d <= 6 for d in dice):
        raise ValueError(f"{text!r} is not three dice, each 1..6 (e.g. 3,4,5)")
    return dice[0], dice[1], dice[2]
