"""``shoe-diag users``: add, list, remove, reset; the PIN from a terminal (asked twice, no
echo, over a real pseudo-terminal) or from standard input; clear one-line errors."""

from __future__ import annotations

import io
import json
import os
import pty
import stat
import sys
from pathlib import Path

import pytest

from shoe_controller.api.users import UsersFile
from tests.cli.conftest import ROOT, Run, child_env

pytestmark = pytest.mark.usefixtures("hermetic")


def with_stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))


def test_add_list_reset_remove(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    users = tmp_path / "users.json"
    with_stdin(monkeypatch, "482193\n")
    result = run("users", "add", "ana", "--role", "dealer", "--pin-stdin", "--users", str(users))
    assert result.code == 0, result.err
    assert result.out == f"ana (dealer): added in {users}\n"
    assert stat.S_IMODE(users.stat().st_mode) == 0o600
    with_stdin(monkeypatch, "593071\n")
    run("users", "add", "bo", "--role", "supervisor", "--pin-stdin", "--users", str(users))
    result = run("users", "list", "--users", str(users), "--json")
    assert json.loads(result.out) == {
        "users_file": str(users),
        "users": [{"name": "ana", "role": "dealer"}, {"name": "bo", "role": "supervisor"}],
    }
    with_stdin(monkeypatch, "716254\n")
    assert run("users", "reset", "ana", "--pin-stdin", "--users", str(users)).code == 0
    file = UsersFile(users)
    assert file.verify(file.load()["ana"], "716254")
    assert run("users", "remove", "bo", "--users", str(users)).code == 0
    assert set(UsersFile(users).load()) == {"ana"}


def test_the_users_file_defaults_to_the_configuration_then_beside_the_journal(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[journal]\npath = "{tmp_path / "j" / "journal.sqlite3"}"\n')
    with_stdin(monkeypatch, "4821\n")
    result = run("users", "add", "ana", "--role", "viewer", "--pin-stdin", "--config", str(config))
    assert result.code == 0, result.err
    assert (tmp_path / "j" / "users.json").is_file()
    config.write_text(config.read_text() + f'[api]\nusers = "{tmp_path / "u.json"}"\n')
    with_stdin(monkeypatch, "4821\n")
    run("users", "add", "bo", "--role", "viewer", "--pin-stdin", "--config", str(config))
    assert set(UsersFile(tmp_path / "u.json").load()) == {"bo"}


@pytest.mark.parametrize(
    ("stdin", "args", "code", "message"),
    [
        ("12\n", ["add", "ana", "--role", "dealer", "--pin-stdin"], 3, "a PIN is 4 to 12 digits"),
        ("1234\n", ["add", "ana", "--role", "dealer", "--pin-stdin"], 3, "too easy to guess"),
        ("0000\n", ["add", "ana", "--role", "dealer", "--pin-stdin"], 3, "too easy to guess"),
        ("4821\n", ["add", "ana", "--role", "supervisor", "--pin-stdin"], 3, "6 to 12 digits"),
        ("", ["add", "ana", "--role", "dealer", "--pin-stdin"], 2, "standard input ended"),
        ("4821\n", ["add", "ana", "--role", "dealer"], 2, "give it on standard input"),
        ("4821\n", ["reset", "zed", "--pin-stdin"], 3, "no user 'zed'"),
        ("", ["remove", "zed"], 3, "no user 'zed'"),
    ],
)
def test_errors_are_one_line_with_their_exit_code(  # noqa: PLR0917 (pytest's parameters)
    run: Run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stdin: str,
    args: list[str],
    code: int,
    message: str,
) -> None:
    with_stdin(monkeypatch, stdin)
    result = run("users", *args, "--users", str(tmp_path / "users.json"))
    assert result.code == code
    assert message in result.error_line


def test_an_unknown_role_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as ended:
        run("users", "add", "ana", "--role", "boss", "--users", str(tmp_path / "u.json"))
    assert ended.value.code == 2


def test_a_file_that_is_not_a_users_file_is_left_alone(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "passwd"
    other.write_text("root:x:0:0::/root:/bin/sh\n")
    with_stdin(monkeypatch, "4821\n")
    result = run("users", "add", "ana", "--role", "dealer", "--pin-stdin", "--users", str(other))
    assert result.code == 3
    assert "not a shoe-controller users file" in result.error_line
    assert other.read_text() == "root:x:0:0::/root:/bin/sh\n"


def _over_a_terminal(args: list[str], answers: list[str]) -> tuple[int, str]:
    """Run shoe-diag on a real pseudo-terminal, typing each answer at each prompt."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: shoe-diag on the terminal
        os.chdir(ROOT)
        os.execve(
            sys.executable, [sys.executable, "-m", "shoe_controller.cli.diag", *args], child_env()
        )
    seen = b""
    try:
        for answer in answers:
            while b"PIN" not in seen.rsplit(b"\n", 1)[-1]:
                seen += os.read(fd, 1024)
            os.write(fd, answer.encode() + b"\n")
            seen += b"\n"
        while True:
            try:
                chunk = os.read(fd, 1024)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), seen.decode(errors="replace")


def test_the_pin_is_asked_twice_without_echo_on_a_terminal(tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    args = ["users", "add", "ana", "--role", "dealer", "--users", str(users)]
    code, screen = _over_a_terminal(args, ["246810", "246810"])
    assert code == 0, screen
    assert "246810" not in screen  # never echoed
    assert "The same PIN again" in screen
    file = UsersFile(users)
    assert file.verify(file.load()["ana"], "246810")
    code, screen = _over_a_terminal(
        ["users", "reset", "ana", "--users", str(users)], ["518273", "518274"]
    )
    assert code == 3
    assert "the two PINs differ" in screen
    assert file.verify(file.load()["ana"], "246810")
