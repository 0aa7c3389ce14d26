"""The event sequencer alone: what it owes the shoe and what it saw, each taken once."""

from __future__ import annotations

import pytest

from firmware_protocol import Flags, Packet
from shoe_controller.link.events import LinkEvent, ShoeEvent
from shoe_controller.link.sequence import EventSequencer
from shoe_controller.link.stats import LinkStats
from tests.link.harness import card


class Sequenced:
    """A sequencer begun at the shoe's event 1, and what it emitted."""

    def __init__(self) -> None:
        self.emitted: list[LinkEvent] = []
        self.seq = EventSequencer(self.emitted.append, reorder_window=8, stats=LinkStats())
        self.seq.begin(1)

    def receive(self, *numbers: int) -> None:
        for number in numbers:
            self.seq.receive(Packet(1, number, Flags.EVENT, card(number)))

    def delivered(self) -> list[int]:
        out = [e.seq for e in self.emitted if isinstance(e, ShoeEvent)]
        self.emitted.clear()
        return out


@pytest.fixture
def sequenced() -> Sequenced:
    return Sequenced()


def test_nothing_is_owed_before_the_consumer_acknowledges(sequenced: Sequenced) -> None:
    sequenced.receive(1, 2)
    assert sequenced.seq.take_ack() is None


def test_an_acknowledgement_is_owed_once(sequenced: Sequenced) -> None:
    sequenced.receive(1, 2, 3)
    sequenced.seq.acknowledge(2)
    assert sequenced.seq.take_ack() == 2
    assert sequenced.seq.take_ack() is None
    sequenced.seq.acknowledge(2)  # cumulative: nothing new to tell
    assert sequenced.seq.take_ack() is None


def test_an_acknowledged_event_sent_again_is_acknowledged_again(sequenced: Sequenced) -> None:
    """The shoe sends again what we acknowledged: our AckEvents was lost."""
    sequenced.receive(1, 2)
    sequenced.seq.acknowledge(2)
    assert sequenced.seq.take_ack() == 2
    sequenced.receive(2)
    assert sequenced.seq.take_ack() == 2


def test_a_gap_is_seen_once(sequenced: Sequenced) -> None:
    sequenced.receive(1)
    assert not sequenced.seq.take_gap()
    sequenced.receive(3)  # 2 was lost on the line
    assert sequenced.seq.take_gap()
    assert not sequenced.seq.take_gap()
    sequenced.receive(2)
    assert sequenced.delivered() == [1, 2, 3]
    assert not sequenced.seq.take_gap()


def test_a_lost_connection_forgets_the_held_events_and_the_owed_ack(
    sequenced: Sequenced,
) -> None:
    """After a loss the shoe sends again what it holds and its Hello says what it holds,
    which is owed the acknowledgement again if it needs one (resume)."""
    sequenced.receive(1, 3)
    sequenced.seq.acknowledge(1)
    sequenced.seq.connection_lost()
    assert sequenced.seq.take_ack() is None
    sequenced.receive(2)
    assert sequenced.delivered() == [1, 2]  # 3, held past the gap, is sent again
    sequenced.seq.resume(1, "not_held")
    assert sequenced.seq.take_ack() == 1
