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
    StubAccepted,
    StubCounted,
)
from shoe_controller.procedure.deck import returned_irregularity
from shoe_controller.procedure.inputs import (
    Acceptance,
    Determination,
    EmptyShoe,
    StubCount,
    data,
)
from shoe_controller.procedure.machine import Phase
from shoe_controller.procedure.record import Defect, Irregularity

if TYPE_CHECKING:
    from transitions import EventData


class StubCallbacks(ModelCore):
    """The machine's callbacks (guards and side effects) for the stub, the determination and the
    round record (D1, D2, E2): a part of :class:`~.model.ProcedureModel`, named in the table of
    :mod:`.machine`."""

    # --- D1: the shoe passes the stub -------------------------------------------------

    def ask_wait_stub(self, event: EventData) -> None:
        self.ask(prompts.wait_stub())

    def end_on_short_deck(self, event: EventData) -> None:
        drawn = data(event, EmptyShoe).drawn
        self.remember_defect(self.defect_at_empty(event))
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
        rnd = self.round_record()
        read = rnd.stub_cards_read
        if read:
            rnd.note_stub(
                f"{read} stub cards passed the reader; the rest was taken out of the shoe"
            )
        else:
            rnd.note_stub("the stub was taken out of the shoe without passing its reader")

    def count_stub_by_shoe(self, event: EventData) -> None:
        """The shoe reports itself empty: its count is evidence and the proposal, never the
        determination (D1)."""
        drawn = data(event, EmptyShoe).drawn
        rnd = self.round_record()
        if drawn < rnd.dealt:
            rnd.note_stub(f"the shoe reports {drawn} cards drawn but {rnd.dealt} were dealt")
        count = max(drawn - rnd.dealt, 0)
        rnd.shoe_stub_count = count
        self.emit(StubCounted(count, self.rules.stub_size, "shoe"))

    # --- D3: the deck's defect against the decks removed ------------------------------

    def deck_came_back(self, event: EventData) -> bool:
        """The shoe ran out with every card read, and the cards missing (or read twice)
        match a deck removed from this table recently."""
        return self.returned_deck(self.defect_at_empty(event)) is not None

    def defect_at_empty(self, event: EventData) -> Defect:
        rnd = self.round_record()
        drawn = data(event, EmptyShoe).drawn
        if self.phase is Phase.DEALING:
            whole = drawn == rnd.dealt
        else:
            whole = drawn - rnd.dealt == len(rnd.stub_cards) and not rnd.stub_notes
        return rnd.defect(every_card_read=whole)

    def fault_deck_back(self, event: EventData) -> None:
        defect = self.defect_at_empty(event)
        returned = self.returned_deck(defect)
        assert returned is not None
        self.remember_defect(defect, returned)
        self.raise_fault(returned_irregularity(returned))

    # --- D1: the croupier's count, checked against three figures ----------------------

    def ask_stub_count(self, event: EventData) -> None:
        self.ask(prompts.stub_count(self.round_record().stub_figures()))

    def stub_agrees(self, event: EventData) -> bool:
        """Every figure agrees with the croupier's count, which is the stub's size."""
        count = data(event, StubCount).count
        figures = self.round_record().stub_figures()
        return figures.agree(count) and count == self.rules.stub_size

    def count_stub(self, event: EventData) -> None:
        """The croupier's count, recorded with the figures it was checked against, and
        as contradicting a conclusive reading that says otherwise (D4); when they all
        agree it decides, otherwise another person accepts it (or the croupier counts
        again)."""
        entered = data(event, StubCount)
        count = entered.count
        rnd = self.round_record()
        rnd.croupier_count = count
        rnd.count_entered_by = entered.by
        figures = rnd.stub_figures()
        agrees = figures.agree(count) and count == self.rules.stub_size
        contradicts = rnd.against_reading(count)
        self.emit(
            StubCounted(count, self.rules.stub_size, "croupier", figures, agrees, contradicts)
        )
        if agrees:
            self.decide_stub(count)

    def ask_stub_accepted(self, event: EventData) -> None:
        self.ask(prompts.stub_accepted(self.round_record().stub_figures()))

    def accepted_by_another(self, event: EventData) -> bool:
        """The person who entered the count does not also accept it (E5)."""
        return data(event, Acceptance).by != self.round_record().count_entered_by

    def accepted_stub(self) -> int:
        """The stub's size once a count the figures disagree with is accepted: a
        conclusive reading of a deck of the wrong size decides it whatever anyone counts
        (D4); otherwise the croupier's count, which two people have now given (E5)."""
        rnd = self.round_record()
        read = rnd.read_stub()
        if read is not None and read != self.rules.stub_size:
            return read
        assert rnd.croupier_count is not None
        return rnd.croupier_count

    def accepted_stub_complete(self, event: EventData) -> bool:
        return self.accepted_stub() == self.rules.stub_size

    def accept_stub(self, event: EventData) -> None:
        rnd = self.round_record()
        count = rnd.croupier_count
        assert count is not None
        self.emit(StubAccepted(count, rnd.stub_figures(), rnd.against_reading(count)))
        self.decide_stub(self.accepted_stub())

    def decide_stub(self, count: int) -> None:
        """The stub's count is decided: 4 puts the hands in play (D1); otherwise the
        croupier determines whether the cards were misdealt (D2). A shoe's count that
        disagrees with a reading that is not conclusive is a reader fault for
        maintenance; one that agrees with a conclusive reading is the reader at work."""
        rnd = self.round_record()
        rnd.stub_count = count
        shoe = rnd.shoe_stub_count
        if shoe is not None and shoe != count and not rnd.reading_conclusive():
            self.emit(
                Notice(
                    NoticeCode.STUB_COUNT_MISMATCH,
                    f"the shoe counted {shoe} stub cards, the croupier "
                    f"{count}: the shoe's reader needs maintenance",
                    "D1",
                )
            )
        if count == self.rules.stub_size:
            self.end_round(
                Outcome.DEALT, f"the stub holds {count} cards: the hands are in play", "D1"
            )

    # --- D2, D4: the determination ------------------------------------------------------

    def ask_misdeal(self, event: EventData) -> None:
        rnd = self.round_record()
        count = rnd.stub_count
        evidence = rnd.evidence(count)
        read = rnd.reading_conclusive()
        leaves = evidence.conclusive or read
        self.proposal = Outcome.VOID_DECK_REMOVED if leaves else None
        expected = self.rules.stub_size
        self.ask(prompts.misdeal_determination(count, expected, self.proposal, evidence, read=read))

    def determined_misdealt(self, event: EventData) -> bool:
        return data(event, Determination).misdealt

    def deck_leaves_whatever_determined(self, event: EventData) -> bool:
        """The record shows every position complete (a stub other than 4 is then the
        deck's count), or the reading shows a deck of the wrong size (D2, D4): the deck
        leaves the table whatever the determination."""
        rnd = self.round_record()
        return rnd.misdeal_excluded(rnd.stub_count) or rnd.reading_conclusive()

    def record_determination(self, event: EventData) -> None:
        """Misdealt (some position has more or fewer than 7): all hands void (Section
        10.13). Not misdealt, or a record that shows every position complete, or a reading
        of a deck of the wrong size, whatever the determination: all hands void and the
        deck leaves the table. Only a misdeal against a record that rules it out is
        recorded as contradicting it."""
        misdealt = data(event, Determination).misdealt
        rnd = self.round_record()
        count = rnd.stub_count
        contradicts = misdealt and rnd.misdeal_excluded(count)
        self.emit(DeterminationRecorded(misdealt, self.proposal, contradicts))
        if misdealt and not self.deck_leaves_whatever_determined(event):
            self.end_round(
                Outcome.VOID_MISDEAL,
                f"the croupier determined a misdeal (stub of {count}): all hands void "
                "(Section 10.13)",
                "D2",
            )
            return
        self.remember_defect(rnd.defect(every_card_read=rnd.stub_read_whole()))
        if contradicts:
            reason = (
                "a misdeal was determined against the record, which shows every card of the "
                f"deal read and every position with {self.rules.cards_per_position} cards: the "
                f"stub of {count} means the deck's count is wrong; all hands void and the deck "
                "leaves the table"
            )
        elif misdealt:
            reason = (
                f"a misdeal was determined, and the shoe read every card of a deck of "
                f"{rnd.dealt + count}, not {self.rules.deck_size}: all hands void and the deck "
                "leaves the table"
            )
        else:
            reason = (
                f"not a misdeal but the stub holds {count}, not {self.rules.stub_size}: all "
                "hands void and the deck leaves the table"
            )
        self.end_round(Outcome.VOID_DECK_REMOVED, reason, "D2")

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
