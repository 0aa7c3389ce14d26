"""Rule E3, the procedure's part: every input's effect is a decision the caller can journal
before acting, and every state change, card, fault and determination has its record."""

from __future__ import annotations

import itertools
import json

import pytest

from firmware_protocol import Card, GateMode
from shoe_controller.journal.records import Kind, canonical_json, check_record
from shoe_controller.procedure import (
    AuditCard,
    CardAssigned,
    Decision,
    DeterminationRecorded,
    FaultCleared,
    FaultRaised,
    GateCommand,
    Phase,
    StateChanged,
    decisions,
)
from shoe_controller.service.journaling import decision_record
from tests.procedure.people import DEALER, SUPERVISOR, supervisor

from .scenarios import SCENARIOS
from .table_driver import Table, of_type

pytestmark = pytest.mark.rule("E3")


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_decision_is_a_journal_record(scenario: str) -> None:
    for decision in SCENARIOS[scenario]().log:
        entry = decision_record(decision, "croupier")
        if isinstance(decision, CardAssigned):
            assert entry is None  # its AuditCard is the card's one record
            continue
        assert entry is not None, decision
        kind, payload = entry
        check_record(kind, payload, getattr(decision, "round_id", None) or "r1")
        assert json.loads(canonical_json(payload)) == payload


def test_every_decision_type_has_its_record() -> None:
    """A new decision means one place to edit: forgetting it fails here, not at a table."""
    kinds = [
        value
        for value in vars(decisions).values()
        if isinstance(value, type) and issubclass(value, Decision) and value is not Decision
    ]
    assert kinds
    for kind in kinds:
        assert decision_record.dispatch(kind) is not decision_record.registry[object], kind


def test_a_card_is_journaled_in_its_text_form_and_the_gate_by_its_mode() -> None:
    table = Table()
    decisions = table.open() + table.deal(1)
    [audit] = of_type(decisions, AuditCard)
    assert decision_record(audit, "croupier") == (
        Kind.CARD,
        {
            "index": 1,
            "position": audit.destination,
            "card": table.deck[0].text,
            "gate_mode": "deal",
        },
    )
    assert decision_record(of_type(decisions, GateCommand)[0], "croupier") == (
        Kind.GATE,
        {"mode": "deal", "limit": 1},
    )


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_state_changes_form_an_unbroken_chain(scenario: str) -> None:
    table = SCENARIOS[scenario]()
    changes = of_type(table.log, StateChanged)
    assert changes[0].old == Phase.NO_SHOE.value
    for before, after in itertools.pairwise(changes):
        assert after.old == before.new
    assert changes[-1].new == table.phase.value


class CountingTable(Table):
    """Counts the inputs of each kind so their records can be matched."""

    def __init__(self) -> None:
        super().__init__(seed=8)
        self.cards: list[int] = []

    def draw(
        self,
        card: Card | None = None,
        *,
        gate: GateMode = GateMode.DEAL,
        index: int | None = None,
        unread: bool = False,
    ) -> list[Decision]:
        self.cards.append(index if index is not None else self.drawn + 1)
        return super().draw(card, gate=gate, index=index, unread=unread)


def test_every_card_fault_determination_and_clear_has_its_record() -> None:
    table = CountingTable()
    table.open()
    table.deal(10)
    table.record(table.procedure.jam())
    table.draw(gate=GateMode.LOCKED)  # a card while the fault holds the gate
    table.record(table.procedure.jam_cleared(card_left=False))
    table.record(table.procedure.clear_fault(by=supervisor("att-1")))
    table.load("r2")
    table.record(table.procedure.no_more_bets([2], by=DEALER))
    table.record(table.procedure.start_by_external_rng(2, by=DEALER))
    table.deal_all()
    table.stub(3)
    table.record(table.procedure.deck_removed())
    table.record(table.procedure.stub_counted(3, by=DEALER))
    table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    # Against a deal that shows 7 to each position: a supervisor's (D2).
    table.record(table.procedure.misdeal_determination(True, by=SUPERVISOR))

    audited = [a.draw_index for a in of_type(table.log, AuditCard)]
    assert audited == table.cards
    assert [f.code.value for f in of_type(table.log, FaultRaised)] == [
        "jam",
        "unexpected_card",
    ]
    assert [c.by for c in of_type(table.log, FaultCleared)] == ["att-1"]
    assert len(of_type(table.log, DeterminationRecorded)) == 1
