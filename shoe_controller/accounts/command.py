"""The ``users`` command that ``shoe-diag`` and ``shoe-floor`` share: ``users add NAME
--role ROLE``, ``users list``, ``users remove NAME``, ``users reset NAME``, on a users file
of the command's realm (the box's or the floor's), under the same rules.

A new PIN is asked twice without echo on a terminal, or read from standard input (one
line) with ``--pin-stdin``; it must pass the realm's PIN policy. What the command did is
one line, or one JSON object with ``--json``. It stands here, beside the rules it applies,
rather than in ``shoe_controller.cli``, which ``shoe-floor`` may not import; each program
keeps its own parser and output, and gives them to :func:`add_actions` and :func:`run`.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from shoe_controller.accounts.errors import UsersFileError
from shoe_controller.accounts.realm import R, Realm
from shoe_controller.commandline import ArgumentParser, printable
from shoe_controller.errors import ConfigError, ExitCode

if TYPE_CHECKING:
    from shoe_controller.accounts.users import UsersFile

#: The actions and what each does, as ``--help`` says it.
ACTIONS = {
    "add": "add a user with a role and a PIN",
    "list": "list the users and their roles",
    "remove": "remove a user",
    "reset": "give a user a new PIN",
}


class PinEntryError(ConfigError):
    """No PIN could be read as asked (exit code 2, like a usage error)."""

    exit_code = ExitCode.USAGE


class Show(Protocol):
    """Where the command's result goes: a line for a person, or a JSON object."""

    def line(self, text: str) -> None: ...

    def json(self, obj: dict[str, Any]) -> None: ...


class Lines:
    """:class:`Show` on a text stream (standard output by default): each line made safe for
    a terminal, each JSON object on one line in ASCII."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream

    def line(self, text: str) -> None:
        self._write(printable(text))

    def json(self, obj: dict[str, Any]) -> None:
        self._write(json.dumps(obj, separators=(",", ":")))

    def _write(self, text: str) -> None:
        stream = self.stream if self.stream is not None else sys.stdout
        stream.write(text + "\n")
        stream.flush()


def add_actions(
    users: ArgumentParser, realm: Realm[Any], parents: list[ArgumentParser]
) -> dict[str, ArgumentParser]:
    """Give the ``users`` parser its actions, each with ``parents`` (which bring
    ``--users`` and ``--json``); the action is ``args.users_command``. The action parsers
    by name, for the caller's own defaults."""
    actions = users.add_subparsers(dest="users_command", required=True, metavar="ACTION")
    pin = ArgumentParser(add_help=False)
    pin.add_argument(
        "--pin-stdin",
        action="store_true",
        help="read the PIN from standard input (one line) instead of asking twice",
    )
    made: dict[str, ArgumentParser] = {}
    for action, help_text in ACTIONS.items():
        own = [pin] if action in ("add", "reset") else []
        p = actions.add_parser(
            action, help=help_text, description=help_text, parents=[*parents, *own]
        )
        if action != "list":
            p.add_argument("name", metavar="NAME", help="the user's name")
        if action == "add":
            p.add_argument(
                "--role", required=True, choices=realm.role_names(), help=realm.roles_help
            )
        made[action] = p
    return made


def run(users: UsersFile[R], args: argparse.Namespace, show: Show, *, as_json: bool) -> int:
    """Carry out ``args.users_command`` on ``users``; errors raise, with their exit code."""
    action: str = args.users_command
    if action == "list":
        return _list(users, show, as_json=as_json)
    name: str = args.name
    if action == "add":
        role = users.realm.role(args.role)
        users.load()  # a foreign or damaged file is refused before a PIN is asked
        user = users.add(name, role, _new_pin(users.realm, name, role, args.pin_stdin))
        done = "added"
    elif action == "reset":
        old = users.get(name)  # an unknown name is refused before a PIN is asked
        user = users.reset(name, _new_pin(users.realm, name, old.role, args.pin_stdin))
        done = "PIN reset"
    else:
        user = users.remove(name)
        done = "removed"
    role_name, path = user.role.value, str(users.path)
    if as_json:
        show.json({"user": user.name, "role": role_name, "result": done, "users_file": path})
    else:
        show.line(f"{user.name} ({role_name}): {done} in {path}")
    return int(ExitCode.OK)


def _list(users: UsersFile[R], show: Show, *, as_json: bool) -> int:
    found = sorted(users.load().values(), key=lambda u: u.name)
    rows = [(u.name, u.role.value) for u in found]
    if as_json:
        show.json(
            {
                "users_file": str(users.path),
                "users": [{"name": name, "role": role} for name, role in rows],
            }
        )
    elif not rows:
        show.line(
            f"no users in {users.path}: add one with '{users.realm.command} add NAME --role ROLE'"
        )
    else:
        width = max(len("name"), *(len(printable(name)) for name, _ in rows))
        for name, role in [("name", "role"), *rows]:
            show.line(f"{name.ljust(width)}  {role}")
    return int(ExitCode.OK)


def _new_pin(realm: Realm[R], name: str, role: R, from_stdin: bool) -> str:
    if from_stdin:
        line = sys.stdin.readline()
        if not line:
            raise PinEntryError("--pin-stdin: standard input ended before a PIN was given")
        return realm.check_pin(line.rstrip("\r\n"), role)
    if not sys.stdin.isatty():
        raise PinEntryError(
            "no terminal to ask the PIN on: give it on standard input with --pin-stdin"
        )
    fewest, most = realm.pins.fewest_for(role.value), realm.pins.most
    try:
        pin = realm.check_pin(
            getpass.getpass(f"New PIN for {name} ({fewest} to {most} digits): "), role
        )
        again = getpass.getpass("The same PIN again: ")
    except EOFError:
        raise PinEntryError("no PIN given: nothing changed") from None
    if again != pin:
        raise UsersFileError("the two PINs differ: nothing changed; run the command again")
    return pin
