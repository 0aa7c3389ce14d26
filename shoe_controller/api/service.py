"""What the API needs of the table controller: the service's contract, as a Protocol.

``TableController`` offers these methods; tests give a small fake with the same shape.
The API calls nothing else of the service: every input goes through ``give``, by the name
its declaration gives it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, Protocol

from shoe_controller.procedure.table import TableRules
from shoe_controller.service.controller import Actor
from shoe_controller.service.events import ServiceEvent


class TableService(Protocol):
    """The table controller's inputs and readings the API relays (docs/integrators.md)."""

    @property
    def rules(self) -> TableRules: ...
    def subscribe(self, callback: Callable[[ServiceEvent], None]) -> Callable[[], None]: ...
    def snapshot(self) -> dict[str, Any]: ...
    def record_access(
        self,
        action: str,
        *,
        user: str,
        role: str | None,
        accepted: bool,
        detail: str = "",
        session: str | None = None,
    ) -> Future[None]: ...
    # Every input a person gives, by its declared name (procedure/declarations.py) with its
    # checked values. ``prompt``: the prompt the input answers (its ``id``); refused with
    # TableMovedOn when the table is no longer at it as the controller takes the input.
    def give(
        self,
        name: str,
        values: Mapping[str, Any] | None = None,
        *,
        actor: Actor | None = None,
        prompt: int | None = None,
    ) -> Future[None]: ...
