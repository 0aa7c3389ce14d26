"""The service's contract over today's TableController, for the end-to-end tests.

``ContractTable`` is the real controller (real procedure, journal and simulated shoe) with
what the contract adds to it and the controller does not offer yet: ``actor=`` on every
input, ``set_wagers``, ``no_more_bets()`` using the wagers entered, ``confirm_shuffle``,
``record_access`` and ``snapshot``. Each addition is a thin pass-through, recorded so that
the tests can check who gave which input. Once TableController offers the contract, the
tests use it directly and this module goes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from shoe_controller.api.service import Actor
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure.machine import Phase
from shoe_controller.service import events as ev
from shoe_controller.service.controller import TableController
from shoe_controller.service.public_state import PublicState
from tests.api.fakes import Access


@dataclass(frozen=True, kw_only=True)
class Wagers(ev.ServiceEvent):
    NAME = "wagers"
    positions: tuple[int, ...]


def _refused(message: str) -> Future[None]:
    future: Future[None] = Future()
    future.set_exception(ProcedureError(message))
    return future


def _done() -> Future[None]:
    future: Future[None] = Future()
    future.set_result(None)
    return future


class ContractTable(TableController):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.access: list[Access] = []
        self.actors: list[tuple[str, Actor | None]] = []
        self._wagers: tuple[int, ...] = ()
        self._lock = threading.Lock()
        self._public = PublicState()
        self.subscribe(self._follow)

    def _follow(self, event: ev.ServiceEvent) -> None:
        self._public.apply(event)
        if isinstance(event, ev.StateChanged) and event.state == "deck_loaded":
            with self._lock:
                self._wagers = ()

    def snapshot(self) -> dict[str, Any]:
        return self._public.as_json()

    def record_access(
        self, action: str, *, user: str, role: str, accepted: bool, detail: str = ""
    ) -> Future[None]:
        self.access.append(Access(action, user, role, accepted, detail))
        return _done()

    def _by(self, name: str, actor: Actor | None) -> None:
        self.actors.append((name, actor))

    def set_wagers(self, positions: Iterable[int], *, actor: Actor | None = None) -> Future[None]:
        self._by("set_wagers", actor)
        if self.phase is not Phase.DECK_LOADED:
            return _refused("bets are not open: wagers are entered before no more bets (A3)")
        wagers = tuple(sorted(set(positions)))
        with self._lock:
            self._wagers = wagers
        self._publish(Wagers(positions=wagers, round=self._procedure.round_id))
        return _done()

    def no_more_bets(  # type: ignore[override]
        self, wagered: Iterable[int] | None = None, *, actor: Actor | None = None
    ) -> Future[None]:
        self._by("no_more_bets", actor)
        with self._lock:
            entered = self._wagers
        if wagered is None and not entered:
            return _refused("no wagers entered: mark the positions holding a wager first (A3)")
        return super().no_more_bets(entered if wagered is None else wagered)

    def confirm_shuffle(self, *, actor: Actor | None = None) -> Future[None]:
        self._by("confirm_shuffle", actor)
        return _refused("no deck waits for its shuffle confirmation")

    def start_by_dice(  # type: ignore[override]
        self, d1: int, d2: int, d3: int, *, actor: Actor | None = None
    ) -> Future[None]:
        self._by("start_by_dice", actor)
        return super().start_by_dice(d1, d2, d3)

    def start_by_rng(self, *, actor: Actor | None = None) -> Future[None]:  # type: ignore[override]
        self._by("start_by_rng", actor)
        return super().start_by_rng()

    def start_by_external_rng(  # type: ignore[override]
        self, number: int, *, actor: Actor | None = None
    ) -> Future[None]:
        self._by("start_by_external_rng", actor)
        return super().start_by_external_rng(number)

    def wager_settled(self, *, actor: Actor | None = None) -> Future[None]:  # type: ignore[override]
        self._by("wager_settled", actor)
        return super().wager_settled()

    def stub_counted(  # type: ignore[override]
        self, count: int, *, actor: Actor | None = None
    ) -> Future[None]:
        self._by("stub_counted", actor)
        return super().stub_counted(count)

    def misdeal_determination(  # type: ignore[override]
        self, misdealt: bool, *, actor: Actor | None = None
    ) -> Future[None]:
        self._by("misdeal_determination", actor)
        return super().misdeal_determination(misdealt)

    def confirm_new_deck(self, *, actor: Actor | None = None) -> Future[None]:  # type: ignore[override]
        self._by("confirm_new_deck", actor)
        return super().confirm_new_deck()

    def clear_fault(  # type: ignore[override]
        self, attendant: str | None = None, *, actor: Actor | None = None
    ) -> Future[None]:
        self._by("clear_fault", actor)
        who = attendant if attendant is not None else (actor.user if actor else "attendant")
        return super().clear_fault(who)

    def close_round(self, *, actor: Actor | None = None) -> Future[None]:  # type: ignore[override]
        self._by("close_round", actor)
        return super().close_round()
