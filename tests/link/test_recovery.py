"""Fast recovery (docs/protocol.md 8, FAST_RECOVERY): a lost or damaged frame costs a round
trip, not a timer. The core driven by hand-made frames on an explicit clock, then against
the simulated shoe dealing with the gate's window, in virtual time."""

from __future__ import annotations

import pytest

from firmware_protocol import (
    AckEvents,
    Capability,
    DeckLoaded,
    Flags,
    GateMode,
    GetIdentity,
    Ping,
    ResendEvents,
    Reset,
    SetGate,
    encode_frame,
)
from firmware_protocol.timing import (
    COMMAND_ATTEMPTS,
    COMMAND_GIVE_UP,
    COMMAND_TIMEOUT,
    COMMAND_TIMEOUT_MIN,
    RESEND_REQUEST_INTERVAL,
    RETRANSMIT_TIMEOUT,
)
from firmware_protocol.vectors import InvalidVector, build
from shoe_controller.link.core import LinkCore, LinkState
from shoe_controller.link.events import CommandCompleted, CommandFailed, Connected, ShoeEvent
from shoe_controller.simulator import FaultPlan, SimOptions
from tests.link import frames
from tests.link.harness import Harness, card
from tests.link.pairing import Pairing

#: Byte runs a receiver drops and counts: every kind of damage the line can do.
DAMAGE = build().invalid


def damage_name(vector: InvalidVector) -> str:
    return vector.name


def requests(sent: list[frames.Packet]) -> list[int]:
    """The ``from_seq`` of every ResendEvents among ``sent``."""
    return [p.message.from_seq for p in sent if isinstance(p.message, ResendEvents)]


def connected(**hello: object) -> Harness:
    link = Harness()
    link.connect(**hello)
    return link


@pytest.fixture
def fast() -> Harness:
    """Connected to a shoe that announces FAST_RECOVERY, events 1 and 2 delivered."""
    link = connected()
    assert link.core.fast_recovery
    link.feed(frames.event(1, DeckLoaded()), frames.event(2, card(1)))
    assert link.delivered() == [1, 2]
    assert link.sent() == []
    return link


# -- asking for what is missing ---------------------------------------------------------


@pytest.mark.parametrize("damage", DAMAGE, ids=damage_name)
def test_a_damaged_frame_asks_for_the_events_at_once(fast: Harness, damage: InvalidVector) -> None:
    fast.feed(damage.frame)
    (request,) = fast.sent()
    assert request.message == ResendEvents(3)  # delivered + 1
    assert (request.seq, request.flags) == (0, Flags.NONE)
    assert fast.core.stats.resend_requests == 1
    # What the shoe sends again is delivered as usual, once.
    fast.feed(frames.event(3, card(2), retransmit=True), frames.event(3, card(2)))
    assert fast.delivered() == [3]


def test_the_request_follows_the_events_delivered_from_the_same_read(fast: Harness) -> None:
    """A damaged frame and, behind it in the same read, the event that was due: the request
    names the event after it, so that the shoe sends nothing it need not."""
    fast.feed(DAMAGE[0].frame + frames.event(3, card(2)))
    assert fast.delivered() == [3]
    assert requests(fast.sent()) == [4]


def test_an_event_past_a_gap_asks_for_the_missing_ones(fast: Harness) -> None:
    fast.feed(frames.event(4, card(3)))
    assert fast.delivered() == []  # held until the gap is filled
    assert requests(fast.sent()) == [3]
    fast.feed(frames.event(3, card(2), retransmit=True))
    assert fast.delivered() == [3, 4]


def test_a_heartbeat_counting_an_event_that_did_not_come_asks_for_it(fast: Harness) -> None:
    fast.feed(frames.heartbeat(last_event_seq=2, unacked=2))
    assert fast.sent() == []  # every event it counts arrived
    fast.feed(frames.heartbeat(last_event_seq=3, unacked=3, uptime_ms=2000))
    assert requests(fast.sent()) == [3]


def test_a_burst_of_damage_makes_one_request_per_interval(fast: Harness) -> None:
    start = fast.now
    fast.feed(*(vector.frame for vector in DAMAGE))
    assert requests(fast.sent()) == [3]
    # Asked for again, once, when the interval has passed: not once per damaged frame.
    assert fast.core.next_deadline() == pytest.approx(start + RESEND_REQUEST_INTERVAL)
    fast.advance(RESEND_REQUEST_INTERVAL / 2)
    fast.feed(DAMAGE[0].frame)
    assert fast.sent() == []
    fast.now = start + RESEND_REQUEST_INTERVAL  # the deadline, exactly
    fast.core.tick(fast.now)
    assert requests(fast.sent()) == [3]
    fast.advance(1.0)
    assert fast.sent() == []  # nothing new went wrong: nothing more to ask
    assert fast.core.stats.resend_requests == 2


def test_a_request_is_in_the_shoe_numbering(fast: Harness) -> None:
    """After another shoe answered, the link's numbers go on but the shoe is asked in its
    own."""
    fast.feed(frames.hello(serial="SN-0002", boot_id=7, next_event_seq=1, flags=Flags.NONE))
    (connected_again,) = fast.events()
    assert isinstance(connected_again, Connected)
    fast.feed(frames.event(2, card(1)))
    assert requests(fast.sent()) == [1]
    fast.feed(frames.event(1, DeckLoaded(), retransmit=True))
    assert fast.delivered() == [3, 4]  # the link's numbering, after the first shoe's


def test_no_request_during_the_handshake_nor_the_check_after_a_restart() -> None:
    link = Harness()
    link.start()
    link.feed(DAMAGE[0].frame)
    assert link.sent() == []  # the capability is not known before the Hello
    link.feed(frames.hello(seq=1))
    link.events()
    # The shoe restarts: nothing flows until its first Heartbeat shows its numbering.
    link.feed(frames.hello(boot_id=0xB0072, next_event_seq=1, flags=Flags.NONE))
    assert link.core.state is LinkState.CONFIRMING
    link.feed(DAMAGE[0].frame, frames.event(3, card(2)))
    assert link.sent() == []
    link.feed(frames.heartbeat(last_event_seq=0))
    assert link.core.state is LinkState.CONNECTED


# -- commands timed from the round trip ---------------------------------------------------


def test_the_command_timeout_follows_the_round_trip(fast: Harness) -> None:
    assert fast.core.command_timer.timeout == COMMAND_TIMEOUT  # nothing measured yet
    ping = fast.core.send_command(Ping(), fast.now)
    (out,) = fast.sent()
    fast.advance(0.002)
    fast.feed(frames.ack(out.seq))
    assert fast.events() == [CommandCompleted(ping, frames.Ack())]
    # 2 ms measured: the timeout is the floor, far below COMMAND_TIMEOUT.
    assert fast.core.command_timer.srtt == pytest.approx(0.002)
    assert fast.core.command_timer.timeout == COMMAND_TIMEOUT_MIN
    gate = fast.core.send_command(SetGate(GateMode.DEAL, 2), fast.now)
    (first,) = fast.sent()
    fast.advance(COMMAND_TIMEOUT_MIN - 0.001)
    assert fast.sent() == []
    fast.advance(0.001)
    (again,) = fast.sent()
    assert (again.seq, again.flags) == (first.seq, Flags.RETRANSMIT)
    # Each attempt without a reply doubles the wait.
    fast.advance(2 * COMMAND_TIMEOUT_MIN - 0.001)
    assert fast.sent() == []
    fast.advance(0.001)
    assert [p.seq for p in fast.sent()] == [first.seq]
    fast.feed(frames.ack(first.seq))
    assert fast.events() == [CommandCompleted(gate, frames.Ack())]
    # A reply to a command sent again measures nothing (Karn): the wait stays doubled.
    assert fast.core.command_timer.srtt == pytest.approx(0.002)
    assert fast.core.command_timer.timeout == 4 * COMMAND_TIMEOUT_MIN


def test_a_command_fails_after_the_give_up_time_however_many_attempts(fast: Harness) -> None:
    fast.core.command_timer.measure(0.001)
    start = fast.now
    handle = fast.core.send_command(Ping(), fast.now)
    attempts = len(fast.sent())
    while not (events := fast.events()):
        deadline = fast.core.next_deadline()
        assert deadline is not None
        fast.now = deadline
        fast.core.tick(fast.now)
        fast.feed(frames.heartbeat(last_event_seq=2, unacked=2))  # alive all along
        attempts += len(fast.sent())
    assert events == [CommandFailed(handle, "no_answer")]
    assert fast.now - start == pytest.approx(COMMAND_GIVE_UP)
    assert attempts > COMMAND_ATTEMPTS  # the measured timeout allowed more than four


def test_a_damaged_frame_sends_the_awaited_command_again_at_once(fast: Harness) -> None:
    fast.core.command_timer.measure(0.001)
    handle = fast.core.send_command(SetGate(GateMode.DEAL, 3), fast.now)
    (first,) = fast.sent()
    fast.advance(0.001)
    fast.feed(DAMAGE[0].frame)  # its Ack, maybe
    out = fast.sent()
    assert [(p.message, p.seq, p.flags) for p in out if not requests([p])] == [
        (SetGate(GateMode.DEAL, 3), first.seq, Flags.RETRANSMIT)
    ]
    assert requests(out) == [3]
    fast.feed(DAMAGE[1].frame)
    assert fast.sent() == []  # at most once per interval
    fast.feed(frames.ack(first.seq))
    assert fast.events() == [CommandCompleted(handle, frames.Ack())]
    assert fast.core.stats.hastened_commands == 1
    assert fast.core.command_timer.srtt == pytest.approx(0.001)  # sent twice: no measure


def test_a_reset_is_timed_as_before_and_never_hastened(fast: Harness) -> None:
    """A shoe that restarts forgets its last command: a Reset sent again while it restarts
    would restart it again, so it is never sent again sooner than before."""
    fast.core.command_timer.measure(0.001)
    fast.core.send_command(Reset(), fast.now)
    (first,) = fast.sent()
    fast.feed(DAMAGE[0].frame)
    assert [p.message for p in fast.sent()] == [ResendEvents(3)]  # the events, not Reset
    fast.advance(COMMAND_TIMEOUT - 0.001)
    assert fast.sent() == []
    fast.advance(0.001)
    (again,) = fast.sent()
    assert (again.message, again.seq, again.flags) == (Reset(), first.seq, Flags.RETRANSMIT)
    assert fast.core.stats.hastened_commands == 0


# -- a shoe of the first release ----------------------------------------------------------


def test_a_first_release_shoe_is_timed_as_before_and_never_asked() -> None:
    link = connected(capabilities=frames.FIRST_RELEASE)
    assert not link.core.fast_recovery
    link.feed(frames.event(1, DeckLoaded()), frames.event(3, card(2)))
    link.feed(*(vector.frame for vector in DAMAGE))
    link.feed(frames.heartbeat(last_event_seq=3, unacked=3))
    assert link.delivered() == [1]
    assert link.sent() == []  # no ResendEvents: it would not know the type
    # Commands keep the fixed timeouts, however fast the shoe answers.
    for _ in range(3):
        link.core.send_command(Ping(), link.now)
        (ping,) = link.sent()
        link.advance(0.001)
        link.feed(frames.ack(ping.seq))
    handle = link.core.send_command(Ping(), link.now)
    assert len(link.sent()) == 1
    times = []
    start = link.now
    while not (events := [e for e in link.events() if isinstance(e, CommandFailed)]):
        link.advance(0.01)
        link.feed(frames.heartbeat(last_event_seq=3, unacked=3))
        times += [round(link.now - start, 2) for _ in link.sent()]
    assert events == [CommandFailed(handle, "no_answer")]
    assert times == [0.5, 1.5, 3.5]  # COMMAND_TIMEOUT, doubling; four attempts in all
    assert link.core.stats.resend_requests == link.core.stats.hastened_commands == 0


def test_the_capability_is_taken_from_each_handshake() -> None:
    link = connected()
    assert link.core.fast_recovery
    link.core.connection_lost("unplugged", link.now)
    assert not link.core.fast_recovery
    link.core.start(link.now)
    (request,) = link.sent()
    assert isinstance(request.message, GetIdentity)
    # The same shoe, its firmware changed to one without the capability.
    capabilities = frames.ALL_CAPABILITIES & ~Capability.FAST_RECOVERY
    link.feed(frames.hello(seq=request.seq, capabilities=capabilities, boot_id=9))
    assert not link.core.fast_recovery
    assert link.core.command_timer.timeout == COMMAND_TIMEOUT


# -- against the simulated shoe, dealing with the gate's window ---------------------------


def dealing(faults: str, *, fast_recovery: bool, seed: int = 3) -> Pairing:
    options = SimOptions(
        seed=seed, faults=FaultPlan.parse(faults), pace=0, fast_recovery=fast_recovery
    )
    pair = Pairing(options, gate_window=1)
    pair.run_until_cards(5 * 53)
    assert not pair.lost and not pair.downs
    assert pair.delivered_pairs() == pair.shoe.events
    assert pair.cards_delivered() == pair.cards_reported_by_the_shoe()
    return pair


@pytest.mark.rule("F5")
@pytest.mark.parametrize("faults", ["drop=0.02", "noise=0.02", "drop=0.05,noise=0.01"])
def test_a_lost_frame_costs_a_round_trip_not_a_timer(faults: str) -> None:
    """With the gate's window every card waits for the previous one's acknowledgement;
    in virtual time a card gap is what the link waited to recover a frame."""
    pair = dealing(faults, fast_recovery=True)
    gaps = sorted(pair.card_gaps())
    assert gaps[-1] > 0  # frames were lost, and it took some waiting
    assert gaps[int(len(gaps) * 0.99)] <= 0.04
    assert gaps[-1] < RETRANSMIT_TIMEOUT
    timer_only = dealing(faults, fast_recovery=False)
    assert max(timer_only.card_gaps()) >= RETRANSMIT_TIMEOUT
    assert timer_only.core.stats.resend_requests == 0


@pytest.mark.rule("F5")
def test_the_shoe_is_asked_for_what_the_noise_damaged() -> None:
    pair = dealing("noise=0.02", fast_recovery=True)
    stats = pair.core.stats
    assert pair.core.line_stats.crc_errors + pair.core.line_stats.malformed > 0
    assert stats.resend_requests > 0 and stats.hastened_commands > 0
    assert pair.shoe.resend_requests == stats.resend_requests
    assert pair.shoe.resent_on_request > 0
    # The shoe measured the round trip: its wait is far below the first release's.
    assert pair.shoe.retransmit_timeout < RETRANSMIT_TIMEOUT


@pytest.mark.rule("E3")
def test_a_request_never_acknowledges() -> None:
    """ResendEvents names what the host delivered, not what it made durable: the shoe
    forgets nothing before an AckEvents says so."""
    pair = Pairing(SimOptions(seed=5, pace=0), ack_limit=0, gate_window=1)
    pair.run_until_drawn(1)
    for _ in range(5):
        pair.step()
    delivered = pair.core.delivered_shoe_seq
    assert delivered is not None and delivered >= 2
    pair.core.receive_data(DAMAGE[0].frame, pair.now)
    data = pair.core.data_to_send()
    sent = [p.message for p in frames.packets(data)]
    assert ResendEvents(delivered + 1) in sent
    assert not any(isinstance(message, AckEvents) for message in sent)
    pair.shoe.receive_data(data, pair.now)
    assert pair.shoe.unacked[0] == 1 and pair.shoe.acknowledged == 0


def test_events_sent_again_at_a_request_are_delivered_once() -> None:
    pair = Pairing(SimOptions(seed=6, pace=0), gate_window=1)
    pair.run_until_drawn(3)
    core, shoe = pair.core, pair.shoe
    held = shoe.unacked
    assert held, "the last card is not acknowledged yet"
    shoe.receive_data(encode_frame(ResendEvents(held[0]), 0), pair.now)
    core.receive_data(shoe.data_to_send(), pair.now)
    assert [e for e in iter(core.next_event, None) if isinstance(e, ShoeEvent)] == []
    assert core.stats.duplicate_events >= 1


def test_the_core_defaults_give_commands_their_old_total_time() -> None:
    assert LinkCore().command_give_up == pytest.approx(COMMAND_GIVE_UP)
    quick = LinkCore(command_timeout=0.02, command_timeout_max=0.04, command_attempts=3)
    assert quick.command_give_up == pytest.approx(0.02 + 0.04 + 0.04)
