"""Whole rounds, regular and irregular, whose decision logs several tests inspect."""

from __future__ import annotations

from collections.abc import Callable

from firmware_protocol import JOKER, GateMode
from shoe_controller.procedure import LINK_GRACE, TableRules, UnreadCardPolicy
from tests.procedure.people import DEALER, SUPERVISOR, supervisor

from .table_driver import Table


def regular() -> Table:
    table = Table(seed=1)
    table.dealt_round(wagered=(3, 6))
    table.record(table.procedure.close_round(by=DEALER))
    return table


def misdeal_review() -> Table:
    table = Table(seed=2)
    table.open()
    table.deal_all()
    table.stub(3)
    table.record(table.procedure.shoe_empty(52))
    table.record(table.procedure.stub_counted(3, by=DEALER))
    table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    table.record(table.procedure.misdeal_determination(False, by=DEALER))
    table.load("r2", new_deck=True)
    return table


def duplicate_card() -> Table:
    table = Table(seed=3)
    table.open()
    table.deal(20)
    table.draw(table.deck[7])
    table.record(table.procedure.clear_fault(by=supervisor("att-1")))
    return table


def door_then_next_round() -> Table:
    table = Table(seed=4)
    table.open()
    table.deal(30)
    table.record(table.procedure.door_opened())
    table.record(table.procedure.door_closed())
    table.record(table.procedure.clear_fault(by=supervisor("att-2")))
    table.load("r2")
    table.record(table.procedure.no_more_bets([2, 3, 4, 5, 6, 7], by=DEALER))
    table.record(table.procedure.start_by_external_rng(7, by=DEALER))
    table.deal_all()
    table.stub()
    table.shoe_empty()
    table.count_stub()
    table.record(table.procedure.close_round(by=DEALER))
    return table


def unknown_card() -> Table:
    table = Table(TableRules(unread_card_policy=UnreadCardPolicy.RECORD_UNKNOWN), seed=5)
    table.open(wagered=(2,))
    table.deal(5)
    table.draw(unread=True)
    table.deal_all()
    # The stub is taken out of the shoe and counted by hand: a supervisor accepts a count
    # the shoe did not make (D1).
    table.record(table.procedure.deck_removed())
    table.count_stub()
    table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    table.record(table.procedure.close_round(by=DEALER))
    return table


def faults_everywhere() -> Table:
    table = Table(TableRules(dice_wager=True), seed=6)
    table.approve()
    table.record(table.procedure.jam())
    table.record(table.procedure.jam_cleared(card_left=False))
    table.record(table.procedure.clear_fault(by=supervisor("att-3")))
    table.open(wagered=(4,))
    table.deal(10)
    # A jam in the deal: the record cannot tell whether two cards passed as one (D2).
    table.record(table.procedure.jam())
    table.record(table.procedure.jam_cleared(card_left=False))
    table.record(table.procedure.clear_fault(by=supervisor("att-3")))
    table.record(table.procedure.link_lost(0.0))
    table.record(table.procedure.tick(LINK_GRACE))
    table.record(table.procedure.shoe_approved())
    table.record(table.procedure.clear_fault(by=supervisor("att-3")))
    table.deal_all()
    table.stub(2)
    table.record(table.procedure.deck_removed())
    table.record(table.procedure.stub_counted(2, by=DEALER))
    table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    table.record(table.procedure.misdeal_determination(True, by=DEALER))
    table.draw(gate=GateMode.LOCKED)
    table.record(table.procedure.clear_fault(by=supervisor("att-4")))
    return table


def foreign_card() -> Table:
    table = Table(TableRules(positions=6, cards_per_position=8, deck_size=52), seed=7)
    table.open(wagered=(2,))
    table.deal(47)
    table.draw(JOKER)
    return table


SCENARIOS: dict[str, Callable[[], Table]] = {
    "regular": regular,
    "misdeal_review": misdeal_review,
    "duplicate_card": duplicate_card,
    "door_then_next_round": door_then_next_round,
    "unknown_card": unknown_card,
    "faults_everywhere": faults_everywhere,
    "foreign_card": foreign_card,
}
