"""The users file: argon2id hashes, never a PIN; mode 0600; written atomically; a path
holding anything but our users file is never replaced."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from shoe_controller.api.roles import Role
from shoe_controller.api.users import UsersFile, UsersFileError, check_name, check_pin
from tests.api.conftest import cheap_hasher


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
    users.add("ana", Role.DEALER, "1111")
    users.add("bo", Role.SUPERVISOR, "2222")
    with pytest.raises(UsersFileError, match="exists already"):
        users.add("ana", Role.VIEWER, "3333")
    users.reset("ana", "4444")
    ana = users.load()["ana"]
    assert ana.role is Role.DEALER
    assert users.verify(ana, "4444")
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
        UsersFile(other, cheap_hasher()).add("ana", Role.DEALER, "1111")
    assert other.read_text() == '{"something": "else"}'


def test_a_fifo_is_never_written_or_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "users.json"
    os.mkfifo(fifo)
    with pytest.raises(UsersFileError, match="not a regular file"):
        UsersFile(fifo, cheap_hasher()).add("ana", Role.DEALER, "1111")
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
        users.add(name, Role.VIEWER, "1234")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users.json"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives files to other users")
def test_root_leaves_a_file_the_directory_owner_reads(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.chown(state, 4242, 4243)  # the service's user, as systemd's StateDirectory= makes it
    users = UsersFile(state / "users.json", cheap_hasher())
    users.add("ana", Role.DEALER, "1111")
    st = users.path.stat()
    assert (st.st_uid, st.st_gid) == (4242, 4243)
    os.chown(users.path, 4244, 4245)
    users.add("bo", Role.VIEWER, "2222")
    st = users.path.stat()
    assert (st.st_uid, st.st_gid) == (4244, 4245)
