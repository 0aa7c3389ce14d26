"""An input answers the prompt its giver saw. The controller's loop takes inputs in order
with the shoe's events and everyone else's inputs; an input that names a prompt the table
has left by then is refused whole and journaled with who gave it, never applied to a later
prompt its giver did not see. An input that names no prompt answers whatever the table
asks when it is taken, as before."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.cli.croupier import Script
from shoe_controller.errors import ProcedureError
from shoe_controller.service import Actor, TableController, TableMovedOn
from shoe_controller.service import events as ev
from shoe_controller.service.controller import MOVED_ON
from shoe_controller.simulator.transport import live_addresses, switch_off
from tests.service.helpers import DEALER, SUPERVISOR, WAIT, Recorder, start_table

pytestmark = [pytest.mark.rule("E4"), pytest.mark.rule("F1")]

SUE = Actor("sue", "supervisor")
#: Two jams, each cleared at the shoe at once: two faults for an attendant to clear.
TWO_JAMS = "sim://?pace=0&seed=3&faults=jam@10,jam@30&jam_for=0.05"


def _inputs(journal: Path, name: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT payload FROM records WHERE kind = 'input' ORDER BY seq")
        payloads = [json.loads(payload) for (payload,) in rows]
    finally:
        conn.close()
    return [p for p in payloads if p["name"] == name]


def _ready(events: list[ev.ServiceEvent]) -> list[ev.PromptEvent]:
    """The prompts that said a clear succeeds now, in order."""
    return [
        e for e in events if isinstance(e, ev.PromptEvent) and e.code == "attendant_clear_ready"
    ]


@pytest.fixture
def two_jams(tmp_path: Path) -> Iterator[tuple[TableController, Recorder]]:
    # The bench's croupier answers everything but the faults: people clear those.
    controller, recorder = start_table(
        tmp_path, device=TWO_JAMS, script=Script(wagers=frozenset({2, 4}))
    )
    yield controller, recorder
    controller.stop()
    for address in live_addresses():
        switch_off(address)


def test_a_clear_for_a_fault_already_cleared_is_refused_and_never_clears_the_next(
    two_jams: tuple[TableController, Recorder],
) -> None:
    controller, recorder = two_jams
    recorder.wait_for(lambda events: len(_ready(events)) >= 1)
    [first] = _ready(recorder.events)
    # Two supervisors answer the same prompt; the second clear is queued before the loop
    # took the first, so only the loop, in order, can tell that the table moved on.
    sue = controller.clear_fault(actor=SUE, prompt=first.id)
    sam = controller.clear_fault(actor=SUPERVISOR, prompt=first.id)
    sue.result(timeout=WAIT)
    with pytest.raises(TableMovedOn, match=f"^{MOVED_ON}$"):
        sam.result(timeout=WAIT)
    # The deal resumes, and the shoe jams again: a clear for the first jam's prompt that
    # arrives now (a supervisor's sign-in that took its time) is refused too.
    recorder.wait_for(lambda events: len(_ready(events)) >= 2)
    second = _ready(recorder.events)[1]
    assert second.id > first.id
    late = controller.clear_fault(actor=SUPERVISOR, prompt=first.id)
    with pytest.raises(TableMovedOn):
        late.result(timeout=WAIT)
    assert controller.phase.value == "fault"
    controller.clear_fault(actor=SUPERVISOR, prompt=second.id).result(timeout=WAIT)
    recorder.wait_for(lambda events: sum(isinstance(e, ev.FaultClearedEvent) for e in events) >= 2)
    cleared = [
        e.by for e in recorder.of(ev.FaultClearedEvent) if isinstance(e, ev.FaultClearedEvent)
    ]
    assert cleared == ["sue", "sam"]
    clears = _inputs(Path(controller.journal_path), "attendant_clear")
    assert [(c["by"], c["role"], c["prompt"], c["accepted"], c.get("refused")) for c in clears] == [
        ("sue", "supervisor", first.id, True, None),
        ("sam", "supervisor", first.id, False, MOVED_ON),
        ("sam", "supervisor", first.id, False, MOVED_ON),
        ("sam", "supervisor", second.id, True, None),
    ]


def test_the_snapshot_names_the_prompt_the_table_stands_at(
    two_jams: tuple[TableController, Recorder],
) -> None:
    controller, recorder = two_jams
    recorder.wait_for(lambda events: len(_ready(events)) >= 1)
    [ready] = _ready(recorder.events)
    assert controller.snapshot()["prompt"]["id"] == ready.id
    controller.clear_fault(actor=SUE, prompt=ready.id).result(timeout=WAIT)
    # The deal resumes: its prompt is the table's now (a subscriber is told of an event
    # once the snapshot holds it).
    recorder.wait_for(
        lambda events: any(
            isinstance(e, ev.PromptEvent) and e.need == "deal" and e.id > ready.id for e in events
        )
    )
    deal = [e for e in recorder.of(ev.PromptEvent) if getattr(e, "need", "") == "deal"][-1]
    assert isinstance(deal, ev.PromptEvent)
    snapshot = controller.snapshot()["prompt"]
    assert snapshot is None or snapshot["id"] >= deal.id


@pytest.fixture
def idle_table(tmp_path: Path) -> Iterator[tuple[TableController, Recorder]]:
    controller, recorder = start_table(tmp_path, device="sim://?seed=41&pace=0", script=None)
    recorder.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
    yield controller, recorder
    controller.stop()
    for address in live_addresses():
        switch_off(address)


def test_a_prompt_that_never_was_is_refused_and_an_input_without_one_is_taken(
    idle_table: tuple[TableController, Recorder],
) -> None:
    controller, recorder = idle_table
    [asked] = [
        e for e in recorder.of(ev.PromptEvent) if getattr(e, "need", "") == "confirm_shuffle"
    ]
    assert isinstance(asked, ev.PromptEvent)
    # Another record's number, and a number the journal has not reached.
    for foreign in (1, asked.id + 10_000):
        with pytest.raises(TableMovedOn):
            controller.confirm_shuffle(actor=DEALER, prompt=foreign).result(timeout=WAIT)
    assert controller.phase.value == "shuffle_check"
    # A person who may not give the input is told that first: the role, not the prompt.
    with pytest.raises(ProcedureError, match="technician") as refused:
        controller.confirm_shuffle(actor=Actor("tec", "technician"), prompt=1).result(timeout=WAIT)
    assert not isinstance(refused.value, TableMovedOn)
    # Programs that name no prompt keep working as they did.
    controller.confirm_shuffle(actor=DEALER).result(timeout=WAIT)
    assert controller.phase.value == "deck_loaded"


def test_a_prompt_of_another_run_is_refused(tmp_path: Path) -> None:
    """The journal goes on counting across restarts: a prompt of the run before is never
    the table's again, even when the restarted table asks the same thing."""
    journal = tmp_path / "journal.sqlite3"
    device = "sim://?seed=41&pace=0"
    controller, recorder = start_table(tmp_path, device=device, script=None, journal=journal)
    try:
        recorder.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
        before = controller.snapshot()["prompt"]
    finally:
        controller.stop()
    controller, recorder = start_table(tmp_path, device=device, script=None, journal=journal)
    try:
        recorder.wait_for(lambda es: any(getattr(e, "need", "") == "confirm_shuffle" for e in es))
        now = controller.snapshot()["prompt"]
        assert (now["code"], before["code"]) == ("confirm_shuffle", "confirm_shuffle")
        assert now["id"] > before["id"]
        with pytest.raises(TableMovedOn):
            controller.confirm_shuffle(actor=DEALER, prompt=before["id"]).result(timeout=WAIT)
        controller.confirm_shuffle(actor=DEALER, prompt=now["id"]).result(timeout=WAIT)
        assert controller.phase.value == "deck_loaded"
    finally:
        controller.stop()
        for address in live_addresses():
            switch_off(address)
