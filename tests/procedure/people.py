"""The people at a table in the procedure's tests: a dealer and supervisors (E4)."""

from __future__ import annotations

from shoe_controller.procedure import Person, Role

DEALER = Person("dealer-1", Role.DEALER)
SUPERVISOR = Person("super-1", Role.SUPERVISOR)


def supervisor(name: str) -> Person:
    return Person(name, Role.SUPERVISOR)
