"""``shoe-diag users add|list|remove|reset``: who may sign in to the box's console and API.

The command is :mod:`shoe_controller.accounts.command`, ``shoe-floor users``' too, on the
box's users file: --users, else the configuration's ``[api] users``, else ``users.json``
beside the configured journal, else beside the service's journal. A new PIN must pass the
box's PIN policy (:func:`~shoe_controller.api.users.check_pin`). A running service reads
the file again within a second: a removed or changed user's sessions end, and a reset lifts
the lock of that name.
"""

from __future__ import annotations

from pathlib import Path

from shoe_controller.accounts import command
from shoe_controller.api.users import UsersFile, default_users_path
from shoe_controller.cli.diag_common import Context
from shoe_controller.journal.paths import default_journal_path


def users_path(ctx: Context) -> Path:
    given: Path | None = ctx.option("users")
    if given is not None:
        return given
    config = ctx.config()
    if config.api.users is not None:
        return config.api.users
    journal = config.journal_path or default_journal_path(service=True)
    return default_users_path(journal)


def users(ctx: Context) -> int:
    return command.run(UsersFile(users_path(ctx)), ctx.args, ctx.out, as_json=ctx.json)
