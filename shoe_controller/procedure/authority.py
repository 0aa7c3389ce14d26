"""Who decides (E4): every input of a person names the signed-in person who gave it, and one
table says which inputs need a supervisor. The console, the terminal, a bench's script and
the shoe's buttons all reach the procedure through it.

A dealer runs the round; a supervisor may give every input, and alone gives those of
:data:`SUPERVISOR_INPUTS`, plus a misdeal determination that contradicts a conclusive
record (D2); each input's declaration (:mod:`.declarations`) says which. The shoe's
buttons act for the dealer signed in at the table and never for a supervisor.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import refusals
from shoe_controller.procedure.declarations import DECLARATIONS


class Role(enum.StrEnum):
    """What a person may decide at the table."""

    DEALER = "dealer"
    SUPERVISOR = "supervisor"


@dataclass(frozen=True, slots=True)
class Person:
    """The signed-in person who gives an input: a name (journaled with the input) and a
    role."""

    name: str
    role: Role

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ProcedureError("an input needs the name of the person who gives it (E4)")
        if not isinstance(self.role, Role):
            raise ProcedureError(
                f"{self.name} has the role {self.role!r}, which may give no input at the "
                "table: sign in as a dealer or a supervisor (E4)"
            )


#: The inputs only a supervisor gives, and why (from their declarations).
SUPERVISOR_INPUTS: Final = {
    d.name: d.supervisor_only for d in DECLARATIONS.values() if d.supervisor_only is not None
}


def needs_supervisor(name: str, *, contradicts: bool = False) -> bool:
    """Whether the input ``name`` needs a supervisor (``contradicts``: a determination
    against a conclusive record). A name no declaration gives is a mistake in the caller,
    never silently a dealer's input."""
    d = DECLARATIONS.get(name)
    if d is None:
        raise LookupError(f"{name!r} is no declared input (procedure/declarations.py)")
    return d.supervisor_only is not None or (
        contradicts and d.supervisor_when_contradicting is not None
    )


def require(name: str, person: Person, *, contradicts: bool = False) -> None:
    """Refuse ``person``'s input ``name`` unless their role may give it."""
    if not isinstance(person, Person):
        raise ProcedureError(
            f"{name.replace('_', ' ')} needs the signed-in person who gives it (E4)"
        )
    if person.role is Role.SUPERVISOR or not needs_supervisor(name, contradicts=contradicts):
        return
    d = DECLARATIONS[name]
    what = d.supervisor_only or d.supervisor_when_contradicting or ""
    raise refusals.supervisor_only(name, person.name, what).error()
