"""No state is a dead end (F6) on the in-process simulator: every outcome that asks for the
deck's removal gets it from the simulated croupier, and a long deck whose extra card stays
in the shoe ends in a count the croupier enters."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoe_controller.cli.croupier import Script
from shoe_controller.service import events as ev
from tests.service.helpers import start_table

#: The bench's croupier: wagers, an attendant who clears, and the determination.
SCRIPT = Script(wagers=frozenset({2, 4}), attendant="att-1", on_review="no-misdeal")


def _rounds(tmp_path: Path, device: str, script: Script, rounds: int = 2) -> list[str]:
    controller, rec = start_table(tmp_path, device=device, script=script)
    try:
        rec.wait_for(lambda _: rec.finished_rounds() >= rounds)
    finally:
        controller.stop()
    return [e.outcome for e in rec.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]


@pytest.mark.rule("F6")
@pytest.mark.parametrize(
    ("options", "first"),
    [
        ("faults=door@20", "void_fault"),
        ("faults=misread@5", "void_fault"),
        ("deck=duplicate", "void_fault"),
    ],
)
def test_a_void_round_on_the_simulator_is_followed_by_a_dealt_one(
    tmp_path: Path, options: str, first: str
) -> None:
    outcomes = _rounds(tmp_path, f"sim://?seed=5&pace=0&{options}", SCRIPT)
    assert outcomes[:2] == [first, "dealt"]


@pytest.mark.rule("D1")
@pytest.mark.rule("D2")
@pytest.mark.rule("F6")
def test_a_long_deck_whose_extra_card_stays_in_the_shoe_leaves_the_table(tmp_path: Path) -> None:
    """``deck=long`` with seed 71: the extra card is the 54th. The gate locks at the deck's
    53rd card and the shoe never reports itself empty; the shoe's display asks for the
    stub, the simulated croupier takes the rest out, the croupier counts 5, the bench's
    supervisor accepts, the deck leaves; the next deck deals."""
    script = Script(
        wagers=frozenset({2, 4}), attendant="att-1", on_review="no-misdeal", stub_count=5
    )
    controller, rec = start_table(tmp_path, device="sim://?seed=71&deck=long&pace=0", script=script)
    try:
        rec.wait_for(lambda _: rec.finished_rounds() >= 2)
    finally:
        controller.stop()
    ends = [e for e in rec.of(ev.RoundEndEvent) if isinstance(e, ev.RoundEndEvent)]
    assert [e.outcome for e in ends[:2]] == ["void_deck_removed", "dealt"]
    needs = [e.need for e in rec.of(ev.PromptEvent) if isinstance(e, ev.PromptEvent)]
    assert needs.index("wait_stub") < needs.index("stub_count") < needs.index("accept_stub_count")
    stubs = [e for e in rec.of(ev.StubEvent) if isinstance(e, ev.StubEvent)]
    assert (stubs[0].source, stubs[0].count, stubs[0].agrees) == ("croupier", 5, False)
    assert stubs[0].figures == {"shoe": None, "read": 4, "deal": 4}
    assert [
        e.count for e in rec.of(ev.StubAcceptedEvent) if isinstance(e, ev.StubAcceptedEvent)
    ] == [5]
