"""The PIN policy: how many digits, by role, and the deny-list of trivial PINs.

A PIN is digits only, as many as the policy asks of the role (a box's supervisor, who
clears faults and decides misdeals, and every role of the floor: 6 at least), and not one
a guesser tries first (:func:`trivial_pin`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from shoe_controller.accounts.errors import UsersFileError

#: PINs people choose most often that no simple rule below catches: keypad columns, the
#: word LOVE on a phone's keypad, and the like.
COMMON_PINS: Final = frozenset(
    {"2580", "0852", "1004", "1122", "1313", "2112", "5683", "6969", "7777", "159753", "147258"}
)


@dataclass(frozen=True, eq=False)
class PinPolicy:
    """PINs of ``fewest`` to ``most`` digits; the roles in ``longer`` need at least as
    many digits as it says."""

    fewest: int = 4
    most: int = 12
    longer: Mapping[str, int] = field(default_factory=dict)

    def fewest_for(self, role: str | None) -> int:
        """The fewest digits a PIN of ``role`` may have (any role's, for None)."""
        if role is None:
            return self.fewest
        return max(self.fewest, self.longer.get(role, self.fewest))

    def check(self, pin: str, role: str | None = None) -> str:
        """``pin``, when it is digits enough for ``role`` and not a trivial one."""
        if not (pin.isascii() and pin.isdigit() and self.fewest <= len(pin) <= self.most):
            raise UsersFileError(
                f"a PIN is {self.fewest} to {self.most} digits (0-9), nothing else"
            )
        fewest = self.fewest_for(role)
        if len(pin) < fewest:
            raise UsersFileError(
                f"a {role}'s PIN is {fewest} to {self.most} digits: choose a longer one"
            )
        why = trivial_pin(pin)
        if why is not None:
            raise UsersFileError(f"that PIN is too easy to guess ({why}): choose another")
        return pin

    def weakness(self, pin: str, role: str | None = None) -> str | None:
        """Why the policy refuses ``pin`` for ``role``, in a few words, or None."""
        if not (pin.isascii() and pin.isdigit()):
            return "not digits only"
        fewest = self.fewest_for(role)
        if len(pin) < fewest:
            return f"fewer than {fewest} digits" + (f" for a {role}" if role else "")
        if len(pin) > self.most:
            return f"more than {self.most} digits"
        why = trivial_pin(pin)
        return None if why is None else f"too easy to guess: {why}"


def trivial_pin(pin: str) -> str | None:
    """Why ``pin`` (digits) is on the deny-list, or None: the same step from digit to digit
    (1111, 1234, 9876, 1357, 7890), a short group repeated (1212, 123123), a year from 1900
    to 2099, or one of :data:`COMMON_PINS`."""
    digits = [int(c) for c in pin]
    steps = {(b - a) % 10 for a, b in itertools.pairwise(digits)}
    if len(steps) == 1:
        step = steps.pop()
        if step == 0:
            return "one digit repeated"
        return "digits in a row" if step in (1, 9) else "digits in even steps"
    for size in range(2, len(pin) // 2 + 1):
        if len(pin) % size == 0 and pin == pin[:size] * (len(pin) // size):
            return "a group of digits repeated"
    if len(pin) == 4 and pin[:2] in ("19", "20"):
        return "a year"
    if pin in COMMON_PINS:
        return "one of the most common PINs"
    return None
