"""The simulated shoe's conversation, on a hand-turned clock: replies, events,
retransmission, heartbeats, the gate and its limit."""

from __future__ import annotations

import pytest

from firmware_protocol import (
    SUPPORTED_VERSIONS,
    Ack,
    AckEvents,
    Capability,
    Counters,
    DeckLoaded,
    Flags,
    GateMode,
    GetCounters,
    GetIdentity,
    Heartbeat,
    Hello,
    Message,
    Nak,
    NakReason,
    Ping,
    Reset,
    RunSelfTest,
    SelfTestReport,
    SetDisplay,
    SetGate,
    SetTestMode,
    ShoeEmpty,
    Unknown,
    Verify,
    VerifyResult,
)
from shoe_controller.simulator import firmware
from tests.simulator.bench import Bench, cards, messages

QUIET = "heartbeat=1000"


def test_power_on_says_hello_then_the_croupier_loads_a_deck() -> None:
    bench = Bench()
    hello, deck = bench.take()
    assert isinstance(hello.message, Hello)
    assert (hello.seq, hello.flags) == (0, Flags.NONE)
    assert (deck.message, deck.seq, deck.flags) == (DeckLoaded(), 1, Flags.EVENT)


@pytest.mark.parametrize(("persist", "capable"), [("1", True), ("0", False)])
def test_get_identity_is_answered_with_the_command_seq(persist: str, capable: bool) -> None:
    bench = Bench(f"persist={persist}&serial=S-1")
    bench.take()
    (reply, resent) = bench.send(GetIdentity(SUPPORTED_VERSIONS), seq=7)
    assert (reply.seq, reply.flags) == (7, Flags.RESPONSE)
    hello = reply.message
    assert isinstance(hello, Hello)
    assert hello == Hello(
        SUPPORTED_VERSIONS,
        "ES-SIM",
        "S-1",
        "sim-1",
        "1.0.0",
        firmware.DIGEST,
        hello.capabilities,
        bench.shoe.boot_id,
        1,
    )
    assert bool(hello.capabilities & Capability.PERSISTENT_EVENTS) is capable
    assert hello.capabilities & Capability.STUB_MODE
    # A host opens every connection with GetIdentity: it gets the events it missed.
    assert (resent.message, resent.flags) == (DeckLoaded(), Flags.EVENT | Flags.RETRANSMIT)


@pytest.mark.parametrize(
    ("command", "reply"),
    [
        (Ping(), Ack()),
        (SetDisplay("PLACE BETS"), Ack()),
        (SetGate(GateMode.LOCKED), Ack()),
        (SetTestMode(True), Ack()),
        (Verify(b"x" * 15), Nak(NakReason.BAD_ARGUMENT, "seed of 15 bytes; use 16..64")),
        (Verify(b"x" * 65), Nak(NakReason.BAD_ARGUMENT, "seed of 65 bytes; use 16..64")),
        (Verify(b"x" * 16), VerifyResult(b"x" * 16, firmware.keyed_digest(b"x" * 16))),
        (Unknown(0x55, b"\x01"), Nak(NakReason.UNKNOWN_COMMAND, "Unknown is no command")),
        (Heartbeat(0, 0, 0), Nak(NakReason.UNKNOWN_COMMAND, "Heartbeat is no command")),
    ],
)
def test_commands_are_answered(command: Message, reply: Message) -> None:
    bench = Bench()
    bench.take()
    (packet,) = bench.send(command, seq=9)
    assert (packet.message, packet.seq, packet.flags) == (reply, 9, Flags.RESPONSE)


def test_display_text_is_kept() -> None:
    bench = Bench()
    bench.send(SetDisplay("NO MORE BETS"))
    assert bench.shoe.display == "NO MORE BETS"


def test_a_host_of_another_version_gets_hello_and_nothing_else() -> None:
    bench = Bench()
    bench.take()
    (hello, _) = bench.send(GetIdentity((9,)), seq=3, version=9)
    assert isinstance(hello.message, Hello)
    assert (hello.version, hello.message.protocol_versions) == (1, SUPPORTED_VERSIONS)
    assert bench.send(Ping(), seq=4, version=9) == []
    assert bench.shoe.host_stats.malformed == 1


def test_self_test_reports_every_step_then_counters() -> None:
    bench = Bench()
    bench.take()
    reports = messages(bench.send(RunSelfTest(), seq=4))
    assert all(isinstance(r, SelfTestReport) and r.passed for r in reports)
    assert [(r.step, r.total) for r in reports if isinstance(r, SelfTestReport)] == [
        (1, 4),
        (2, 4),
        (3, 4),
        (4, 4),
    ]
    bench.send(SetGate(GateMode.DEAL, 3), seq=5)
    (counters,) = messages(bench.send(GetCounters(), seq=6))
    assert counters == Counters(3, 0, 0, 0, 1)


def test_events_have_their_own_sequence_from_one() -> None:
    bench = Bench(QUIET)
    bench.take()
    packets = bench.send(SetGate(GateMode.DEAL, 5), seq=40)
    ack, *events = packets
    assert (ack.message, ack.seq) == (Ack(), 40)
    assert [p.seq for p in events] == [2, 3, 4, 5, 6]
    assert all(p.flags == Flags.EVENT for p in events)
    assert [c.draw_index for c in cards(events)] == [1, 2, 3, 4, 5]
    assert all(c.gate_mode is GateMode.DEAL and 90 <= c.quality <= 100 for c in cards(events))


@pytest.mark.parametrize("fast_recovery", ["0", "1"])
def test_unacknowledged_events_are_resent_with_back_off(fast_recovery: str) -> None:
    # Before any round trip is measured, a shoe with FAST_RECOVERY times as one without.
    bench = Bench(f"{QUIET}&fast_recovery={fast_recovery}")
    bench.take()  # DeckLoaded, seq 1, sent at t0
    resent_at = []
    start = bench.now
    for _ in range(700):
        for packet in bench.advance(0.01):
            assert (packet.seq, packet.flags) == (1, Flags.EVENT | Flags.RETRANSMIT)
            resent_at.append(round(bench.now - start, 2))
    assert resent_at == [0.25, 0.75, 1.75, 3.75, 5.75]


def test_acknowledgement_stops_resending_and_resets_the_back_off() -> None:
    bench = Bench(f"{QUIET}&fast_recovery=0")
    bench.take()
    bench.advance(0.25)
    bench.advance(0.5)  # two retransmissions: the wait is now 1 s
    bench.send(SetGate(GateMode.DEAL, 1), seq=2)  # card: seq 2
    assert bench.send(AckEvents(1), seq=0) == []  # AckEvents itself is not answered
    assert bench.shoe.unacked == [2]
    assert [p.seq for p in bench.advance(0.25)] == [2]  # back to the base timeout
    bench.send(AckEvents(2), seq=0)
    assert bench.advance(10) == []
    assert bench.shoe.acknowledged == 2


def test_heartbeat_every_period() -> None:
    bench = Bench("heartbeat=0.5")
    bench.take()
    bench.send(AckEvents(1), seq=0)
    beats = []
    for _ in range(8):  # steps of 1/4 s keep the clock exact
        beats += [p for p in bench.advance(0.25) if isinstance(p.message, Heartbeat)]
    assert [p.message for p in beats] == [
        Heartbeat(500, 0, 1),
        Heartbeat(1000, 0, 1),
        Heartbeat(1500, 0, 1),
        Heartbeat(2000, 0, 1),
    ]
    assert all((p.seq, p.flags) == (0, Flags.NONE) for p in beats)


def test_heartbeat_counts_unacknowledged_events() -> None:
    bench = Bench("heartbeat=0.5")
    bench.send(SetGate(GateMode.DEAL, 3), seq=2)
    beat = messages(bench.advance(0.5), Heartbeat)[-1]
    assert beat == Heartbeat(500, 4, 4)


def test_the_gate_locks_by_itself_at_its_limit() -> None:
    bench = Bench(QUIET)
    bench.send(SetGate(GateMode.DEAL, 49), seq=2)
    assert len(cards(bench.take())) == 49
    assert bench.shoe.gate is GateMode.LOCKED and bench.shoe.cards_left == 4
    bench.advance(1)
    assert bench.shoe.draw_index == 49


def test_stub_mode_lets_the_rest_out_and_reports_the_empty_shoe() -> None:
    bench = Bench(QUIET)
    bench.send(SetGate(GateMode.DEAL, 49), seq=2)
    bench.take()
    packets = bench.send(SetGate(GateMode.STUB), seq=3)
    stub = cards(packets)
    assert [(c.draw_index, c.gate_mode) for c in stub] == [
        (50, GateMode.STUB),
        (51, GateMode.STUB),
        (52, GateMode.STUB),
        (53, GateMode.STUB),
    ]
    assert packets[-1].message == ShoeEmpty(53)
    assert bench.shoe.gate is GateMode.STUB  # no limit: it stays open until the host locks


def test_a_repeated_command_is_answered_again_not_executed_again() -> None:
    bench = Bench(QUIET)
    bench.send(SetGate(GateMode.DEAL, 10), seq=5)
    assert bench.shoe.gate is GateMode.LOCKED and bench.shoe.draw_index == 10
    (again,) = bench.send(SetGate(GateMode.DEAL, 10), seq=5, flags=Flags.RETRANSMIT)
    assert (again.message, again.seq) == (Ack(), 5)
    assert again.flags == Flags.RESPONSE | Flags.RETRANSMIT
    assert bench.shoe.draw_index == 10  # the gate did not open again
    bench.send(SetGate(GateMode.DEAL, 20), seq=6)  # the limit is a draw index
    assert bench.shoe.draw_index == 20


@pytest.mark.parametrize(
    ("prepare", "reason"), [("open_door", "the door is open"), ("jam", "the shoe is jammed")]
)
def test_gate_stays_locked_while_door_open_or_jammed(prepare: str, reason: str) -> None:
    bench = Bench(QUIET)
    getattr(bench.shoe, prepare)()
    bench.advance(0)
    bench.take()
    (reply,) = bench.send(SetGate(GateMode.DEAL, 49), seq=2)
    assert reply.message == Nak(NakReason.NOT_NOW, reason)
    assert bench.shoe.gate is GateMode.LOCKED


def test_busy_answers_the_first_gate_openings_with_busy_and_a_new_number_gets_through() -> None:
    bench = Bench(f"busy=2&{QUIET}")
    assert bench.send(SetGate(GateMode.LOCKED), seq=2)[0].message == Ack()  # not counted
    for seq in (3, 4):
        (reply,) = bench.send(SetGate(GateMode.DEAL, 10), seq=seq)
        assert reply.message == Nak(NakReason.BUSY, "the gate is still moving")
        assert bench.shoe.gate is GateMode.LOCKED and bench.shoe.draw_index == 0
    # The same number again gets the same answer (a repeated command is not executed).
    (again,) = bench.send(SetGate(GateMode.DEAL, 10), seq=4, flags=Flags.RETRANSMIT)
    assert again.message.reason is NakReason.BUSY  # type: ignore[attr-defined]
    reply, *cards_drawn = bench.send(SetGate(GateMode.DEAL, 10), seq=5)
    assert reply.message == Ack() and bench.shoe.draw_index == 10 == len(cards_drawn)


def test_the_model_is_an_option() -> None:
    bench = Bench(f"model=ES-SIM-2&serial=SN-7&{QUIET}")
    hello, _deck_loaded = bench.send(GetIdentity(SUPPORTED_VERSIONS), seq=1)
    assert isinstance(hello.message, Hello)
    assert (hello.message.model, hello.message.serial_number) == ("ES-SIM-2", "SN-7")


def test_a_full_window_of_unacknowledged_events_stops_the_deal() -> None:
    bench = Bench(f"window=5&{QUIET}")
    bench.send(SetGate(GateMode.DEAL, 0), seq=2)
    assert bench.shoe.unacked == [1, 2, 3, 4, 5]
    assert bench.shoe.draw_index == 4 and not bench.shoe.gate_allows
    bench.send(AckEvents(3), seq=0)
    assert bench.shoe.unacked == [4, 5, 6, 7, 8]
    assert bench.shoe.draw_index == 7


def test_test_mode_is_refused_while_a_deck_is_dealt() -> None:
    bench = Bench(QUIET)
    bench.send(SetGate(GateMode.DEAL, 2), seq=2)
    bench.take()
    (reply,) = bench.send(SetTestMode(True), seq=3)
    assert reply.message == Nak(NakReason.NOT_NOW, "a deck is being dealt")
    (reply,) = bench.send(SetTestMode(False), seq=4)
    assert reply.message == Ack()
    assert not bench.shoe.test_mode


def test_reset_acknowledges_then_restarts() -> None:
    bench = Bench(QUIET)
    bench.send(SetGate(GateMode.DEAL, 0), seq=2)
    boot_id = bench.shoe.boot_id
    bench.send(SetGate(GateMode.DEAL, 0), seq=3)
    bench.take()
    ack, hello, *resent = bench.send(Reset(), seq=4)
    assert (ack.message, ack.seq) == (Ack(), 4)
    assert isinstance(hello.message, Hello) and hello.seq == 0
    assert hello.message.boot_id not in (0, boot_id)
    assert hello.message.next_event_seq == 1  # it kept every unacknowledged event
    # Then the rebooted shoe, empty with its gate locked, gets the next deck.
    assert [p.seq for p in resent] == list(range(1, 57))
    assert resent[-1].message == DeckLoaded() and resent[-1].flags == Flags.EVENT
    assert bench.shoe.gate is GateMode.LOCKED and bench.shoe.reboots == 1
    assert bench.shoe.counters.power_cycles == 2


def test_time_never_runs_backwards() -> None:
    bench = Bench("heartbeat=0.5")
    bench.advance(0.4)
    bench.shoe.tick(bench.now - 50)  # a caller with another clock
    assert bench.shoe.now == bench.now
    assert messages(bench.advance(0.1), Heartbeat)
