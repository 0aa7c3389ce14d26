"""``shoe-diag users add|list|remove|reset``: who may sign in to the box's console and API.

The users file is --users, else the configuration's ``[api] users``, else ``users.json``
beside the configured journal, else beside the service's journal. A PIN is asked twice
without echo on a terminal, or read from standard input (one line) with --pin-stdin; it
must pass the PIN policy (:func:`~shoe_controller.api.users.check_pin`). A running service
reads the file again within a second: a removed or changed user's sessions end, and a reset
lifts the lock of that name.
"""

from __future__ import annotations

import getpass
import sys
from pathlib import Path

from shoe_controller.api.roles import Role
from shoe_controller.api.users import (
    PIN_DIGITS,
    SUPERVISOR_PIN_DIGITS,
    UsersFile,
    UsersFileError,
    check_pin,
    default_users_path,
)
from shoe_controller.cli.diag_common import Context
from shoe_controller.errors import ConfigError, ExitCode
from shoe_controller.journal.paths import default_journal_path


class PinEntryError(ConfigError):
    """No PIN could be read as asked (exit code 2, like a usage error)."""

    exit_code = ExitCode.USAGE


def users_path(ctx: Context) -> Path:
    given: Path | None = ctx.option("users")
    if given is not None:
        return given
    config = ctx.config()
    if config.api.users is not None:
        return config.api.users
    journal = config.journal_path or default_journal_path(service=True)
    return default_users_path(journal)


def add(ctx: Context) -> int:
    users = UsersFile(users_path(ctx))
    name: str = ctx.option("name")
    role = Role(ctx.option("role"))
    users.load()  # a foreign or damaged file is refused before a PIN is asked
    user = users.add(name, role, _new_pin(ctx, name, role))
    _report(ctx, "added", user.name, user.role.value, users.path)
    return int(ExitCode.OK)


def reset(ctx: Context) -> int:
    users = UsersFile(users_path(ctx))
    name: str = ctx.option("name")
    old = users.get(name)  # an unknown name is refused before a PIN is asked
    user = users.reset(name, _new_pin(ctx, name, old.role))
    _report(ctx, "PIN reset", user.name, user.role.value, users.path)
    return int(ExitCode.OK)


def remove(ctx: Context) -> int:
    users = UsersFile(users_path(ctx))
    user = users.remove(ctx.option("name"))
    _report(ctx, "removed", user.name, user.role.value, users.path)
    return int(ExitCode.OK)


def list_users(ctx: Context) -> int:
    users = UsersFile(users_path(ctx))
    found = sorted(users.load().values(), key=lambda u: u.name)
    out = ctx.out
    if ctx.json:
        out.json(
            {
                "users_file": str(users.path),
                "users": [{"name": u.name, "role": u.role.value} for u in found],
            }
        )
    elif not found:
        out.line(f"no users in {users.path}: add one with 'shoe-diag users add NAME --role ROLE'")
    else:
        out.table(("name", "role"), [(u.name, u.role.value) for u in found])
    return int(ExitCode.OK)


def _report(ctx: Context, what: str, name: str, role: str, path: Path) -> None:
    if ctx.json:
        ctx.out.json({"user": name, "role": role, "result": what, "users_file": str(path)})
    else:
        ctx.out.line(f"{name} ({role}): {what} in {path}")


def _new_pin(ctx: Context, name: str, role: Role) -> str:
    if ctx.option("pin_stdin"):
        line = sys.stdin.readline()
        if not line:
            raise PinEntryError("--pin-stdin: standard input ended before a PIN was given")
        return check_pin(line.rstrip("\r\n"), role)
    if not sys.stdin.isatty():
        raise PinEntryError(
            "no terminal to ask the PIN on: give it on standard input with --pin-stdin"
        )
    low, high = PIN_DIGITS
    if role is Role.SUPERVISOR:
        low = SUPERVISOR_PIN_DIGITS
    try:
        pin = check_pin(getpass.getpass(f"New PIN for {name} ({low} to {high} digits): "), role)
        again = getpass.getpass("The same PIN again: ")
    except EOFError:
        raise PinEntryError("no PIN given: nothing changed") from None
    if again != pin:
        raise UsersFileError("the two PINs differ: nothing changed; run the command again")
    return pin
