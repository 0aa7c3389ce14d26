"""The fault plan in the sans-I/O shoe, on a hand-turned clock: what each fault sends,
when, and what the shoe's own record says happened."""

from __future__ import annotations

import pytest

from firmware_protocol import (
    SUPPORTED_VERSIONS,
    UNREADABLE,
    AckEvents,
    CardDrawn,
    DoorClosed,
    DoorOpened,
    DoubleCard,
    Flags,
    GateMode,
    GetIdentity,
    Heartbeat,
    Hello,
    Jam,
    JamCleared,
    Ping,
    SetGate,
    StreamDecoder,
)
from shoe_controller.simulator import DrawKind, SimOptions, SimulatedShoe
from tests.simulator.bench import Bench, cards, messages

QUIET = "heartbeat=1000"


def deal(bench: Bench, limit: int = 49) -> None:
    bench.send(SetGate(GateMode.DEAL, limit), seq=900 + bench.shoe.draw_index)


def test_misread_reports_an_unreadable_card() -> None:
    bench = Bench(f"faults=misread@2&{QUIET}")
    deal(bench, 3)
    assert [c.card for c in cards(bench.take())][1] == UNREADABLE
    record = bench.shoe.draws[1]
    assert record.kind is DrawKind.MISREAD and record.reported == UNREADABLE
    assert record.card != UNREADABLE
    assert bench.shoe.counters.misreads == 1


def test_undetected_double_counts_one_card_against_the_gate() -> None:
    bench = Bench(f"faults=double@2&{QUIET}")
    deal(bench, 3)
    assert [c.draw_index for c in cards(bench.take())] == [1, 2, 3]
    assert bench.shoe.cards_pulled == 4 and bench.shoe.cards_left == 49
    assert [d.kind for d in bench.shoe.draws] == [
        DrawKind.READ,
        DrawKind.READ,
        DrawKind.UNSEEN,
        DrawKind.READ,
    ]


def test_detected_double_counts_two_cards_against_the_gate() -> None:
    bench = Bench(f"faults=double_detected@2&{QUIET}")
    deal(bench, 3)
    packets = bench.take()
    assert DoubleCard(2) in messages(packets)
    assert [c.draw_index for c in cards(packets)] == [1]
    assert bench.shoe.gate is GateMode.LOCKED and bench.shoe.draw_index == 3


def test_jam_blocks_the_deal_until_the_croupier_clears_it() -> None:
    bench = Bench(f"faults=jam@3&jam_for=0.5&{QUIET}")
    deal(bench)
    assert [type(m) for m in messages(bench.take())][-1] is Jam
    assert bench.shoe.jammed and bench.shoe.draw_index == 2
    bench.advance(0.375)
    assert bench.shoe.jammed
    packets = bench.advance(0.125)
    assert messages(packets)[0] == JamCleared(False)
    assert cards(packets)[0].draw_index == 3
    assert bench.shoe.draw_index == 49 and bench.shoe.counters.jams == 1


def test_door_opens_after_its_card_and_closes_after_door_for() -> None:
    bench = Bench(f"faults=door@3&door_for=0.5&{QUIET}")
    deal(bench)
    assert messages(bench.take())[-1] == DoorOpened()
    assert bench.shoe.draw_index == 3
    packets = bench.advance(0.5)
    assert messages(packets)[0] == DoorClosed()
    assert bench.shoe.draw_index == 49


def test_early_draw_at_a_later_card_waits_for_the_locked_gate() -> None:
    bench = Bench(f"faults=early_draw@50&{QUIET}")
    deal(bench)  # 49 cards; the gate locks; then the croupier pulls the 50th anyway
    drawn = cards(bench.take())
    assert len(drawn) == 50
    assert (drawn[-1].draw_index, drawn[-1].gate_mode) == (50, GateMode.LOCKED)
    bench.advance(1)
    assert bench.shoe.draw_index == 50  # once only


def test_disconnect_loses_the_wire_and_keeps_the_events() -> None:
    bench = Bench(f"faults=disconnect@3&{QUIET}")
    bench.take()
    packets = bench.send(SetGate(GateMode.DEAL, 5), seq=2)
    # Everything the shoe had put on the wire when the link dropped is lost...
    assert [c.draw_index for c in cards(packets)] == [4, 5]
    assert bench.shoe.take_link_drop() and not bench.shoe.take_link_drop()
    # ...and comes again when a host connects.
    resent = bench.send(GetIdentity(SUPPORTED_VERSIONS), seq=3)[1:]
    assert [p.seq for p in resent] == [1, 2, 3, 4, 5, 6]
    assert all(p.flags & Flags.RETRANSMIT for p in resent)


@pytest.mark.parametrize("persist", [True, False])
def test_reboot_keeps_or_loses_unacknowledged_events(persist: bool) -> None:
    bench = Bench(f"faults=reboot@3&persist={int(persist)}&{QUIET}")
    boot_id = bench.shoe.boot_id
    bench.take()
    bench.send(AckEvents(1), seq=0)
    packets = bench.send(SetGate(GateMode.DEAL, 49), seq=2)
    (hello,) = messages(packets, Hello)
    assert isinstance(hello, Hello) and hello.boot_id != boot_id
    assert bench.shoe.gate is GateMode.LOCKED and bench.shoe.draw_index == 3
    assert bench.shoe.counters.power_cycles == 2
    after_hello = [p.seq for p in packets if p.flags & Flags.EVENT]
    if persist:
        assert hello.next_event_seq == 2
        assert after_hello == [2, 3, 4] and bench.shoe.unacked == [2, 3, 4]
    else:
        assert hello.next_event_seq == 5
        assert after_hello == [] and bench.shoe.unacked == []
        bench.send(SetGate(GateMode.DEAL, 4), seq=3)  # one more card: draw index 4
        assert bench.shoe.unacked == [5]  # sequence numbers are never reused


def test_silent_shoe_sends_nothing_hears_nothing_then_resumes() -> None:
    bench = Bench("faults=silent@2&silent_for=2&heartbeat=0.5")
    bench.take()
    bench.send(SetGate(GateMode.DEAL, 49), seq=2)
    assert bench.shoe.stalled and bench.shoe.draw_index == 2
    bench.take()
    for _ in range(7):
        assert bench.advance(0.25) == []
        assert bench.send(Ping(), seq=3) == []
    assert bench.shoe.ignored_bytes > 0 and bench.shoe.draw_index == 2
    packets = bench.advance(0.25)
    assert not bench.shoe.stalled
    assert isinstance(packets[-1].message, Heartbeat)
    assert bench.shoe.draw_index == 49
    assert any(p.flags & Flags.RETRANSMIT and p.seq == 2 for p in packets)


def test_a_fault_fires_once() -> None:
    bench = Bench(f"faults=jam@2&jam_for=0&{QUIET}")
    deal(bench)
    bench.advance(0)
    assert messages(bench.received).count(Jam()) == 1
    assert bench.shoe.draw_index == 49


def stream(query: str, steps: int = 20) -> tuple[list[bytes], SimulatedShoe]:
    bench = Bench(query)
    deal(bench, 0)
    for _ in range(steps):
        bench.advance(0.25)
    return bench.reads, bench.shoe


def test_drop_loses_frames() -> None:
    reads, shoe = stream("faults=drop=1")
    assert reads == [] and shoe.line_stats.dropped == shoe.line_stats.frames > 50


def test_dup_sends_each_frame_twice() -> None:
    reads, _ = stream(f"faults=dup=1&{QUIET}", steps=0)
    decoder = StreamDecoder()
    decoder.receive_data(b"".join(reads))
    packets = list(decoder)
    assert packets[0::2] == packets[1::2]


def test_split_cuts_frames_into_pieces() -> None:
    reads, shoe = stream(f"faults=split=1&{QUIET}", steps=0)
    assert len(reads) > shoe.line_stats.split > 50
    assert not all(r.endswith(b"\x00") for r in reads)
    decoder = StreamDecoder()
    for piece in reads:
        decoder.receive_data(piece)
    assert len(cards(list(decoder))) == 53


def test_noise_corrupts_bytes() -> None:
    reads, shoe = stream(f"faults=noise=0.05&{QUIET}", steps=0)
    decoder = StreamDecoder()
    decoder.receive_data(b"".join(reads))
    assert shoe.line_stats.corrupted_bytes > 0
    assert decoder.stats.frames_dropped > 0


def test_line_faults_are_seeded_and_leave_the_deck_alone() -> None:
    query = "seed=5&faults=noise=0.02,drop=0.1,dup=0.1,split=0.2"
    first, shoe = stream(query)
    again, _ = stream(query)
    assert first == again
    _, clean = stream("seed=5")
    assert [d.card for d in shoe.draws] == [d.card for d in clean.draws]


def test_controls_work_before_the_first_tick() -> None:
    shoe = SimulatedShoe(SimOptions(seed=1))
    shoe.open_door()  # powers the shoe on at time 0
    shoe.tick(0.5)
    assert shoe.door_open and shoe.counters.door_openings == 1
    assert isinstance(shoe.events[0][1], DoorOpened)
    assert not any(isinstance(m, CardDrawn) for _, m in shoe.events)
