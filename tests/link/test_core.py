"""The sans-I/O link core, driven by hand-made frames and an explicit clock."""

from __future__ import annotations

import itertools
import random

import pytest

from firmware_protocol import (
    SUPPORTED_VERSIONS,
    Ack,
    AckEvents,
    Counters,
    DeckLoaded,
    Flags,
    GateMode,
    GetCounters,
    GetIdentity,
    Hello,
    Message,
    NakReason,
    Ping,
    RunSelfTest,
    SelfTestReport,
    SetDisplay,
    SetGate,
    Unknown,
    encode_frame,
)
from firmware_protocol.timing import (
    BUSY_RETRY_DELAY,
    COMMAND_ATTEMPTS,
    COMMAND_TIMEOUT,
    SILENCE_LIMIT,
)
from shoe_controller.link.core import (
    COMMAND_TIMEOUT_MAX,
    HANDSHAKE_TIMEOUT,
    LinkCore,
    LinkState,
)
from shoe_controller.link.events import (
    CommandCompleted,
    CommandFailed,
    Connected,
    EventsLost,
    LinkDown,
    LinkEvent,
    ProtocolMismatch,
    ShoeEvent,
    ShoeReport,
)
from shoe_controller.link.sequence import ResumePoint
from tests.link import frames
from tests.link.harness import Harness, card


@pytest.fixture
def link() -> Harness:
    return Harness()


# -- handshake ------------------------------------------------------------------------


def test_handshake_records_identity_and_version(link: Harness) -> None:
    seq = link.start()
    assert link.core.state is LinkState.HANDSHAKING
    link.feed(frames.hello(seq=seq, serial="SN-42", firmware="1.4.2"))
    (connected,) = link.events()
    assert isinstance(connected, Connected)
    assert connected.version == 1 and not connected.rebooted
    identity = connected.identity
    assert (identity.model, identity.serial_number, identity.firmware_version) == (
        "ES-7",
        "SN-42",
        "1.4.2",
    )
    assert identity.firmware_digest == frames.DIGEST.hex()
    assert link.core.state is LinkState.CONNECTED


def test_get_identity_lists_host_versions_and_the_common_one_is_chosen(link: Harness) -> None:
    link.core.start(link.now)
    (request,) = link.sent()
    assert request.message == GetIdentity(SUPPORTED_VERSIONS)
    link.feed(frames.hello(seq=request.seq, versions=(*SUPPORTED_VERSIONS, 200)))
    (connected,) = link.events()
    assert isinstance(connected, Connected) and connected.version == max(SUPPORTED_VERSIONS)
    link.core.send_command(Ping(), link.now)
    (ping,) = link.sent()
    assert ping.version == connected.version


def test_host_versions_must_be_ones_the_wire_format_speaks() -> None:
    with pytest.raises(ValueError, match="200"):
        LinkCore(host_versions=(1, 200))


def test_incompatible_versions_are_refused_naming_both_sides() -> None:
    link = Harness(LinkCore(host_versions=(1,)))
    seq = link.start()
    link.feed(frames.hello(seq=seq, versions=(2, 3)))
    (mismatch,) = link.events()
    assert isinstance(mismatch, ProtocolMismatch)
    assert mismatch.shoe_versions == (2, 3) and mismatch.host_versions == (1,)
    text = str(mismatch)
    assert "2, 3" in text and "speaks 1" in text
    assert link.core.state is LinkState.INCOMPATIBLE
    # Nothing flows: events ignored, commands refused, the same Hello not reported twice.
    link.feed(frames.event(1, DeckLoaded()), frames.hello(versions=(2, 3), flags=Flags.NONE))
    handle = link.core.send_command(Ping(), link.now)
    assert link.events() == [CommandFailed(handle, "incompatible")]
    assert link.sent() == []
    # The shoe is updated and restarts: its new Hello connects.
    link.feed(frames.hello(versions=(1, 2), boot_id=2, flags=Flags.NONE))
    (connected,) = link.events()
    assert isinstance(connected, Connected) and connected.version == 1


def test_a_live_shoe_is_asked_who_it_is_until_the_handshake_timeout(link: Harness) -> None:
    link.start()
    asked = 1
    while not (events := link.events()):
        link.advance(0.25)
        link.feed(frames.heartbeat())  # alive, so not silent; but the Hello never comes
        asked += sum(isinstance(p.message, GetIdentity) for p in link.sent())
    (down,) = events
    assert down == LinkDown("no_answer", down.detail)
    assert HANDSHAKE_TIMEOUT <= link.now - 100.0 <= HANDSHAKE_TIMEOUT + COMMAND_TIMEOUT_MAX
    assert asked >= 8  # every 2 s at most, not just the 4 attempts of a command
    assert link.core.state is LinkState.DOWN


def test_events_before_the_handshake_are_not_delivered(link: Harness) -> None:
    seq = link.start()
    link.feed(frames.event(1, DeckLoaded()))
    assert link.events() == []
    assert link.core.stats.events_before_handshake == 1
    link.feed(frames.hello(seq=seq, next_event_seq=1), frames.event(1, DeckLoaded()))
    assert [type(e) for e in link.events()] == [Connected, ShoeEvent]


# -- commands -------------------------------------------------------------------------


def test_command_acknowledged(link: Harness) -> None:
    link.connect()
    handle = link.core.send_command(SetGate(GateMode.DEAL, 49), link.now)
    (frame,) = link.sent()
    assert frame.message == SetGate(GateMode.DEAL, 49) and frame.seq == handle.seq
    link.feed(frames.ack(handle.seq))
    (done,) = link.events()
    assert isinstance(done, CommandCompleted) and done.handle is handle


def test_command_refused(link: Harness) -> None:
    link.connect()
    handle = link.core.send_command(SetGate(GateMode.DEAL), link.now)
    link.feed(frames.nak(handle.seq, NakReason.NOT_NOW, "door open"))
    (failed,) = link.events()
    assert isinstance(failed, CommandFailed)
    assert failed.reason == "nak" and failed.nak is not None
    assert failed.nak.reason is NakReason.NOT_NOW
    assert "door open" in str(failed)


def test_command_completed_by_its_reply(link: Harness) -> None:
    link.connect()
    handle = link.core.send_command(GetCounters(), link.now)
    counters = Counters(1, 2, 3, 4, 5)
    link.feed(frames.reply(handle.seq, counters))
    assert link.events() == [CommandCompleted(handle, counters)]
    # The same reply again (the shoe answered a retransmission too) is dropped.
    link.feed(frames.reply(handle.seq, counters), frames.ack(handle.seq + 7))
    assert link.events() == []
    assert link.core.stats.duplicate_replies == 1
    assert link.core.stats.stale_replies == 1


def test_a_reply_in_several_messages_completes_then_reports(link: Harness) -> None:
    link.connect()
    handle = link.core.send_command(RunSelfTest(), link.now)
    steps = [SelfTestReport(i, 3, f"step {i}", True, "") for i in (1, 2, 3)]
    link.feed(*(frames.reply(handle.seq, step) for step in steps))
    assert link.events() == [
        CommandCompleted(handle, steps[0]),
        ShoeReport(steps[1]),
        ShoeReport(steps[2]),
    ]
    # The shoe answers a retransmission of the command again: nothing new.
    link.feed(*(frames.reply(handle.seq, step) for step in steps))
    assert link.events() == []
    assert link.core.stats.duplicate_replies == 3


def test_command_retransmitted_with_back_off_then_no_answer(link: Harness) -> None:
    link.connect()
    handle = link.core.send_command(Ping(), link.now)
    start = link.now
    (first,) = link.sent()
    assert Flags.RETRANSMIT not in first.flags
    resent_at = []
    while not (events := link.events()):
        link.advance(0.125)  # exact in binary, so the deadlines are hit exactly
        link.feed(frames.heartbeat())  # the shoe is alive, it just ignores the command
        for packet in link.sent():
            assert packet.seq == handle.seq and Flags.RETRANSMIT in packet.flags
            resent_at.append(round(link.now - start, 2))
    assert resent_at == [0.5, 1.5, 3.5]  # waits of 0.5, 1 and 2 s
    assert round(link.now - start, 2) == 5.5  # then a last wait of 2 s (the cap)
    assert events == [CommandFailed(handle, "no_answer")]
    assert link.core.stats.command_retransmissions == 3


def test_retransmitted_command_completed_by_late_ack(link: Harness) -> None:
    link.connect()
    handle = link.core.send_command(Ping(), link.now)
    link.sent()
    link.advance(COMMAND_TIMEOUT)
    (again,) = link.sent()
    assert again.seq == handle.seq
    link.feed(frames.ack(handle.seq), frames.ack(handle.seq))
    assert link.events() == [CommandCompleted(handle, frames.Ack())]


def test_commands_go_one_at_a_time_in_order(link: Harness) -> None:
    link.connect()
    first = link.core.send_command(SetGate(GateMode.LOCKED), link.now)
    second = link.core.send_command(SetGate(GateMode.DEAL, 49), link.now)
    assert [p.seq for p in link.sent()] == [first.seq]
    link.feed(frames.ack(first.seq))
    assert [p.seq for p in link.sent()] == [second.seq]
    assert second.seq > first.seq


@pytest.mark.rule("F1")
@pytest.mark.rule("F5")
def test_a_gate_command_still_waiting_to_go_out_gives_way_to_a_later_one(
    link: Harness,
) -> None:
    """A SetGate queued behind a command whose reply was lost (sent again only when its
    timeout comes) is out of date once a later SetGate is given. Sent after it, its limit,
    a draw index of the deck in the shoe when it was given, could open the gate on the
    next deck: the croupier changed the deck meanwhile and the table locked the gate."""
    link.connect()
    ping = link.core.send_command(Ping(), link.now)
    (waiting,) = link.sent()
    deal = link.core.send_command(SetGate(GateMode.DEAL, 14), link.now)
    link.core.send_command(SetDisplay("DEALING"), link.now)
    lock = link.core.send_command(SetGate(GateMode.LOCKED), link.now)
    assert link.events() == [CommandFailed(deal, "superseded")]
    link.feed(frames.ack(waiting.seq))
    assert link.events() == [CommandCompleted(ping, Ack())]
    (display,) = link.sent()
    link.feed(frames.ack(display.seq))
    link.events()
    (out,) = link.sent()
    assert out.message == SetGate(GateMode.LOCKED) and out.seq == lock.seq


def test_commands_fail_when_not_connected(link: Harness) -> None:
    handle = link.core.send_command(Ping(), link.now)
    assert link.events() == [CommandFailed(handle, "link_down")]


@pytest.mark.parametrize(
    "message",
    [
        AckEvents(3),
        GetIdentity((1,)),
        Hello((1,), "m", "s", "h", "f", bytes(32), 0, 0, 0),
        DeckLoaded(),
    ],
)
def test_misuse_raises(link: Harness, message: Message) -> None:
    with pytest.raises(ValueError, match=r"link sends|not a command"):
        link.core.send_command(message, link.now)


def test_start_twice_raises(link: Harness) -> None:
    link.start()
    with pytest.raises(RuntimeError):
        link.core.start(link.now)


# -- events ---------------------------------------------------------------------------


def test_events_delivered_once_in_order(link: Harness) -> None:
    link.connect()
    link.feed(frames.event(1, card(1)), frames.event(2, card(2)))
    link.feed(frames.event(2, card(2), retransmit=True), frames.event(1, card(1)))
    link.feed(frames.event(3, card(3), retransmit=True))
    events = link.events()
    assert events == [
        ShoeEvent(1, card(1), shoe_seq=1),
        ShoeEvent(2, card(2), shoe_seq=2),
        ShoeEvent(3, card(3), retransmitted=True, shoe_seq=3),
    ]
    assert link.core.stats.duplicate_events == 2


def test_event_after_a_lost_frame_waits_for_the_gap_to_fill(link: Harness) -> None:
    link.connect()
    link.feed(frames.event(1, card(1)), frames.event(3, card(3)), frames.event(4, card(4)))
    assert link.delivered() == [1]  # 2 was lost on the line: not a gap yet
    link.feed(frames.event(2, card(2), retransmit=True), frames.event(3, card(3)))
    assert link.delivered() == [2, 3, 4]
    assert link.core.stats.out_of_order_events == 2


def test_acknowledgement_is_cumulative_and_explicit(link: Harness) -> None:
    link.connect()
    link.feed(*(frames.event(i, card(i)) for i in range(1, 6)))
    assert link.delivered() == [1, 2, 3, 4, 5]
    assert link.acks_sent() == []  # nothing is acknowledged until the consumer says so
    link.core.acknowledge(2, link.now)
    link.core.acknowledge(4, link.now)
    assert link.acks_sent() == [4]  # one frame for the batch
    link.core.acknowledge(3, link.now)
    assert link.acks_sent() == []
    with pytest.raises(ValueError, match="cannot acknowledge event 6"):
        link.core.acknowledge(6, link.now)
    assert link.core.acknowledged_seq == 4


def test_duplicate_of_an_acknowledged_event_repeats_the_acknowledgement(link: Harness) -> None:
    link.connect()
    link.feed(frames.event(1, card(1)), frames.event(2, card(2)))
    link.events()
    link.core.acknowledge(2, link.now)
    assert link.acks_sent() == [2]
    link.feed(frames.event(2, card(2), retransmit=True))  # our AckEvents was lost
    assert link.acks_sent() == [2]
    assert link.delivered() == []


@pytest.mark.rule("F2")
def test_heartbeat_showing_events_no_longer_held_reports_a_gap(link: Harness) -> None:
    link.connect()
    link.feed(frames.event(1, card(1)))
    link.feed(frames.heartbeat(last_event_seq=5, unacked=2))  # holds only 4 and 5
    events = link.events()
    assert events == [ShoeEvent(1, card(1), shoe_seq=1), EventsLost(2, 4, "not_held")]
    assert events[1].count == 2  # type: ignore[union-attr]
    link.feed(frames.event(4, card(4)), frames.event(5, card(5)))
    assert link.delivered() == [4, 5]


def test_heartbeat_with_events_in_flight_is_not_a_gap(link: Harness) -> None:
    link.connect()
    link.feed(frames.event(1, card(1)))
    link.feed(frames.heartbeat(last_event_seq=9, unacked=9))  # 1 delivered, not acknowledged
    assert link.delivered() == [1]
    assert link.events() == []


@pytest.mark.rule("F2")
def test_numbering_going_backwards_is_reported_and_numbered_on(link: Harness) -> None:
    link.connect()
    link.feed(*(frames.event(i, card(i)) for i in range(1, 4)))
    link.core.acknowledge(3, link.now)
    link.events()
    link.feed(frames.heartbeat(last_event_seq=1, unacked=1))  # it numbers from 1 again
    (lost,) = link.events()
    assert lost == EventsLost(4, 4, "sequence_reset") and lost.count is None
    assert "may have been lost" in str(lost)
    link.feed(frames.event(1, card(101)))
    # Its new event 1 reaches the consumer as 4: acknowledging 3 can never cover it.
    assert link.events() == [ShoeEvent(4, card(101), shoe_seq=1)]
    link.core.acknowledge(3, link.now)
    assert link.acks_sent() == []
    link.core.acknowledge(4, link.now)
    assert link.acks_sent() == [1]  # in the shoe's own numbering


# -- reconnect and reboot (rule F2) ---------------------------------------------------


@pytest.mark.rule("F2")
def test_reconnect_same_boot_resends_unacknowledged_events_once(link: Harness) -> None:
    link.connect(boot_id=7)
    link.feed(*(frames.event(i, card(i)) for i in range(1, 4)))
    assert link.delivered() == [1, 2, 3]
    link.core.acknowledge(2, link.now)
    link.core.connection_lost("unplugged", link.now)
    assert link.events() == [LinkDown("transport", "unplugged")]
    # The shoe got our acknowledgement of 2 only after the link dropped, or never:
    # it still holds 2 and 3 and sends them again, then a new event 4.
    connected = link.connect(boot_id=7, next_event_seq=2)
    assert not connected.rebooted
    assert link.acks_sent() == [2]
    link.feed(*(frames.event(i, card(i), retransmit=True) for i in (2, 3)))
    link.feed(frames.event(4, card(4)))
    assert link.delivered() == [4]


@pytest.mark.rule("F2")
def test_reconnect_finding_events_not_held_reports_them_lost(link: Harness) -> None:
    link.connect(boot_id=7)
    link.feed(frames.event(1, card(1)))
    link.events()
    link.core.connection_lost("unplugged", link.now)
    link.events()
    link.start()
    link.feed(frames.hello(boot_id=7, next_event_seq=4))
    assert link.events()[1:] == [EventsLost(2, 4, "not_held")]


@pytest.mark.rule("F2")
def test_reboot_keeping_events_delivers_them_once(link: Harness) -> None:
    link.connect(boot_id=1)
    link.feed(*(frames.event(i, card(i)) for i in range(1, 4)))
    assert link.delivered() == [1, 2, 3]
    link.core.acknowledge(1, link.now)
    link.sent()
    link.feed(frames.event(4, card(4)))  # issued; then the shoe restarts, keeping 2..4
    link.feed(frames.hello(boot_id=2, next_event_seq=2, flags=Flags.NONE))
    link.feed(*(frames.event(i, card(i), retransmit=True) for i in range(2, 6)))
    # Until its first heartbeat shows its numbering went on, nothing more is delivered.
    assert link.delivered() == [4]
    assert link.acks_sent() == []
    link.feed(frames.heartbeat(last_event_seq=5, unacked=4, uptime_ms=10))
    events = link.events()
    assert isinstance(events[0], Connected) and events[0].rebooted
    assert events[1:] == [ShoeEvent(5, card(5), retransmitted=True, shoe_seq=5)]
    assert link.core.stats.shoe_restarts == 1


@pytest.mark.rule("F2")
def test_reboot_losing_events_reports_them_lost(link: Harness) -> None:
    link.connect(boot_id=1)
    link.feed(frames.event(1, card(1)), frames.event(2, card(2)))
    link.core.acknowledge(1, link.now)
    handle = link.core.send_command(Ping(), link.now)
    link.events()
    # It restarted without keeping anything; it had issued events up to 4.
    link.feed(frames.hello(boot_id=2, next_event_seq=5, flags=Flags.NONE))
    assert link.events() == [CommandFailed(handle, "shoe_restarted")]
    link.feed(frames.heartbeat(last_event_seq=4, unacked=0, uptime_ms=10))
    events = link.events()
    assert isinstance(events[0], Connected) and events[0].rebooted
    assert events[1:] == [EventsLost(3, 5, "shoe_restarted")]
    assert "3..4" in str(events[1])
    link.feed(frames.event(5, card(5)))
    assert link.delivered() == [5]


@pytest.mark.rule("F2")
def test_reboot_numbering_afresh_delivers_the_new_events_after_the_old(link: Harness) -> None:
    link.connect(boot_id=1)
    link.feed(*(frames.event(i, card(i)) for i in range(1, 4)))
    link.core.acknowledge(3, link.now)
    assert link.acks_sent() == [3]
    link.events()
    # A shoe that does not keep its counter: events 1 and 2 of its new numbering look
    # like duplicates, and acknowledging them again would make it forget them.
    link.feed(frames.hello(boot_id=2, next_event_seq=1, flags=Flags.NONE))
    link.feed(frames.event(1, card(201)), frames.event(2, card(202)))
    assert link.acks_sent() == []
    link.feed(frames.heartbeat(last_event_seq=2, unacked=2, uptime_ms=10))
    events = link.events()
    assert isinstance(events[0], Connected) and events[0].rebooted
    assert events[1:] == [
        EventsLost(4, 4, "sequence_reset"),
        ShoeEvent(4, card(201), shoe_seq=1),
        ShoeEvent(5, card(202), shoe_seq=2),
    ]
    assert link.acks_sent() == []
    link.core.acknowledge(5, link.now)
    assert link.acks_sent() == [2]


# -- confirming a restart: the Hello known, its first Heartbeat awaited (rule F2) --------


@pytest.mark.rule("F2")
def test_a_restarted_shoe_is_confirming_until_its_first_heartbeat(link: Harness) -> None:
    """Between a restart's Hello and its first Heartbeat the link says so: events are held
    and commands refused, and the Heartbeat connects."""
    link.connect(boot_id=1)
    link.feed(frames.event(1, card(1)))
    link.events()
    link.feed(frames.hello(boot_id=2, next_event_seq=1, flags=Flags.NONE))
    assert link.core.state is LinkState.CONFIRMING
    link.feed(frames.event(2, card(2)))
    refused = link.core.send_command(Ping(), link.now)
    assert link.events() == [CommandFailed(refused, "link_down")]
    assert link.core.next_deadline() is not None  # still a live link, timed for silence
    link.feed(frames.hello(boot_id=2, next_event_seq=1, flags=Flags.NONE))  # said again
    assert link.core.state is LinkState.CONFIRMING
    link.feed(frames.heartbeat(last_event_seq=2, unacked=2, uptime_ms=10))
    assert link.core.state is LinkState.CONNECTED
    events = link.events()
    assert isinstance(events[0], Connected) and events[0].rebooted
    assert events[1:] == [ShoeEvent(2, card(2), shoe_seq=2)]


def test_start_while_confirming_is_misuse(link: Harness) -> None:
    link.connect(boot_id=1)
    link.feed(frames.hello(boot_id=2, flags=Flags.NONE))
    with pytest.raises(RuntimeError, match="confirming"):
        link.core.start(link.now)


def restart_noticed(link: Harness, *, hello_lost: bool) -> None:
    """The shoe restarts (keeping its events 1 and 2, both acknowledged), then issues event
    3: its Hello says so (confirming), or its Hello is lost and its uptime going back says
    so (handshaking again)."""
    link.connect(boot_id=1)
    link.feed(frames.heartbeat(uptime_ms=50_000))
    link.feed(frames.event(1, card(1)), frames.event(2, card(2)))
    link.core.acknowledge(2, link.now)
    link.events()
    link.sent()
    if hello_lost:
        link.feed(frames.heartbeat(last_event_seq=3, unacked=1, uptime_ms=200))
    else:
        link.feed(frames.hello(boot_id=2, next_event_seq=3, flags=Flags.NONE))
        link.feed(frames.event(3, card(3)))


@pytest.mark.rule("F2")
@pytest.mark.parametrize(
    "lost_while", [LinkState.HANDSHAKING, LinkState.CONFIRMING], ids=lambda s: s.value
)
def test_a_loss_while_confirming_is_a_loss_as_while_handshaking(lost_while: LinkState) -> None:
    """Whatever the restart's check had gathered (its Hello, the events it held) goes with
    the link: the next connection checks the shoe's numbering afresh, the same way."""
    link = Harness()
    restart_noticed(link, hello_lost=lost_while is LinkState.HANDSHAKING)
    assert link.core.state is lost_while
    link.events()
    link.sent()
    link.core.connection_lost("unplugged", link.now)
    assert link.events() == [LinkDown("transport", "unplugged")]
    assert link.core.state is LinkState.DOWN
    assert link.core.next_deadline() is None and not link.core.fast_recovery
    assert link.sent() == []
    seq = link.start()
    link.feed(frames.hello(seq=seq, boot_id=2, next_event_seq=3))
    assert link.core.state is LinkState.CONFIRMING
    assert link.events() == [] and link.sent() == []
    link.feed(frames.heartbeat(last_event_seq=3, unacked=1, uptime_ms=1200))
    (connected,) = link.events()
    assert isinstance(connected, Connected) and connected.rebooted
    link.feed(frames.event(3, card(3), retransmit=True))
    assert link.events() == [ShoeEvent(3, card(3), retransmitted=True, shoe_seq=3)]
    assert link.core.state is LinkState.CONNECTED


@pytest.mark.rule("F2")
def test_another_shoe_answering_while_a_restart_is_confirmed_begins_afresh(
    link: Harness,
) -> None:
    """The Hello of another shoe ends the check of the restarted one: the link connects
    to the shoe that answered and numbers its events after the first shoe's, and that
    shoe's first Heartbeat is only a heartbeat."""
    link.connect(boot_id=1)
    link.feed(*(frames.event(i, card(i)) for i in range(1, 4)))
    link.core.acknowledge(3, link.now)
    link.events()
    link.sent()
    link.feed(frames.hello(boot_id=2, next_event_seq=4, flags=Flags.NONE))
    assert link.core.state is LinkState.CONFIRMING
    link.feed(frames.hello(serial="SN-0002", boot_id=9, next_event_seq=1, flags=Flags.NONE))
    assert link.core.state is LinkState.CONNECTED
    (connected,) = link.events()
    assert isinstance(connected, Connected) and not connected.rebooted
    assert connected.identity.serial_number == "SN-0002"
    link.feed(frames.event(1, card(50)))
    link.feed(frames.heartbeat(last_event_seq=1, unacked=1))
    assert link.events() == [ShoeEvent(4, card(50), shoe_seq=1)]
    assert link.core.state is LinkState.CONNECTED


# -- a shoe that comes back after another shoe answered (rules E3, F2) ------------------


def swap_away(link: Harness, *, serial: str = "SN-0002") -> None:
    """The shoe at the table leaves; another shoe answers, sends one event that is
    acknowledged, and leaves in turn."""
    link.core.connection_lost("unplugged", link.now)
    link.events()
    link.connect(serial=serial, boot_id=9)
    link.feed(frames.event(1, card(50)))
    (other,) = link.delivered()
    link.core.acknowledge(other, link.now)
    link.sent()
    link.core.connection_lost("unplugged", link.now)
    link.events()


def come_back(link: Harness, *, boot_id: int, next_event_seq: int) -> None:
    """The first shoe answers again (a handshake, no heartbeat yet)."""
    seq = link.start()
    link.feed(frames.hello(seq=seq, boot_id=boot_id, next_event_seq=next_event_seq))


@pytest.mark.rule("E3")
@pytest.mark.rule("F2")
def test_a_shoe_back_after_another_answered_delivers_nothing_twice(link: Harness) -> None:
    """The shoe never heard that its events 1 and 2 were acknowledged (it fell silent);
    another shoe answered meanwhile. Back, it sends them again: they were delivered, so
    they are dropped and acknowledged again, and its next event follows in the link's
    numbering."""
    link.connect(boot_id=7)
    link.feed(frames.event(1, card(1)), frames.event(2, card(2)))
    assert link.delivered() == [1, 2]
    link.core.acknowledge(2, link.now)
    link.sent()  # the acknowledgement the shoe never heard
    swap_away(link)
    come_back(link, boot_id=7, next_event_seq=1)
    link.feed(*(frames.event(i, card(i), retransmit=True) for i in (1, 2)))
    link.feed(frames.event(3, card(3)))
    # Not connected before its first heartbeat says whether its numbering went on.
    assert link.events() == []
    link.feed(frames.heartbeat(last_event_seq=3, unacked=3))
    events = link.events()
    assert isinstance(events[0], Connected) and not events[0].rebooted
    assert events[1:] == [ShoeEvent(4, card(3), shoe_seq=3)]
    assert link.acks_sent() == [2]
    link.core.acknowledge(4, link.now)
    assert link.acks_sent() == [3]  # in its own numbering


@pytest.mark.rule("F2")
def test_a_shoe_back_after_another_answered_reports_what_it_lost_meanwhile(
    link: Harness,
) -> None:
    """Away, the shoe issued events 2 and 3 and restarted without keeping them."""
    link.connect(boot_id=7)
    link.feed(frames.event(1, card(1)))
    assert link.delivered() == [1]
    swap_away(link)
    come_back(link, boot_id=8, next_event_seq=4)
    link.feed(frames.heartbeat(last_event_seq=3, unacked=0))
    events = link.events()
    assert isinstance(events[0], Connected)
    assert events[1:] == [EventsLost(3, 5, "not_held")]
    assert "3..4" in str(events[1])
    link.feed(frames.event(4, card(4)))
    assert link.events() == [ShoeEvent(5, card(4), shoe_seq=4)]


@pytest.mark.rule("E3")
def test_what_was_made_durable_after_the_shoe_left_is_acknowledged_when_it_is_back(
    link: Harness,
) -> None:
    """Events 1 and 2 were made durable only after another shoe answered: when their shoe
    is back, it is told, so that it forgets them."""
    link.connect(boot_id=7)
    link.feed(frames.event(1, card(1)), frames.event(2, card(2)))
    assert link.delivered() == [1, 2]
    link.core.connection_lost("unplugged", link.now)
    link.events()
    link.connect(serial="SN-0002", boot_id=9)
    link.core.acknowledge(2, link.now)  # the consumer caught up with the first shoe
    link.core.connection_lost("unplugged", link.now)
    link.events()
    come_back(link, boot_id=7, next_event_seq=1)
    link.feed(frames.heartbeat(last_event_seq=2, unacked=2))
    assert [type(e) for e in link.events()] == [Connected]
    assert link.acks_sent() == [2]


@pytest.mark.rule("F2")
def test_a_shoe_back_numbering_from_1_again_has_its_events_delivered(link: Harness) -> None:
    """Back after another shoe, with a numbering that started over (it does not keep its
    counter): its events are new, whatever their numbers say."""
    link.connect(boot_id=7)
    link.feed(*(frames.event(i, card(i)) for i in range(1, 4)))
    link.core.acknowledge(3, link.now)
    link.delivered()
    swap_away(link)
    come_back(link, boot_id=8, next_event_seq=1)
    link.feed(frames.event(1, card(101)))
    link.feed(frames.heartbeat(last_event_seq=1, unacked=1))
    events = link.events()
    assert isinstance(events[0], Connected)
    assert events[1:] == [
        EventsLost(5, 5, "sequence_reset"),
        ShoeEvent(5, card(101), shoe_seq=1),
    ]


def test_lost_hello_after_restart_is_asked_for_again(link: Harness) -> None:
    link.connect(boot_id=1)
    link.feed(frames.heartbeat(uptime_ms=50_000))
    pending = link.core.send_command(Ping(), link.now)
    link.sent()
    link.feed(frames.heartbeat(uptime_ms=200))  # it restarted; its Hello never arrived
    assert link.events() == [CommandFailed(pending, "shoe_restarted")]
    assert link.core.state is LinkState.HANDSHAKING
    (request,) = link.sent()
    assert isinstance(request.message, GetIdentity)
    link.feed(frames.hello(seq=request.seq, boot_id=2))
    # Nothing reaches the restarted shoe before the consumer has seen it again.
    refused = link.core.send_command(SetGate(GateMode.DEAL), link.now)
    assert link.events() == [CommandFailed(refused, "link_down")]
    link.feed(frames.heartbeat(uptime_ms=1200))
    (connected,) = link.events()
    assert isinstance(connected, Connected) and connected.rebooted
    assert link.core.state is LinkState.CONNECTED


@pytest.mark.rule("F2")
def test_lost_hello_after_restart_is_noticed_right_after_a_reconnection(link: Harness) -> None:
    """A boot's uptime goes on across a reconnection to that same boot: a restart whose
    Hello is lost before the first Heartbeat of the new connection shows as well, so
    that the consumer hears of it and sets the shoe's gate again."""
    link.connect(boot_id=1)
    link.feed(frames.heartbeat(uptime_ms=50_000))
    link.core.connection_lost("cable out", link.now)
    link.events()
    link.connect(boot_id=1)
    link.feed(frames.heartbeat(uptime_ms=200))  # it restarted; its Hello never arrived
    assert link.core.state is LinkState.HANDSHAKING
    (request,) = link.sent()
    assert isinstance(request.message, GetIdentity)
    link.feed(frames.hello(seq=request.seq, boot_id=2), frames.heartbeat(uptime_ms=1200))
    (connected,) = link.events()
    assert isinstance(connected, Connected) and connected.rebooted
    assert link.core.stats.shoe_restarts == 1


def test_a_reconnection_to_the_same_boot_is_no_restart(link: Harness) -> None:
    link.connect(boot_id=1)
    link.feed(frames.heartbeat(uptime_ms=50_000))
    link.core.connection_lost("cable out", link.now)
    link.events()
    link.connect(boot_id=1)
    link.feed(frames.heartbeat(uptime_ms=50_900))
    assert link.events() == [] and link.sent() == []
    assert link.core.state is LinkState.CONNECTED


def test_uptime_wrapping_around_is_not_a_restart(link: Harness) -> None:
    link.connect(boot_id=1)
    link.feed(frames.heartbeat(uptime_ms=2**32 - 500), frames.heartbeat(uptime_ms=500))
    assert link.events() == [] and link.sent() == []
    assert link.core.state is LinkState.CONNECTED


def test_repeated_hello_of_the_same_boot_is_not_a_new_connection(link: Harness) -> None:
    link.connect(boot_id=1)
    link.feed(frames.hello(boot_id=1, flags=Flags.NONE))
    assert link.events() == []


# -- silence --------------------------------------------------------------------------


def test_heartbeats_keep_the_link_up_and_silence_takes_it_down(link: Harness) -> None:
    link.connect()
    for _ in range(10):
        link.advance(1.0)
        link.feed(frames.heartbeat())
    assert link.events() == []
    handle = link.core.send_command(Ping(), link.now)
    deadline = link.core.next_deadline()
    assert deadline is not None and deadline <= link.now + SILENCE_LIMIT
    link.advance(SILENCE_LIMIT - 0.01)
    assert [type(e) for e in link.events()] == []
    link.advance(0.02)
    assert link.events() == [
        CommandFailed(handle, "link_down"),
        LinkDown("silence", "no valid frame for 3.5 s"),
    ]
    assert link.core.state is LinkState.DOWN
    assert link.core.next_deadline() is None


def test_garbage_never_raises_and_is_counted(link: Harness) -> None:
    link.connect()
    rng = random.Random(4)
    noise = bytes(rng.randrange(256) for _ in range(5000))
    link.feed(noise, b"\x00", frames.event(1, card(1)))
    discarded = link.core.line_stats.bytes_discarded
    assert discarded > 0
    wrong_version = encode_frame(card(2), 2, version=9)
    from_host = encode_frame(Ping(), 3)
    link.feed(wrong_version, from_host, frames.event(2, card(2)))
    assert link.delivered() == [1, 2]
    wrong = link.core.stats.wrong_version_frames + link.core.line_stats.malformed
    assert wrong >= 1  # refused by the frame decoder or by the link
    assert link.core.stats.unexpected_messages == 1


def test_an_unknown_event_type_keeps_its_place_in_the_sequence(link: Harness) -> None:
    """A newer firmware's event type is delivered (as Unknown) in order, so that the events
    after it are not held back waiting for it."""
    link.connect()
    newer = encode_frame(Unknown(0xF0, b"\x01\x02"), 1, Flags.EVENT)
    link.feed(newer, frames.event(2, card(1)))
    delivered = [
        (ev.seq, type(ev.message).__name__) for ev in link.events() if isinstance(ev, ShoeEvent)
    ]
    assert delivered == [(1, "Unknown"), (2, "CardDrawn")]


# -- resuming where an earlier run left off (a restart of the consumer) ----------------

RESUME = ResumePoint("ES-7", "SN-0001", 3)


def resumed(resume: ResumePoint = RESUME) -> Harness:
    """A core of a new run, given where the previous run left off."""
    return Harness(LinkCore(resume=resume))


def hello_and_heartbeat(
    link: Harness, *, boot_id: int, next_event_seq: int, last_event_seq: int, held: int = 0
) -> list[LinkEvent]:
    seq = link.start()
    link.feed(frames.hello(seq=seq, boot_id=boot_id, next_event_seq=next_event_seq))
    assert link.events() == []  # not connected before the heartbeat says where it stands
    assert link.core.state is LinkState.CONFIRMING
    oldest = last_event_seq - held + 1
    link.feed(*(frames.event(i, card(i), retransmit=True) for i in range(oldest, oldest + held)))
    link.feed(frames.heartbeat(last_event_seq=last_event_seq, unacked=held))
    return link.events()


@pytest.mark.rule("F3")
@pytest.mark.parametrize("boot_id", [0xB0071, 0xB0072], ids=["same boot", "rebooted"])
def test_resuming_with_the_same_shoe_delivers_only_what_was_not_durable(boot_id: int) -> None:
    link = resumed()
    seq = link.start()
    # It holds 2..5 (our run had acknowledged 1, made 2 and 3 durable, then stopped).
    link.feed(frames.hello(seq=seq, boot_id=boot_id, next_event_seq=2))
    link.feed(*(frames.event(i, card(i), retransmit=True) for i in range(2, 6)))
    assert link.events() == [] and link.acks_sent() == []
    link.feed(frames.heartbeat(last_event_seq=5, unacked=4))
    events = link.events()
    assert isinstance(events[0], Connected) and not events[0].rebooted
    assert events[1:] == [
        ShoeEvent(4, card(4), retransmitted=True, shoe_seq=4),
        ShoeEvent(5, card(5), retransmitted=True, shoe_seq=5),
    ]
    # What it sends again up to 3 is dropped, and acknowledged so that it forgets it.
    assert link.acks_sent() == [3]
    link.feed(frames.event(3, card(3), retransmit=True))
    assert link.events() == [] and link.acks_sent() == [3]
    link.core.acknowledge(5, link.now)
    assert link.acks_sent() == [5]


@pytest.mark.rule("F3")
def test_resuming_with_a_shoe_that_lost_events_while_we_were_away_reports_them() -> None:
    link = resumed()
    events = hello_and_heartbeat(link, boot_id=0xB0072, next_event_seq=7, last_event_seq=6)
    assert isinstance(events[0], Connected)
    assert events[1:] == [EventsLost(4, 7, "not_held")]
    link.feed(frames.event(7, card(7)))
    assert link.delivered() == [7]


@pytest.mark.rule("F3")
def test_resuming_with_a_shoe_numbering_from_1_again_delivers_all_it_holds() -> None:
    """A shoe that repeats its boot id (a simulator derives it from its seed) and numbers
    from 1: its events are new, whatever their numbers say."""
    link = resumed()
    seq = link.start()
    link.feed(frames.hello(seq=seq, boot_id=0xB0071, next_event_seq=1))
    link.feed(frames.event(1, card(101)), frames.event(2, card(102)))
    link.feed(frames.heartbeat(last_event_seq=2, unacked=2))
    events = link.events()
    assert isinstance(events[0], Connected)
    assert events[1:] == [
        EventsLost(4, 4, "sequence_reset"),
        ShoeEvent(4, card(101), shoe_seq=1),
        ShoeEvent(5, card(102), shoe_seq=2),
    ]
    assert link.acks_sent() == []
    link.core.acknowledge(5, link.now)
    assert link.acks_sent() == [2]  # in the shoe's own numbering


@pytest.mark.rule("F3")
def test_resuming_where_the_shoe_has_issued_nothing_since_is_not_a_reset() -> None:
    link = resumed()
    events = hello_and_heartbeat(link, boot_id=0xB0071, next_event_seq=4, last_event_seq=3)
    assert [type(e) for e in events] == [Connected]
    link.feed(frames.event(4, card(4)))
    assert link.delivered() == [4]


@pytest.mark.rule("F3")
@pytest.mark.parametrize(
    ("model", "serial"), [("ES-9", "SN-0001"), ("ES-7", "SN-0002")], ids=["model", "serial"]
)
def test_another_shoe_is_numbered_afresh_whatever_the_resume_point(model: str, serial: str) -> None:
    link = resumed()
    connected = link.connect(model=model, serial=serial, next_event_seq=1)
    assert connected.identity.model == model  # at once: there is nothing to check
    link.feed(frames.event(1, card(1)), frames.event(2, card(2)))
    assert link.events() == [
        ShoeEvent(1, card(1), shoe_seq=1),
        ShoeEvent(2, card(2), shoe_seq=2),
    ]
    link.core.acknowledge(2, link.now)
    assert link.acks_sent() == [2]


@pytest.mark.rule("E3")
@pytest.mark.rule("F3")
def test_the_shoe_of_the_resume_point_answering_after_another_resumes_there() -> None:
    """Another shoe answered first; then the shoe of the resume point is back, holding
    events 2..5 it never heard acknowledged: 2 and 3 were made durable by the earlier run,
    so they are dropped, and 4 and 5 follow in the link's numbering."""
    link = resumed()
    link.connect(serial="SN-0002", next_event_seq=1)
    link.feed(frames.event(1, card(1)))
    assert link.delivered() == [1]
    link.feed(frames.hello(boot_id=5, next_event_seq=2, flags=Flags.NONE))
    link.feed(*(frames.event(i, card(i), retransmit=True) for i in range(2, 6)))
    assert link.events() == []
    link.feed(frames.heartbeat(last_event_seq=5, unacked=4))
    events = link.events()
    assert isinstance(events[0], Connected)
    assert events[1:] == [
        ShoeEvent(2, card(4), retransmitted=True, shoe_seq=4),
        ShoeEvent(3, card(5), retransmitted=True, shoe_seq=5),
    ]
    assert link.acks_sent() == [3]


@pytest.mark.rule("F3")
def test_a_link_lost_before_the_heartbeat_resumes_on_the_next_connection() -> None:
    link = resumed()
    seq = link.start()
    link.feed(frames.hello(seq=seq, next_event_seq=1))
    link.core.connection_lost("unplugged", link.now)
    assert link.events() == [LinkDown("transport", "unplugged")]
    events = hello_and_heartbeat(link, boot_id=0xB0071, next_event_seq=1, last_event_seq=3, held=3)
    assert [type(e) for e in events] == [Connected]
    assert link.acks_sent() == [3]  # it holds 1..3 still: acknowledged, never delivered


@pytest.mark.rule("E3")
@pytest.mark.rule("F3")
def test_each_shoe_of_several_resume_points_resumes_where_the_earlier_run_left_off() -> None:
    """The earlier run journaled events of two shoes: each is taken up where it left off,
    whichever answers first."""
    link = Harness(LinkCore(resume=[RESUME, ResumePoint("ES-7", "SN-0002", 8)]))
    events = hello_and_heartbeat(link, boot_id=0xB0071, next_event_seq=4, last_event_seq=3)
    assert [type(e) for e in events] == [Connected]
    link.feed(frames.event(4, card(4)))
    assert link.delivered() == [4]
    link.feed(frames.hello(serial="SN-0002", boot_id=9, next_event_seq=8, flags=Flags.NONE))
    link.feed(frames.event(8, card(8), retransmit=True), frames.event(9, card(9)))
    link.feed(frames.heartbeat(last_event_seq=9, unacked=2))
    events = link.events()
    assert isinstance(events[0], Connected) and events[0].identity.serial_number == "SN-0002"
    assert events[1:] == [ShoeEvent(5, card(9), shoe_seq=9)]
    assert link.acks_sent() == [8]


def test_a_resume_point_is_an_event_number() -> None:
    with pytest.raises(ValueError, match="shoe_seq"):
        ResumePoint("ES-7", "SN-0001", -1)


# -- a busy shoe (docs/protocol.md 9) --------------------------------------------------


def test_a_command_the_shoe_is_too_busy_for_goes_again_as_a_new_command(link: Harness) -> None:
    link.connect()
    handle = link.core.send_command(SetGate(GateMode.DEAL, 49), link.now)
    (first,) = link.sent()
    link.feed(frames.nak(first.seq, NakReason.BUSY, "gate moving"))
    assert link.events() == [] and link.sent() == []
    # A repeated answer to the old number, meanwhile, is a duplicate and nothing more.
    link.feed(frames.nak(first.seq, NakReason.BUSY, "gate moving"))
    assert link.core.stats.duplicate_replies == 1
    link.advance(BUSY_RETRY_DELAY - 0.01)
    assert link.sent() == []
    link.advance(0.01)
    (again,) = link.sent()
    assert again.message == SetGate(GateMode.DEAL, 49)
    assert again.seq == first.seq + 1 and Flags.RETRANSMIT not in again.flags
    link.feed(frames.ack(again.seq))
    assert link.events() == [CommandCompleted(handle, frames.Ack())]
    assert link.core.stats.busy_retries == 1


def test_a_shoe_busy_at_every_attempt_fails_the_command_with_its_nak(link: Harness) -> None:
    link.connect()
    handle = link.core.send_command(SetGate(GateMode.DEAL, 49), link.now)
    later = link.core.send_command(Ping(), link.now)
    seqs, times = [], []
    for attempt in range(COMMAND_ATTEMPTS):
        if attempt:
            link.advance(BUSY_RETRY_DELAY)
        (frame,) = link.sent()
        assert isinstance(frame.message, SetGate)  # the next command waits its turn
        seqs.append(frame.seq)
        times.append(link.now)
        link.feed(frames.nak(frame.seq, NakReason.BUSY, "gate moving"))
    assert len(set(seqs)) == COMMAND_ATTEMPTS
    assert [round(b - a, 6) for a, b in itertools.pairwise(times)] == [BUSY_RETRY_DELAY] * 3
    (failed,) = link.events()
    assert isinstance(failed, CommandFailed) and failed.handle is handle
    assert failed.reason == "nak" and failed.nak is not None
    assert failed.nak.reason is NakReason.BUSY
    # Numbers go up by one per command sent, the ones sent again after BUSY included.
    (ping,) = link.sent()
    assert seqs == list(range(seqs[0], seqs[0] + COMMAND_ATTEMPTS))
    assert ping.seq == later.seq == seqs[-1] + 1 and isinstance(ping.message, Ping)


@pytest.mark.rule("F5")
def test_a_gate_command_waiting_to_go_again_after_busy_gives_way_to_a_later_one(
    link: Harness,
) -> None:
    """The shoe did nothing with a SetGate it was too busy for: waiting to be sent again,
    it is out of date once a later SetGate is given, as one still in the queue is."""
    link.connect()
    deal = link.core.send_command(SetGate(GateMode.DEAL, 14), link.now)
    (first,) = link.sent()
    link.feed(frames.nak(first.seq, NakReason.BUSY, "gate moving"))
    lock = link.core.send_command(SetGate(GateMode.LOCKED), link.now)
    assert link.events() == [CommandFailed(deal, "superseded")]
    (out,) = link.sent()
    assert out.message == SetGate(GateMode.LOCKED) and out.seq == lock.seq
    link.feed(frames.ack(out.seq))
    link.advance(BUSY_RETRY_DELAY)
    assert link.sent() == []


def test_a_busy_wait_ends_with_the_link(link: Harness) -> None:
    link.connect()
    handle = link.core.send_command(SetGate(GateMode.DEAL, 49), link.now)
    (frame,) = link.sent()
    link.feed(frames.nak(frame.seq, NakReason.BUSY))
    link.core.connection_lost("unplugged", link.now)
    assert link.events() == [
        CommandFailed(handle, "link_down"),
        LinkDown("transport", "unplugged"),
    ]
