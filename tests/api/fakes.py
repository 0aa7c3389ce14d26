"""A small fake of the table controller's contract, for the API's unit tests: it records
every input with its actor and the prompt it names, accepts or refuses as told (an input
naming a prompt the fake is not at as the controller does), and publishes events on
demand."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure.declarations import DECLARATIONS
from shoe_controller.procedure.table import TableRules
from shoe_controller.service import Actor, TableMovedOn
from shoe_controller.service.controller import MOVED_ON
from shoe_controller.service.events import ServiceEvent
from shoe_controller.service.public_state import PublicState


@dataclass(frozen=True)
class Access:
    action: str
    user: str
    role: str
    accepted: bool
    detail: str
    #: The session the record is of (the table's console, a session's end), if any.
    session: str | None = None


class FakeTable:
    """Every input completes at once, unless ``refuse`` names it (then ProcedureError) or it
    names a prompt other than ``current_prompt`` (then TableMovedOn)."""

    def __init__(self, rules: TableRules | None = None) -> None:
        self.rules = rules if rules is not None else TableRules()
        self.inputs: list[tuple[str, dict[str, Any], Actor | None]] = []
        self.access: list[Access] = []
        self.refuse: dict[str, str] = {}
        #: The prompt each input named (None: none), in the order of ``inputs``.
        self.prompts: list[int | None] = []
        #: The prompt the fake table stands at: an input naming another is refused as the
        #: controller refuses it.
        self.current_prompt: int | None = None
        self.state = PublicState()
        self._subscribers: list[Callable[[ServiceEvent], None]] = []
        self._lock = threading.Lock()

    # --- reading -----------------------------------------------------------------------------

    def subscribe(self, callback: Callable[[ServiceEvent], None]) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    def publish(self, event: ServiceEvent) -> None:
        self.state.apply(event)
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            callback(event)

    def snapshot(self) -> dict[str, Any]:
        return self.state.as_json()

    def record_access(
        self,
        action: str,
        *,
        user: str,
        role: str | None,
        accepted: bool,
        detail: str = "",
        session: str | None = None,
    ) -> Future[None]:
        self.access.append(Access(action, user, str(role or ""), accepted, detail, session))
        return _done()

    # --- inputs ------------------------------------------------------------------------------

    def give(
        self,
        name: str,
        values: Mapping[str, Any] | None = None,
        *,
        actor: Actor | None = None,
        prompt: int | None = None,
    ) -> Future[None]:
        """Record the input; refuse a name no declaration gives, as the controller does."""
        self.inputs.append((name, dict(values or {}), actor))
        self.prompts.append(prompt)
        future: Future[None] = Future()
        if name not in DECLARATIONS:
            future.set_exception(ProcedureError(f"{name!r} is no input of the table"))
        elif prompt is not None and prompt != self.current_prompt:
            future.set_exception(TableMovedOn(MOVED_ON))
        elif name in self.refuse:
            future.set_exception(ProcedureError(self.refuse[name]))
        else:
            future.set_result(None)
        return future


def _done() -> Future[None]:
    future: Future[None] = Future()
    future.set_result(None)
    return future
