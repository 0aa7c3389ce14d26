"""Rule E4 from the command line: at a table every input comes from a signed-in person.
The automatic croupier's options are a test bench's; a run nobody could give inputs to is
refused before it starts; the croupier at a terminal signs in with the users file, and a
supervisor signs in for what only a supervisor gives."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.api.auth import Authenticator
from shoe_controller.api.roles import Role
from shoe_controller.api.users import UsersFile
from shoe_controller.cli.controller import main
from shoe_controller.cli.croupier import SignInRefused, TerminalCroupier
from shoe_controller.errors import ExitCode
from shoe_controller.procedure import TableRules
from shoe_controller.procedure.inputs import MAX_TEXT
from shoe_controller.service.controller import MOVED_ON, Actor, TableMovedOn
from shoe_controller.service.events import PromptEvent
from tests.api.conftest import cheap_hasher, write_users
from tests.cli.conftest import ROOT, child_env

#: Longest wait for the terminal under test to finish its questions (seconds).
WAIT = 10.0

pytestmark = [pytest.mark.usefixtures("hermetic"), pytest.mark.rule("E4")]

OPTIONS = [
    ["--wagers", "2,4"],
    ["--on-review", "misdeal"],
    ["--attendant", "att-1"],
    ["--stub-count", "5"],
    ["--dice", "3,4,5"],
    ["--rng"],
]


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o[0])
def test_the_automatic_croupiers_options_are_a_benchs_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    code = main(["run", "--device", str(tmp_path / "ttyACM0"), *option])
    err = capsys.readouterr().err
    assert code == ExitCode.CONFIG
    assert err == (
        f"shoe-controller: error: {option[0]} belongs to a test bench's automatic croupier: at "
        "a table every input comes from a signed-in person (E4); add --bench to run a test "
        "bench\n"
    )


def test_a_run_nobody_could_give_inputs_to_is_refused(tmp_path: Path) -> None:
    """Neither the console, nor a terminal (standard input is not one), nor a bench's
    croupier: refused at once, one line, exit code 3."""
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "shoe_controller",
            "run",
            "--bench",
            "--device",
            "sim://?pace=0",
            "--journal",
            str(tmp_path / "j.sqlite3"),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=child_env(),
        check=False,
    )
    assert completed.returncode == ExitCode.CONFIG
    assert completed.stderr.startswith("shoe-controller: error: nobody could give the inputs")
    assert len(completed.stderr.splitlines()) == 1


class FakeController:
    """What the terminal's croupier calls, recorded with the prompt each answer names. Once
    a test sets ``current_prompt``, an answer naming another prompt is refused, as the
    controller refuses it."""

    rules = TableRules()

    def __init__(self) -> None:
        self.calls: list[tuple[str, Actor | None, dict[str, Any]]] = []
        self.prompts: list[int | None] = []
        self.access: list[tuple[str, str, bool]] = []
        self.current_prompt: int | None = None

    def _done(
        self, name: str, actor: Actor | None, prompt: int | None = None, **kwargs: Any
    ) -> Future[None]:
        self.calls.append((name, actor, kwargs))
        self.prompts.append(prompt)
        future: Future[None] = Future()
        if None not in (prompt, self.current_prompt) and prompt != self.current_prompt:
            future.set_exception(TableMovedOn(MOVED_ON))
        else:
            future.set_result(None)
        return future

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
        self.access.append((action, user, accepted))
        return self._done("access", None)

    def confirm_shuffle(self, *, actor: Actor, prompt: int | None = None) -> Future[None]:
        return self._done("confirm_shuffle", actor, prompt)

    def clear_fault(
        self, *, actor: Actor, void_round: bool = False, prompt: int | None = None
    ) -> Future[None]:
        return self._done("clear_fault", actor, prompt, void_round=void_round)

    def misdeal_determination(
        self, misdealt: bool, *, actor: Actor, prompt: int | None = None
    ) -> Future[None]:
        return self._done("misdeal_determination", actor, prompt, misdealt=misdealt)


@pytest.fixture
def authenticator(tmp_path: Path) -> Authenticator:
    users = UsersFile(tmp_path / "users.json", cheap_hasher())
    users.add("dana", Role.DEALER, "4821")
    users.add("sam", Role.SUPERVISOR, "739164")
    users.add("tec", Role.TECHNICIAN, "5830")
    return Authenticator(users)


def _terminal(
    authenticator: Authenticator, answers: list[str]
) -> tuple[TerminalCroupier, FakeController]:
    controller = FakeController()
    replies = iter(answers)
    terminal = TerminalCroupier(
        controller,  # type: ignore[arg-type]
        lambda question: next(replies),
        authenticator,
        lambda question: next(replies),
    )
    return terminal, controller


def _prompt(need: str, prompt: int | None = None, **fields: Any) -> PromptEvent:
    """A prompt for ``need``, numbered ``prompt`` (by default the next of the test's)."""
    return PromptEvent(id=prompt or next(_NUMBERS), need=need, message=f"asked {need}.", **fields)


_NUMBERS = itertools.count(100)


def test_the_terminals_croupier_signs_in_and_gives_inputs_as_that_person(
    authenticator: Authenticator,
) -> None:
    terminal, controller = _terminal(authenticator, ["dana", "9999", "dana", "4821", "y"])
    with pytest.raises(SignInRefused, match="wrong user name or PIN"):
        terminal.sign_in("Croupier")
    terminal.person = terminal.sign_in("Croupier")
    terminal._answer(_prompt("confirm_shuffle"))
    assert controller.calls[-1][:2] == ("confirm_shuffle", Actor("dana", "dealer"))
    assert controller.access == [("sign_in", "dana", False), ("sign_in", "dana", True)]


def test_a_weak_pin_edited_into_the_file_is_refused_at_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    write_users(path, {"boss": (Role.SUPERVISOR, "1234")})  # by hand, past the policy
    terminal, controller = _terminal(
        Authenticator(UsersFile(path, cheap_hasher())), ["boss", "1234"]
    )
    said = (
        "boss's PIN breaks the PIN policy (fewer than 6 digits for a supervisor): have it "
        "reset with 'shoe-diag users reset boss'"
    )
    with pytest.raises(SignInRefused) as refused:
        terminal.sign_in("Croupier")
    assert str(refused.value) == said
    assert controller.access == [("sign_in", "boss", False)]


def test_a_technician_does_not_sign_in_to_deal(authenticator: Authenticator) -> None:
    terminal, controller = _terminal(authenticator, ["tec", "5830"])
    with pytest.raises(SignInRefused, match="tec is a technician"):
        terminal.sign_in("Croupier")
    assert controller.access == [("refused", "tec", False)]


@pytest.mark.rule("E3")
def test_a_line_over_the_maximum_at_the_terminal_is_refused_in_one_line(
    authenticator: Authenticator,
) -> None:
    """Whatever a person types at the terminal is at most MAX_TEXT characters: a longer
    line is refused before it is read as an answer, a name or anything the journal keeps."""
    flood = "d" * (MAX_TEXT + 1)
    terminal, controller = _terminal(authenticator, [flood, "y" * (MAX_TEXT + 1)])
    line = f"an answer is at most {MAX_TEXT} characters, this one has {MAX_TEXT + 1}: type it again"
    with pytest.raises(SignInRefused) as refused:
        terminal.sign_in("Croupier")
    assert str(refused.value) == line
    assert controller.access == []  # no PIN asked, nothing of it journaled
    terminal.person = Actor("dana", "dealer")
    with pytest.raises(ValueError) as refused_answer:
        terminal._answer(_prompt("confirm_shuffle"))
    assert str(refused_answer.value) == line
    assert controller.calls == []


def test_a_supervisor_signs_in_for_what_only_a_supervisor_gives(
    authenticator: Authenticator,
) -> None:
    terminal, controller = _terminal(
        authenticator, ["", "sam", "739164", "y", "sam", "739164", "void", "sam", "739164"]
    )
    terminal.person = Actor("dana", "dealer")
    terminal._answer(_prompt("attendant_clear", role="supervisor"))
    assert controller.calls[-1] == (
        "clear_fault",
        Actor("sam", "supervisor"),
        {"void_round": False},
    )
    # Against the record's proposal, the determination is a supervisor's (D2).
    terminal._answer(_prompt("misdeal_determination", proposal="no-misdeal"))
    assert controller.calls[-1] == (
        "misdeal_determination",
        Actor("sam", "supervisor"),
        {"misdealt": True},
    )
    # The shoe away: clearing is voiding the round, chosen in words (F2).
    terminal._answer(_prompt("wait_shoe", role="supervisor", options=("void_round",)))
    assert controller.calls[-1] == ("clear_fault", Actor("sam", "supervisor"), {"void_round": True})


#: The one line a bench's start by the RNG gets at a table offering the dice wager (B2).
RNG_REFUSED = (
    "shoe-controller: error: this table offers the dice wager, which the dice decide: a start "
    "by the RNG is refused (B2); pass --dice A,B,C\n"
)


@pytest.mark.rule("B2")
@pytest.mark.parametrize(
    "start",
    [
        pytest.param(["run", "--bench", "--rng"], id="run-rng"),
        # The automatic croupier given no dice would start by the RNG too.
        pytest.param(["run", "--bench"], id="run-no-dice"),
        pytest.param(["demo"], id="demo"),
    ],
)
def test_a_bench_start_by_rng_at_a_dice_wager_table_is_refused_before_any_round(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], start: list[str]
) -> None:
    """Refused at start, in one line with exit 3: no round opens, no journal is written."""
    config = tmp_path / "wager.toml"
    config.write_text("[table]\ndice_wager = true\n")
    journal = tmp_path / "j.sqlite3"
    code = main(
        [
            *start,
            "--config",
            str(config),
            "--device",
            "sim://?pace=0&seed=3",
            "--journal",
            str(journal),
            "--wagers",
            "2",
            "--rounds",
            "1",
        ]
    )
    captured = capsys.readouterr()
    assert code == ExitCode.CONFIG
    assert captured.err == RNG_REFUSED
    assert captured.out == ""
    assert not journal.exists()


# --- the prompt an answer answers --------------------------------------------------------------


def test_every_answer_names_the_prompt_the_terminal_asked(authenticator: Authenticator) -> None:
    terminal, controller = _terminal(authenticator, ["y", "", "sam", "739164"])
    terminal.person = Actor("dana", "dealer")
    terminal._answer(_prompt("confirm_shuffle", 41))
    terminal._answer(_prompt("attendant_clear", 42, role="supervisor"))
    assert controller.prompts == [41, None, 42]  # the sign-in's access record names none


def test_only_the_latest_prompt_waiting_is_asked(authenticator: Authenticator) -> None:
    terminal, _ = _terminal(authenticator, [])
    for number in (3, 5, 4):
        terminal(_prompt("close_round", number))
    latest = terminal._latest(timeout=0)
    assert latest is not None and latest.id == 5
    assert terminal._latest(timeout=0) is None


class _Terminal:
    """A terminal under test: the croupier, the controller it calls, the questions asked,
    what it said, its clock, and the event that stops it."""

    def __init__(self, authenticator: Authenticator, script: list[tuple[str, str]]) -> None:
        self.controller = FakeController()
        self.now = 100.0
        self.stop = threading.Event()
        self.asked: list[str] = []
        self.said: list[str] = []
        self.script = script
        self.on_question: Callable[[int], None] = lambda index: None
        self.croupier = TerminalCroupier(
            self.controller,  # type: ignore[arg-type]
            self._ask,
            authenticator,
            self._ask,
            clock=lambda: self.now,
        )
        self.croupier.person = Actor("dana", "dealer")

    def _ask(self, question: str) -> str:
        index = len(self.asked)
        self.asked.append(question)
        fragment, answer = self.script[index]
        assert fragment in question, (question, fragment)
        self.on_question(index)
        if index == len(self.script) - 1:
            self.stop.set()  # the answer under way is the last
        return answer

    def moves_on_at_first_question(self, current: int, then: int) -> None:
        """The table stands at prompt ``current``, asked; while that question is open, it
        moves on to prompt ``then`` (another supervisor cleared, the shoe faulted again)."""
        self.controller.current_prompt = current
        self.croupier(_prompt("attendant_clear", current, role="supervisor"))

        def moves_on(index: int) -> None:
            if index == 0:
                self.controller.current_prompt = then
                self.croupier(_prompt("attendant_clear", then, role="supervisor"))

        self.on_question = moves_on

    def serve(self) -> None:
        thread = threading.Thread(target=self.croupier.serve, args=(self.stop, self.said.append))
        thread.start()
        thread.join(timeout=WAIT)
        assert not thread.is_alive()
        assert len(self.asked) == len(self.script)

    def given(self) -> list[tuple[Actor | None, int | None]]:
        """(who, the prompt named) of every input given, sign-ins left out."""
        calls = zip(self.controller.calls, self.controller.prompts, strict=True)
        return [(call[1], prompt) for call, prompt in calls if call[0] != "access"]


@pytest.mark.rule("F1")
def test_an_answer_the_table_moved_on_from_is_refused_and_the_new_prompt_asked(
    authenticator: Authenticator,
) -> None:
    """While the first fault's question is open, the table moves on: the answer is
    refused, said, not asked again, and the new prompt is; sam, who signed in for the
    refused clear, gives the next without the PIN."""
    terminal = _Terminal(
        authenticator,
        [
            ("Press Enter to clear it", ""),
            ("Supervisor, your user name", "sam"),
            ("sam, your PIN", "739164"),
            ("Press Enter to clear it", ""),
        ],
    )
    terminal.moves_on_at_first_question(7, then=8)
    terminal.serve()
    assert terminal.said == [
        "not accepted: the table has moved on since that prompt: look at it again",
        "sam stays signed in as supervisor for 1 min to try again",
    ]
    sam = Actor("sam", "supervisor")
    assert terminal.given() == [(sam, 7), (sam, 8)]
    assert terminal.controller.access == [
        ("at_console", "dana", True),  # the dealer signed in here has the shoe's buttons
        ("sign_in", "sam", True),
        ("left_console", "dana", True),
    ]


def test_a_supervisor_kept_for_a_retry_signs_in_again_after_a_minute(
    authenticator: Authenticator,
) -> None:
    terminal = _Terminal(
        authenticator,
        [
            ("Press Enter to clear it", ""),
            ("Supervisor, your user name", "sam"),
            ("sam, your PIN", "739164"),
            ("Press Enter to clear it", ""),
            ("Supervisor, your user name", "sam"),
            ("sam, your PIN", "739164"),
        ],
    )
    terminal.moves_on_at_first_question(7, then=8)
    moves_on = terminal.on_question

    def and_a_minute_passes(index: int) -> None:
        moves_on(index)
        if index == 3:
            terminal.now += 61  # while the retry's question is open

    terminal.on_question = and_a_minute_passes
    terminal.serve()
    sam = Actor("sam", "supervisor")
    assert terminal.given() == [(sam, 7), (sam, 8)]
    assert terminal.controller.access == [
        ("at_console", "dana", True),
        ("sign_in", "sam", True),
        ("sign_in", "sam", True),
        ("left_console", "dana", True),
    ]


@pytest.mark.rule("E3")
def test_a_bench_attendants_id_over_the_maximum_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "j.sqlite3"
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "run",
                "--bench",
                "--device",
                "sim://?pace=0",
                "--journal",
                str(journal),
                "--rounds",
                "1",
                "--attendant",
                "a" * (MAX_TEXT + 1),
            ]
        )
    assert exited.value.code == ExitCode.USAGE
    assert capsys.readouterr().err == (
        f"shoe-controller run: error: argument --attendant: an attendant's id is at most "
        f"{MAX_TEXT} characters, this one has {MAX_TEXT + 1}: give a shorter one (see "
        "shoe-controller run --help)\n"
    )
    assert not journal.exists()
