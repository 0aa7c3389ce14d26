"""The controller's answer to what the link reports, driven by a scripted fake link (no
shoe at all): each link event is pushed into the controller's queue as the driver would."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from firmware_protocol import (
    Capability,
    CardDrawn,
    DeckLoaded,
    DeckRemoved,
    GateMode,
    Message,
    SetGate,
)
from firmware_protocol.cards import Card
from shoe_controller.link import events as le
from shoe_controller.link.approval import Verdict
from shoe_controller.link.identity import ShoeIdentity
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.service.controller import TableController
from tests.service.helpers import DEALER, Recorder


def identity(serial: str, boot_id: int = 1) -> ShoeIdentity:
    return ShoeIdentity("ES-7", serial, "B", "1.4.2", "ab" * 32, Capability(0), boot_id, (1,))


class FakeLink:
    """Records what the controller asks of the link; the test plays the shoe."""

    def __init__(self, on_event: Callable[[le.LinkEvent], None]) -> None:
        self.push = on_event
        self.commands: list[Message] = []
        self.acked: list[int] = []

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def acknowledge(self, seq: int, then: Sequence[Message] = ()) -> None:
        self.acked.append(seq)
        self.commands.extend(then)

    def send_command(self, message: Message) -> Any:
        self.commands.append(message)


@pytest.fixture
def table(tmp_path: Path) -> Any:
    links: list[FakeLink] = []

    def factory(
        address: str, config: Config, on_event: Callable[[le.LinkEvent], None], resume: Any
    ) -> Any:
        links.append(FakeLink(on_event))
        return links[-1]

    controller = TableController(
        Config(), journal_path=tmp_path / "j.sqlite3", device="fake://", link_factory=factory
    )
    rec = Recorder()
    controller.subscribe(rec)
    controller.start()
    yield controller, links[0], rec
    controller.stop()


def _deal_some(controller: TableController, link: FakeLink, rec: Recorder, cards: int) -> None:
    link.push(le.Connected(identity("SN-1"), 1, verdict=Verdict(True, "listed")))
    link.push(le.ShoeEvent(1, DeckLoaded(), shoe_seq=1))
    rec.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
    controller.confirm_shuffle(actor=DEALER).result(timeout=5)
    controller.no_more_bets([2, 3], actor=DEALER).result(timeout=5)
    controller.start_by_dice(1, 1, 1, actor=DEALER).result(timeout=5)
    for i in range(1, cards + 1):
        link.push(
            le.ShoeEvent(1 + i, CardDrawn(i, Card.from_code(i), GateMode.DEAL, 99), shoe_seq=1 + i)
        )
    rec.wait_for(lambda es: len([e for e in es if isinstance(e, ev.CardEvent)]) == cards)


@pytest.mark.rule("E3")
def test_events_are_acknowledged_after_they_are_handled(table: Any) -> None:
    controller, link, rec = table
    _deal_some(controller, link, rec, 5)
    rec.wait_for(lambda _: bool(link.acked) and max(link.acked) == 6)
    assert link.acked == sorted(link.acked)
    # The gate opened for the deal one card at a time, each after the card before it was
    # journaled (F5): the shoe's own limit never ran ahead of the journal.
    deal = [c.limit for c in link.commands if isinstance(c, SetGate) and c.mode is GateMode.DEAL]
    assert deal and deal[0] == 1 and deal[-1] == 6
    assert deal == sorted(deal)


@pytest.mark.rule("F2")
def test_a_different_shoe_at_the_address_voids_the_round(table: Any) -> None:
    controller, link, rec = table
    _deal_some(controller, link, rec, 5)
    link.push(le.LinkDown("transport", "unplugged"))
    link.push(le.Connected(identity("SN-2"), 1, verdict=Verdict(True, "listed")))
    rec.wait_for(lambda es: any(isinstance(e, ev.RoundEndEvent) for e in es))
    (end,) = [e for e in rec.events if isinstance(e, ev.RoundEndEvent)]
    assert end.outcome == "void_fault"


@pytest.mark.rule("A1")
def test_an_unapproved_shoe_is_never_armed(table: Any) -> None:
    controller, link, rec = table
    link.push(le.Connected(identity("SN-3"), 1, verdict=Verdict(False, "model not listed")))
    link.push(le.ShoeEvent(1, DeckLoaded(), shoe_seq=1))
    rec.wait_for(lambda es: any(isinstance(e, ev.ConnectedEvent) for e in es))
    with pytest.raises(Exception, match=r"shoe_not_approved|approved shoe"):
        controller.no_more_bets([2], actor=DEALER).result(timeout=5)
    assert not any(isinstance(c, SetGate) and c.mode is not GateMode.LOCKED for c in link.commands)


@pytest.mark.rule("E3")
@pytest.mark.rule("F2")
@pytest.mark.rule("F3")
def test_a_restart_resumes_with_every_shoe_the_journal_holds_events_of(tmp_path: Path) -> None:
    """Shoe SN-1's events were journaled, then another shoe's: SN-1 may still hold events
    the journal has (their acknowledgement lost) or have lost some meanwhile. The next run
    tells the link where it left off with each shoe, not only with the last."""
    resumes: list[Any] = []
    links: list[FakeLink] = []

    def factory(
        address: str, config: Config, on_event: Callable[[le.LinkEvent], None], resume: Any
    ) -> Any:
        resumes.append(resume)
        links.append(FakeLink(on_event))
        return links[-1]

    def run() -> TableController:
        controller = TableController(
            Config(), journal_path=tmp_path / "j.sqlite3", device="fake://", link_factory=factory
        )
        controller.subscribe(rec)
        controller.start()
        return controller

    rec = Recorder()
    controller = run()
    link = links[-1]
    link.push(le.Connected(identity("SN-1"), 1, verdict=Verdict(True, "listed")))
    link.push(le.ShoeEvent(1, DeckLoaded(), shoe_seq=11))
    link.push(le.ShoeEvent(2, DeckRemoved(), shoe_seq=12))
    link.push(le.LinkDown("transport", "unplugged"))
    link.push(le.Connected(identity("SN-2"), 1, verdict=Verdict(True, "listed")))
    link.push(le.ShoeEvent(3, DeckLoaded(), shoe_seq=7))
    rec.wait_for(lambda _: 3 in link.acked)
    controller.stop()
    run().stop()
    assert sorted(resumes[-1]) == [("ES-7", "SN-1", 12), ("ES-7", "SN-2", 7)]
