"""A small fake of the table controller's contract, for the API's unit tests: it records
every input with its actor and the prompt it names, accepts or refuses as told (an input
naming a prompt the fake is not at as the controller does), and publishes events on
demand."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure.table import TableRules
from shoe_controller.service import Actor, TableMovedOn
from shoe_controller.service.controller import MOVED_ON
from shoe_controller.service.events import ServiceEvent
from shoe_controller.service.external_rng import SignedNumber
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
        self.inputs: list[tuple[str, tuple[Any, ...], Actor | None]] = []
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

    def _input(
        self, name: str, args: tuple[Any, ...], actor: Actor | None, prompt: int | None
    ) -> Future[None]:
        self.inputs.append((name, args, actor))
        self.prompts.append(prompt)
        future: Future[None] = Future()
        if prompt is not None and prompt != self.current_prompt:
            future.set_exception(TableMovedOn(MOVED_ON))
        elif name in self.refuse:
            future.set_exception(ProcedureError(self.refuse[name]))
        else:
            future.set_result(None)
        return future

    def set_wagers(
        self, positions: Iterable[int], *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        return self._input("set_wagers", (sorted(positions),), actor, prompt)

    def no_more_bets(
        self,
        wagered: Iterable[int] | None = None,
        *,
        actor: Actor | None = None,
        prompt: int | None = None,
    ) -> Future[None]:
        return self._input("no_more_bets", (wagered,), actor, prompt)

    def confirm_shuffle(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        return self._input("confirm_shuffle", (), actor, prompt)

    def start_by_dice(
        self, a: int, b: int, c: int, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        return self._input("start_by_dice", (a, b, c), actor, prompt)

    def start_by_rng(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        return self._input("start_by_rng", (), actor, prompt)

    def start_by_external_rng(
        self,
        number: int,
        *,
        signed: SignedNumber | None = None,
        actor: Actor | None = None,
        prompt: int | None = None,
    ) -> Future[None]:
        args = (number,) if signed is None else (number, signed)
        return self._input("start_by_external_rng", args, actor, prompt)

    def wager_settled(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        return self._input("wager_settled", (), actor, prompt)

    def stub_counted(
        self, count: int, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        return self._input("stub_counted", (count,), actor, prompt)

    def accept_stub_count(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        return self._input("accept_stub_count", (), actor, prompt)

    def misdeal_determination(
        self, misdealt: bool, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        return self._input("misdeal_determination", (misdealt,), actor, prompt)

    def confirm_new_deck(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        return self._input("confirm_new_deck", (), actor, prompt)

    def clear_fault(
        self,
        attendant: str | None = None,
        *,
        actor: Actor | None = None,
        void_round: bool = False,
        prompt: int | None = None,
    ) -> Future[None]:
        args = (attendant, True) if void_round else (attendant,)
        return self._input("clear_fault", args, actor, prompt)

    def void_round(
        self, reason: str, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]:
        return self._input("void_round", (reason,), actor, prompt)

    def close_round(self, *, actor: Actor | None = None, prompt: int | None = None) -> Future[None]:
        return self._input("close_round", (), actor, prompt)


def _done() -> Future[None]:
    future: Future[None] = Future()
    future.set_result(None)
    return future
