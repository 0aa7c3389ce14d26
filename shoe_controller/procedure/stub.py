"""After the deal (D1, D2, E2): the stub counted, the croupier's determination when it is not
4, and the round record once the croupier closes a dealt round."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shoe_controller.procedure import prompts
from shoe_controller.procedure.core import ModelCore
from shoe_controller.procedure.decisions import (
    DeterminationRecorded,
    FaultCode,
    Notice,
    NoticeCode,
    Outcome,
    RoundClosed,
    StubCounted,
)
from shoe_controller.procedure.inputs import Determination, EmptyShoe, StubCount, data
from shoe_controller.procedure.record import Irregularity

if TYPE_CHECKING:
    from transitions import EventData


class StubRules(ModelCore):
    def stub_reported(self, event: EventData) -> StubCount:
        """The count an input gives: the shoe's (from where it ran out) or the
        croupier's."""
        value = event.kwargs.get("data")
        if isinstance(value, EmptyShoe):
            return StubCount(max(value.drawn - self.round_record().dealt, 0), "shoe")
        return data(event, StubCount)

    def stub_complete(self, event: EventData) -> bool:
        return self.stub_reported(event).count == self.rules.stub_size

    def end_on_short_deck(self, event: EventData) -> None:
        drawn = data(event, EmptyShoe).drawn
        self.end_round(
            Outcome.VOID_DECK_REMOVED,
            f"the shoe ran out after {drawn} cards: the deck is short and leaves the table",
            "D2",
        )

    def fault_shoe_empty(self, event: EventData) -> None:
        self.raise_fault(
            Irregularity(
                FaultCode.SHOE_EMPTY, "the shoe reports no cards left before the deal", "A2"
            )
        )

    def note_stub_taken_out(self, event: EventData) -> None:
        self.round_record().note_stub(
            "the stub was taken out of the shoe without passing its reader"
        )

    def count_stub(self, event: EventData) -> None:
        """The shoe's count decides only when it is 4; otherwise the croupier counts by
        hand, and that count decides (D1, D2). A disagreement is a reader fault for
        maintenance, journaled as a notice."""
        stub = self.stub_reported(event)
        rnd = self.round_record()
        expected = self.rules.stub_size
        empty = event.kwargs.get("data")
        if isinstance(empty, EmptyShoe) and empty.drawn < rnd.dealt:
            rnd.note_stub(f"the shoe reports {empty.drawn} cards drawn but {rnd.dealt} were dealt")
        if stub.source == "shoe":
            rnd.shoe_stub_count = stub.count
        elif rnd.shoe_stub_count is not None and rnd.shoe_stub_count != stub.count:
            self.emit(
                Notice(
                    NoticeCode.STUB_COUNT_MISMATCH,
                    f"the shoe counted {rnd.shoe_stub_count} stub cards, the croupier "
                    f"{stub.count}: the shoe's reader needs maintenance",
                    "D2",
                )
            )
        rnd.stub_count = stub.count
        self.emit(StubCounted(stub.count, expected, stub.source))
        if stub.count == expected:
            self.end_round(
                Outcome.DEALT, f"the stub holds {stub.count} cards: the hands are in play", "D1"
            )

    def ask_stub_count(self, event: EventData) -> None:
        self.ask(prompts.stub_count(self.round_record().shoe_stub_count, self.rules.stub_size))

    def ask_misdeal(self, event: EventData) -> None:
        rnd = self.round_record()
        count = rnd.stub_count
        evidence = rnd.evidence(count)
        self.proposal = Outcome.VOID_DECK_REMOVED if evidence.conclusive else None
        expected = self.rules.stub_size
        self.ask(prompts.misdeal_determination(count, expected, self.proposal, evidence))

    def determined_misdealt(self, event: EventData) -> bool:
        return data(event, Determination).misdealt

    def record_determination(self, event: EventData) -> None:
        misdealt = data(event, Determination).misdealt
        count = self.round_record().stub_count
        self.emit(DeterminationRecorded(misdealt, self.proposal))
        if misdealt:
            self.end_round(
                Outcome.VOID_MISDEAL,
                f"the croupier determined a misdeal (stub of {count}): all hands void "
                "(Section 10.13)",
                "D2",
            )
        else:
            self.end_round(
                Outcome.VOID_DECK_REMOVED,
                f"not a misdeal but the stub holds {count}, not {self.rules.stub_size}: all "
                "hands void and the deck leaves the table",
                "D2",
            )

    # --- E2 ---------------------------------------------------------------------------

    def ask_close(self, event: EventData) -> None:
        self.ask(prompts.close_round())

    def publish_round_record(self, event: EventData) -> None:
        rnd = self.round_record()
        assert rnd.start is not None
        rnd.closed = True
        self.emit(
            RoundClosed(rnd.round_id, rnd.start, tuple(sorted(rnd.wagered)), rnd.closed_hands())
        )
