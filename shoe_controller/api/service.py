"""What the API needs of the table controller: the service's contract, as a Protocol.

``TableController`` offers these methods; tests give a small fake with the same shape.
The API calls nothing else of the service, exactly as the CLI does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, Protocol

from shoe_controller.procedure.table import TableRules
from shoe_controller.service.controller import Actor
from shoe_controller.service.events import ServiceEvent
from shoe_controller.service.external_rng import SignedNumber


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
    # ``prompt``: the prompt the input answers (its ``id``); refused with TableMovedOn when
    # the table is no longer at it as the controller takes the input.
    def set_wagers(
        self, positions: Iterable[int], *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]: ...
    def no_more_bets(
        self,
        wagered: Iterable[int] | None = None,
        *,
        actor: Actor | None = None,
        prompt: int | None = None,
    ) -> Future[None]: ...
    def confirm_shuffle(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]: ...
    def start_by_dice(
        self, a: int, b: int, c: int, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]: ...
    def start_by_rng(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]: ...
    def start_by_external_rng(
        self,
        number: int,
        *,
        signed: SignedNumber | None = None,
        actor: Actor | None = None,
        prompt: int | None = None,
    ) -> Future[None]: ...
    def wager_settled(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]: ...
    def stub_counted(
        self, count: int, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]: ...
    def accept_stub_count(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]: ...
    def misdeal_determination(
        self, misdealt: bool, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]: ...
    def confirm_new_deck(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]: ...
    def clear_fault(
        self,
        attendant: str | None = None,
        *,
        actor: Actor | None = None,
        void_round: bool = False,
        prompt: int | None = None,
    ) -> Future[None]: ...
    def void_round(
        self, reason: str, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]: ...
    def close_round(
        self, *, actor: Actor | None = None, prompt: int | None = None
    ) -> Future[None]: ...
