"""Whose users they are: the box's or the floor's roles, the format of their users file, and
their PIN policy. Light on purpose: a command line builds its ``--role`` choices from it
without loading the users file's machinery."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Generic, TypeVar

from shoe_controller.accounts.errors import UsersFileError
from shoe_controller.accounts.pins import PinPolicy

#: A realm's roles: a string enum (the box's ``Role``, the floor's ``FloorRole``).
R = TypeVar("R", bound=enum.StrEnum)


@dataclass(frozen=True, eq=False)
class Realm(Generic[R]):
    """Whose users file it is: its roles, the ``format`` its document names, the PIN
    policy, the program it belongs to and the command that manages it (both named in
    messages: ``shoe-controller``, ``shoe-diag users``)."""

    roles: type[R]
    format: str
    product: str
    command: str
    pins: PinPolicy
    #: What each role may do, for the command's help.
    roles_help: str = ""

    def role(self, value: str) -> R:
        """The role named ``value``; another name is refused, saying which there are."""
        try:
            return self.roles(value)
        except ValueError:
            raise UsersFileError(
                f"role {value!r} is not one of {', '.join(self.role_names())}"
            ) from None

    def role_names(self) -> list[str]:
        return [role.value for role in self.roles]

    def check_pin(self, pin: str, role: R | None = None) -> str:
        """``pin``, when the PIN policy takes it for ``role``."""
        return self.pins.check(pin, None if role is None else role.value)

    def weak_pin_refusal(self, name: str, why: str) -> str:
        """The one line that refuses ``name``'s right PIN that the PIN policy refuses
        (``why``), saying how to go on."""
        return (
            f"{name}'s PIN breaks the PIN policy ({why}): have it reset with "
            f"'{self.command} reset {name}'"
        )

    def pin_weakness(self, pin: str, role: R) -> str | None:
        """Why the PIN policy refuses ``pin`` for ``role``, or None."""
        return self.pins.weakness(pin, role.value)
