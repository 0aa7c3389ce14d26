"""The users file: argon2id hashes, never a PIN; mode 0600; written atomically; a path
holding anything but our users file is never replaced; a file that others may write, with
a hash below the floor or a name twice is refused whole; trivial PINs are refused."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from argon2 import PasswordHasher

from shoe_controller.api.roles import Role
from shoe_controller.api.users import (
    HASH_FLOOR,
    UsersFile,
    UsersFileError,
    check_name,
    check_pin,
    trivial_pin,
)
from tests.api.conftest import cheap_hasher, write_users


def test_a_pin_is_stored_as_an_argon2id_hash_in_a_file_only_its_owner_reads(
    tmp_path: Path,
) -> None:
    users = UsersFile(tmp_path / "state" / "users.json", cheap_hasher())
    users.add("ana", Role.DEALER, "482193")
    text = users.path.read_text()
    assert "482193" not in text
    [entry] = json.loads(text)["users"]
    assert entry["pin"].startswith("$argon2id$")
    assert stat.S_IMODE(users.path.stat().st_mode) == 0o600
    assert users.verify(users.load()["ana"], "482193")
    assert not users.verify(users.load()["ana"], "482194")


def test_the_default_hasher_is_argon2id_with_a_memory_hard_cost(tmp_path: Path) -> None:
    users = UsersFile(tmp_path / "users.json")
    users.add("ana", Role.DEALER, "4821")
    assert users.load()["ana"].pin_hash.startswith("$argon2id$v=19$m=65536,t=3,p=4$")


def test_add_reset_remove(tmp_path: Path) -> None:
    users = UsersFile(tmp_path / "users.json", cheap_hasher())
    users.add("ana", Role.DEALER, "4821")
    users.add("bo", Role.SUPERVISOR, "735142")
    with pytest.raises(UsersFileError, match="exists already"):
        users.add("ana", Role.VIEWER, "5930")
    users.reset("ana", "6047")
    ana = users.load()["ana"]
    assert ana.role is Role.DEALER
    assert users.verify(ana, "6047")
    users.remove("bo")
    assert set(users.load()) == {"ana"}
    with pytest.raises(UsersFileError, match="no user 'bo'"):
        users.remove("bo")


@pytest.mark.parametrize(
    "pin", ["123", "1234567890123", "12a4", "", "\uff11\uff12\uff13\uff14", " 1234"]
)
def test_a_pin_is_4_to_12_digits(pin: str) -> None:
    with pytest.raises(UsersFileError, match="4 to 12 digits"):
        check_pin(pin)


@pytest.mark.parametrize("name", ["", "-ana", "a b", "a/b", "x" * 33, "ana\n"])
def test_a_bad_name_is_refused(name: str) -> None:
    with pytest.raises(UsersFileError, match="is not a user name"):
        check_name(name)


def test_a_file_that_is_not_ours_is_never_replaced(tmp_path: Path) -> None:
    other = tmp_path / "notes.json"
    other.write_text('{"something": "else"}')
    with pytest.raises(UsersFileError, match="not a shoe-controller users file"):
        UsersFile(other, cheap_hasher()).add("ana", Role.DEALER, "4821")
    assert other.read_text() == '{"something": "else"}'


def test_a_fifo_is_never_written_or_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "users.json"
    os.mkfifo(fifo)
    with pytest.raises(UsersFileError, match="not a regular file"):
        UsersFile(fifo, cheap_hasher()).add("ana", Role.DEALER, "4821")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_damaged_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    path.write_text(
        json.dumps({"format": "shoe-controller-users", "version": 1, "users": [{"name": 1}]})
    )
    with pytest.raises(UsersFileError, match="damaged"):
        UsersFile(path).load()


def test_a_write_leaves_no_temporary_file_behind(tmp_path: Path) -> None:
    users = UsersFile(tmp_path / "users.json", cheap_hasher())
    for name in ("a1", "a2", "a3"):
        users.add(name, Role.VIEWER, "4821")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users.json"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives files to other users")
def test_root_leaves_a_file_the_directory_owner_reads(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.chown(state, 4242, 4243)  # the service's user, as systemd's StateDirectory= makes it
    users = UsersFile(state / "users.json", cheap_hasher())
    users.add("ana", Role.DEALER, "4821")
    st = users.path.stat()
    assert (st.st_uid, st.st_gid) == (4242, 4243)
    os.chown(users.path, 4244, 4245)
    users.add("bo", Role.VIEWER, "5930")
    st = users.path.stat()
    assert (st.st_uid, st.st_gid) == (4244, 4245)


# --- the PIN policy ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "pin",
    ["0000", "1111", "1234", "4321", "7890", "1357", "1212", "123123", "1987", "2024", "2580"],
)
def test_a_trivial_pin_is_refused(tmp_path: Path, pin: str) -> None:
    assert trivial_pin(pin) is not None
    users = UsersFile(tmp_path / "users.json", cheap_hasher())
    with pytest.raises(UsersFileError, match="too easy to guess"):
        users.add("ana", Role.DEALER, pin)
    users.add("ana", Role.DEALER, "4821")
    with pytest.raises(UsersFileError, match="too easy to guess"):
        users.reset("ana", pin)
    assert users.verify(users.load()["ana"], "4821")


@pytest.mark.parametrize("pin", ["4821", "59307"])
def test_a_supervisor_pin_has_six_digits_at_least(tmp_path: Path, pin: str) -> None:
    with pytest.raises(UsersFileError, match="supervisor's PIN is 6 to 12 digits"):
        check_pin(pin, Role.SUPERVISOR)
    users = UsersFile(tmp_path / "users.json", cheap_hasher())
    with pytest.raises(UsersFileError, match="supervisor's PIN"):
        users.add("marta", Role.SUPERVISOR, pin)
    users.add("marta", Role.SUPERVISOR, "735142")
    with pytest.raises(UsersFileError, match="supervisor's PIN"):
        users.reset("marta", pin)
    # A dealer's may be shorter.
    assert check_pin(pin, Role.DEALER) == pin


# --- a file that cannot be trusted is refused whole --------------------------------------


def _hand_written(tmp_path: Path) -> Path:
    path = tmp_path / "users.json"
    write_users(path, {"dana": (Role.DEALER, "4821"), "marta": (Role.SUPERVISOR, "735142")})
    return path


@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602, 0o660])
def test_a_file_others_may_write_is_refused(tmp_path: Path, mode: int) -> None:
    path = _hand_written(tmp_path)
    os.chmod(path, mode)
    with pytest.raises(
        UsersFileError, match=f"may be written by other accounts \\(mode {mode:04o}"
    ):
        UsersFile(path, cheap_hasher()).load()


def test_a_file_in_a_directory_others_may_write_is_refused(tmp_path: Path) -> None:
    path = _hand_written(tmp_path)
    os.chmod(tmp_path, 0o777)
    try:
        with pytest.raises(UsersFileError, match="in a directory other accounts may write"):
            UsersFile(path, cheap_hasher()).load()
        os.chmod(tmp_path, 0o1777)  # sticky, as /tmp: others cannot replace our file
        assert set(UsersFile(path, cheap_hasher()).load()) == {"dana", "marta"}
    finally:
        os.chmod(tmp_path, 0o700)


def test_a_hash_below_the_floor_is_refused(tmp_path: Path) -> None:
    # A supervisor added by hand, with the PIN 1 and argon2 at t=1, m=8 KiB.
    weak = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    path = tmp_path / "users.json"
    path.write_text(
        json.dumps(
            {
                "format": "shoe-controller-users",
                "version": 1,
                "users": [{"name": "boss", "role": "supervisor", "pin": weak.hash("1")}],
            }
        )
    )
    os.chmod(path, 0o600)
    with pytest.raises(UsersFileError) as refused:
        UsersFile(path, cheap_hasher()).load()
    assert "the PIN hash of 'boss' is weaker than allowed (its memory is 8" in str(refused.value)
    assert "shoe-diag users reset" in str(refused.value)


@pytest.mark.parametrize(
    ("hasher", "why"),
    [
        (PasswordHasher(time_cost=1, memory_cost=HASH_FLOOR.memory_kib), "passes is 1"),
        (PasswordHasher(memory_cost=HASH_FLOOR.memory_kib - 1), "memory is 19455"),
        (PasswordHasher(salt_len=8), "salt bytes is 8"),
    ],
)
def test_the_floor_holds_for_every_parameter(
    tmp_path: Path, hasher: PasswordHasher, why: str
) -> None:
    assert HASH_FLOOR.shortfall(hasher.hash("4821")) is not None
    with pytest.raises(ValueError, match=why):
        UsersFile(tmp_path / "users.json", hasher)


def test_a_name_listed_twice_is_refused(tmp_path: Path) -> None:
    # A dealer's name added again by hand as a supervisor's: which one wins is not for the
    # reader to guess.
    hasher = cheap_hasher()
    path = tmp_path / "users.json"
    path.write_text(
        json.dumps(
            {
                "format": "shoe-controller-users",
                "version": 1,
                "users": [
                    {"name": "dana", "role": "dealer", "pin": hasher.hash("4821")},
                    {"name": "dana", "role": "supervisor", "pin": hasher.hash("735142")},
                ],
            }
        )
    )
    os.chmod(path, 0o600)
    with pytest.raises(UsersFileError, match="user 'dana' is listed twice"):
        UsersFile(path, hasher).load()
