"""The dashboard's users are held to the box's rules, by the box's code: a floor users file
is refused for every reason a box's is, a PIN is refused on the floor for the reasons it is
refused to a box's supervisor, ``shoe-floor users`` answers as ``shoe-diag users`` does,
and a guesser at the dashboard meets the box's attempt limits. A floor users file written
before the two were one still loads."""

from __future__ import annotations

import enum
import io
import json
import os
import shlex
import string
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from argon2 import PasswordHasher, Type
from hypothesis import given
from hypothesis import strategies as st

from shoe_controller.accounts.errors import UsersFileError
from shoe_controller.accounts.hashes import HASH_FLOOR
from shoe_controller.accounts.realm import Realm
from shoe_controller.accounts.sessions import Ending, Sessions
from shoe_controller.accounts.signin import Authenticator, Verdict
from shoe_controller.accounts.users import UsersFile
from shoe_controller.api import roles as box_roles
from shoe_controller.api.roles import Role
from shoe_controller.api.users import UsersFile as BoxUsers
from shoe_controller.cli import diag, diag_common
from shoe_floor import cli as floor_cli
from shoe_floor.dashboard.guard import CLIENT_ATTEMPTS, NAME_ATTEMPTS, Guard, Limits
from shoe_floor.dashboard.roles import USERS as FLOOR_USERS
from shoe_floor.dashboard.roles import FloorRole
from shoe_floor.dashboard.users import FloorUsers


def cheap_hasher() -> PasswordHasher:
    """argon2id at the floor of what a users file may hold: the cost is not tested here."""
    return PasswordHasher(
        time_cost=HASH_FLOOR.time_cost,
        memory_cost=HASH_FLOOR.memory_kib,
        parallelism=HASH_FLOOR.parallelism,
    )


@dataclass(frozen=True)
class Side:
    """The box or the floor, as its users file and its users command see it."""

    name: str
    realm: Realm[Any]
    open: Callable[[Path], UsersFile[Any]]
    #: The role that asks for the longest PIN, and a role that does not sign for anything.
    strict: enum.StrEnum
    plain: enum.StrEnum
    main: Callable[[Sequence[str]], int]


BOX = Side(
    "box",
    box_roles.USERS,
    lambda path: BoxUsers(path, cheap_hasher()),
    Role.SUPERVISOR,
    Role.VIEWER,
    diag.main,
)
FLOOR = Side(
    "floor",
    FLOOR_USERS,
    lambda path: FloorUsers(path, cheap_hasher()),
    FloorRole.PIT,
    FloorRole.VIEWER,
    floor_cli.main,
)
SIDES = pytest.mark.parametrize("side", [BOX, FLOOR], ids=lambda s: s.name)


def hand_written(side: Side, directory: Path, entries: list[dict[str, str]]) -> Path:
    """A users file of ``side`` written by hand, mode 0600."""
    path = directory / f"{side.name}-users.json"
    document = {"format": side.realm.format, "version": 1, "users": entries}
    path.write_text(json.dumps(document))
    os.chmod(path, 0o600)
    return path


def entry(
    name: str, role: str, pin: str = "735142", hasher: PasswordHasher | None = None
) -> dict[str, str]:
    return {"name": name, "role": role, "pin": (hasher or cheap_hasher()).hash(pin)}


# --- a users file is refused for the same reasons -----------------------------------------


@SIDES
@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602])
def test_a_file_others_may_write_is_refused_on_both_sides(
    side: Side, tmp_path: Path, mode: int
) -> None:
    path = hand_written(side, tmp_path, [entry("rosa", side.strict)])
    os.chmod(path, mode)
    with pytest.raises(
        UsersFileError, match=f"may be written by other accounts \\(mode {mode:04o}"
    ):
        side.open(path).load()


@SIDES
def test_a_file_in_a_directory_others_may_write_is_refused_on_both_sides(
    side: Side, tmp_path: Path
) -> None:
    directory = tmp_path / "open"
    directory.mkdir()
    path = hand_written(side, directory, [entry("rosa", side.strict)])
    os.chmod(directory, 0o777)
    try:
        with pytest.raises(UsersFileError, match="in a directory other accounts may write"):
            side.open(path).load()
    finally:
        os.chmod(directory, 0o700)


@SIDES
def test_a_weak_hash_is_refused_on_both_sides_saying_how_to_mend_it(
    side: Side, tmp_path: Path
) -> None:
    weak = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    path = hand_written(side, tmp_path, [entry("boss", side.strict, "1", weak)])
    with pytest.raises(UsersFileError) as refused:
        side.open(path).load()
    said = str(refused.value)
    assert "the PIN hash of 'boss' is weaker than allowed (its memory is 8" in said
    assert f"'{side.realm.command} reset boss'" in said


@SIDES
def test_a_name_listed_twice_is_refused_on_both_sides(side: Side, tmp_path: Path) -> None:
    path = hand_written(
        side, tmp_path, [entry("dana", side.plain, "4821"), entry("dana", side.strict)]
    )
    with pytest.raises(UsersFileError, match="user 'dana' is listed twice"):
        side.open(path).load()


@SIDES
def test_the_other_sides_roles_and_files_are_refused(side: Side, tmp_path: Path) -> None:
    other = FLOOR if side is BOX else BOX
    path = hand_written(side, tmp_path, [entry("rosa", other.strict)])
    with pytest.raises(UsersFileError, match=f"unknown role '{other.strict}'"):
        side.open(path).load()
    # The other side's file, named by mistake: refused, and never replaced.
    foreign = hand_written(other, tmp_path, [entry("rosa", other.strict)])
    before = foreign.read_bytes()
    product = side.realm.product
    with pytest.raises(UsersFileError, match=f"is not a {product} users file"):
        side.open(foreign).add("ana", side.plain, "735142")
    assert foreign.read_bytes() == before


@SIDES
def test_a_fifo_is_never_opened_for_ever_nor_replaced(side: Side, tmp_path: Path) -> None:
    fifo = tmp_path / "users.json"
    os.mkfifo(fifo)
    with pytest.raises(UsersFileError, match="not a regular file"):
        side.open(fifo).add("ana", side.plain, "735142")
    assert fifo.is_fifo()


def test_a_dashboard_users_file_written_before_the_rules_were_shared_still_loads(
    tmp_path: Path,
) -> None:
    # As shoe-floor users add wrote it: its own hasher (64 MiB, 3 passes, one lane), an
    # indent of one, the users in the order they were added.
    old = PasswordHasher(time_cost=3, memory_cost=64 * 1024, parallelism=1, type=Type.ID)
    document = {
        "format": "shoe-floor-users",
        "version": 1,
        "users": [
            {"name": "vic", "role": "viewer", "pin": old.hash("730518")},
            {"name": "rosa", "role": "pit", "pin": old.hash("482913")},
        ],
    }
    path = tmp_path / "dashboard-users.json"
    path.write_bytes(json.dumps(document, indent=1).encode() + b"\n")
    os.chmod(path, 0o600)
    users = FloorUsers(path)
    loaded = users.load()
    assert {name: user.role for name, user in loaded.items()} == {
        "vic": FloorRole.VIEWER,
        "rosa": FloorRole.PIT,
    }
    assert users.verify(loaded["rosa"], "482913")
    assert not users.verify(loaded["rosa"], "482914")


# --- the same PIN policy ------------------------------------------------------------------


def accepted(realm: Realm[Any], pin: str, role: enum.StrEnum) -> bool:
    try:
        realm.check_pin(pin, role)
    except UsersFileError:
        return False
    return True


@given(st.text(alphabet=string.digits, max_size=14) | st.text(max_size=8))
def test_the_floor_takes_a_pin_exactly_when_the_box_takes_it_for_a_supervisor(pin: str) -> None:
    supervisor = accepted(box_roles.USERS, pin, Role.SUPERVISOR)
    for role in FloorRole:
        assert accepted(FLOOR_USERS, pin, role) is supervisor, (pin, role)


@SIDES
@pytest.mark.parametrize(
    "pin",
    ["000000", "123456", "987654", "135791", "121212", "123123", "890123", "159753", "147258"],
)
def test_a_trivial_pin_is_refused_on_both_sides(side: Side, tmp_path: Path, pin: str) -> None:
    users = side.open(tmp_path / "users.json")
    with pytest.raises(UsersFileError, match="too easy to guess"):
        users.add("ana", side.strict, pin)
    users.add("ana", side.strict, "735142")
    with pytest.raises(UsersFileError, match="too easy to guess"):
        users.reset("ana", pin)
    assert users.verify(users.get("ana"), "735142")


@SIDES
def test_the_strict_role_needs_six_digits_on_both_sides(side: Side, tmp_path: Path) -> None:
    users = side.open(tmp_path / "users.json")
    with pytest.raises(UsersFileError, match="6 to 12 digits"):
        users.add("marta", side.strict, "59307")
    assert users.add("marta", side.strict, "735142").role is side.strict


# --- the same command ---------------------------------------------------------------------


@pytest.fixture
def no_installed_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(diag_common, "DEFAULT_CONFIG", tmp_path / "no-such-config.toml")


def users_command(
    side: Side,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    stdin: str = "",
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = side.main(["users", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.usefixtures("no_installed_configuration")
@SIDES
def test_add_list_reset_remove_answer_alike(
    side: Side,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "users.json"
    given = ["--users", str(path)]

    def run(*args: str, stdin: str = "") -> tuple[int, str, str]:
        return users_command(side, capsys, monkeypatch, *args, *given, stdin=stdin)

    add = ("add", "rosa", "--role", side.strict.value, "--pin-stdin")
    assert run(*add, stdin="482913\n") == (0, f"rosa ({side.strict}): added in {path}\n", "")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    code, out, _ = run(
        "add", "vic", "--role", side.plain.value, "--pin-stdin", "--json", stdin="730518\n"
    )
    assert (code, json.loads(out)) == (
        0,
        {"user": "vic", "role": side.plain.value, "result": "added", "users_file": str(path)},
    )
    code, out, _ = run("list", "--json")
    assert json.loads(out) == {
        "users_file": str(path),
        "users": [
            {"name": "rosa", "role": side.strict.value},
            {"name": "vic", "role": side.plain.value},
        ],
    }
    code, out, _ = run("list")
    assert out.splitlines() == ["name  role", f"rosa  {side.strict}", f"vic   {side.plain}"]
    assert run("reset", "rosa", "--pin-stdin", stdin="604215\n")[0] == 0
    users = side.open(path)
    assert users.verify(users.get("rosa"), "604215")
    assert run("remove", "vic")[:2] == (0, f"vic ({side.plain}): removed in {path}\n")
    assert set(users.load()) == {"rosa"}


#: PINs too short for either side: the box's answer says 4 digits at least, or 6 for a
#: supervisor; the floor's 6, for every role.
TOO_SHORT = {"12\n", "59307\n"}


@pytest.mark.usefixtures("no_installed_configuration")
@pytest.mark.parametrize(
    ("stdin", "action"),
    [
        ("12\n", "add --pin-stdin"),
        ("59307\n", "add --pin-stdin"),
        ("123456\n", "add --pin-stdin"),
        ("147258\n", "add --pin-stdin"),
        ("", "add --pin-stdin"),
        ("735142\n", "add"),
        ("735142\n", "reset zed --pin-stdin"),
        ("", "remove zed"),
        ("", "remove 'a b'"),
    ],
)
def test_shoe_floor_users_fails_as_shoe_diag_users_does(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: str,
    action: str,
) -> None:
    """The box's answers are checked in tests/cli/test_diag_users.py; the floor's are the
    same, to the word, with the same exit code, and leave no file behind."""
    answers = []
    for side in (BOX, FLOOR):
        path = tmp_path / f"{side.name}.json"
        args = shlex.split(action)
        if args[0] == "add":
            args[1:1] = ["ana", "--role", side.strict.value]
        code, out, err = users_command(
            side, capsys, monkeypatch, *args, "--users", str(path), stdin=stdin
        )
        assert code in (2, 3) and out == "" and len(err.splitlines()) == 1, err
        assert not path.exists()
        answers.append((code, err.split(": error: ", 1)[1].replace(str(path), "FILE")))
    box, floor = answers
    if stdin in TOO_SHORT:
        assert box[0] == floor[0] == 3
        assert "6 to 12 digits" in floor[1]
    else:
        assert box == floor


def test_shoe_floor_users_refuses_a_role_of_the_box(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        floor_cli.main(
            ["users", "add", "ana", "--role", "supervisor", "--users", str(tmp_path / "u")]
        )
    assert ended.value.code == 2
    assert "invalid choice: 'supervisor'" in capsys.readouterr().err


# --- the same attempt limits, sign-in and sessions --------------------------------------


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def dashboard_guard(path: Path, clock: ManualClock) -> Guard:
    limits = Limits()
    users = FloorUsers(path, cheap_hasher())
    authenticator = Authenticator(
        users, attempts=limits.attempts(clock), clock=clock, keep_last_good=False
    )
    return Guard(authenticator, frozenset({"127.0.0.1:8780"}), "http", limits)


def test_the_dashboard_counts_attempts_as_the_box_does(tmp_path: Path) -> None:
    clock = ManualClock()
    path = tmp_path / "users.json"
    FloorUsers(path, cheap_hasher()).add("rosa", FloorRole.PIT, "482913")
    guard = dashboard_guard(path, clock)
    assert NAME_ATTEMPTS.failures == 5 and CLIENT_ATTEMPTS.failures == 20
    verdicts = [guard.sign_in("rosa", f"11111{i}", "10.0.0.9").verdict for i in range(5)]
    assert verdicts == [Verdict.WRONG] * 4 + [Verdict.LOCKED_NOW]
    # Locked: the right PIN too, from another client too; an unknown name the same way.
    assert guard.sign_in("rosa", "482913", "10.0.0.8").verdict is Verdict.LOCKED
    for i in range(5):
        guard.sign_in("nobody", f"22222{i}", "10.0.0.7")
    assert guard.sign_in("nobody", "222229", "10.0.0.7").verdict is Verdict.LOCKED
    # A new PIN (shoe-floor users reset) lifts the name's lock, as shoe-diag users reset.
    FloorUsers(path, cheap_hasher()).reset("rosa", "604215")
    assert guard.sign_in("rosa", "604215", "10.0.0.8").verdict is Verdict.ACCEPTED
    # Time lifts a lock too.
    clock.now += NAME_ATTEMPTS.lockout
    assert guard.sign_in("nobody", "222229", "10.0.0.7").verdict is Verdict.WRONG


def test_concurrent_guesses_at_the_dashboard_check_no_more_pins_than_the_limit(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    path = tmp_path / "users.json"
    FloorUsers(path, cheap_hasher()).add("rosa", FloorRole.PIT, "482913")
    guard = dashboard_guard(path, clock)
    checked: list[str] = []
    lock = threading.Lock()
    real = guard.authenticator.check

    def counting(pin_hash: str, pin: str) -> bool:
        with lock:
            checked.append(pin)
        return real(pin_hash, pin)

    guard.authenticator.check = counting
    threads = [
        threading.Thread(target=guard.sign_in, args=("rosa", f"90000{i}", f"10.0.1.{i}"))
        for i in range(9)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(checked) <= NAME_ATTEMPTS.failures


def test_a_changed_or_untrustworthy_file_signs_the_dashboards_people_out(tmp_path: Path) -> None:
    clock = ManualClock()
    path = tmp_path / "users.json"
    users = FloorUsers(path, cheap_hasher())
    users.add("rosa", FloorRole.PIT, "482913")
    users.add("vic", FloorRole.VIEWER, "730518")
    guard = dashboard_guard(path, clock)
    rosa = guard.open("rosa", FloorRole.PIT)
    vic = guard.open("vic", FloorRole.VIEWER)
    users.reset("vic", "604215")
    guard.refresh()
    assert guard.sessions.get(vic) is None
    assert guard.sessions.get(rosa) is not None
    # A file others may write: nobody signs in, and everybody is signed out, until mended.
    os.chmod(path, 0o666)
    guard.refresh()
    assert guard.sessions.get(rosa) is None
    assert guard.sign_in("rosa", "482913", "10.0.0.9").verdict is Verdict.WRONG
    os.chmod(path, 0o600)
    assert guard.sign_in("rosa", "482913", "10.0.0.9").verdict is Verdict.ACCEPTED


@SIDES
def test_sessions_end_alike_on_both_sides_each_end_told_once_with_why(side: Side) -> None:
    # The box's server journals these ends for the shoe's buttons (E4); the dashboard's
    # sessions are the same code over its own roles.
    now = [0.0]
    told: list[tuple[str, Ending | None]] = []
    sessions: Sessions[Any] = Sessions(
        ttl=100.0,
        idle=10.0,
        clock=lambda: now[0],
        on_ended=lambda s: told.append((s.user, s.ended)),
    )
    idle = sessions.open("ida", side.plain)
    old = sessions.open("olga", side.strict)
    gone = sessions.open("gus", side.plain)
    out = sessions.open("otto", side.plain)
    assert len({s.id for s in (idle, old, gone, out)}) == 4
    assert all(len(s.id) == 16 and s.id not in s.token for s in (idle, old, gone, out))
    assert sessions.next_end() == 10.0
    assert [s.user for s in sessions.end_user("gus")] == ["gus"]
    assert sessions.close(out.token) is out and sessions.close(out.token) is None
    for t in range(9, 100, 9):  # olga is used every 9 s: only her life's end ends her
        now[0] = float(t)
        assert sessions.get(old.token) is old
    assert [s.user for s in sessions.sweep()] == ["ida"]
    assert sessions.alive(old) and not sessions.alive(idle)
    now[0] = 100.0
    assert not sessions.alive(old) and sessions.sweep() == []
    assert sessions.next_end() is None
    assert told == [
        ("gus", Ending.USER_CHANGED),
        ("otto", Ending.SIGN_OUT),
        ("ida", Ending.IDLE),
        ("olga", Ending.EXPIRED),
    ]
