"""The driver: the core over a transport on one reader thread, reconnecting by itself."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from firmware_protocol import (
    Ack,
    Capability,
    Counters,
    GateMode,
    GetCounters,
    NakReason,
    Ping,
    SetGate,
    StreamDecoder,
)
from shoe_controller.errors import DeviceNotFound, LinkError, NotApproved
from shoe_controller.hal.base import Transport
from shoe_controller.link.approval import ApprovalList
from shoe_controller.link.core import LinkCore, LinkState
from shoe_controller.link.driver import LinkDriver
from shoe_controller.link.events import (
    ApprovalChanged,
    CommandCompleted,
    CommandFailed,
    Connected,
    DriverError,
    EventsLost,
    LinkDown,
    LinkEvent,
    Reconnecting,
    ShoeEvent,
)
from shoe_controller.link.reader import reconnect_backoff
from shoe_controller.simulator import firmware
from tests.link.simhelpers import (
    ClaimsToBeSimulator,
    SimOpener,
    Uninterruptible,
    scaled_clock,
    sim_address,
)
from tests.link.table import Table

WAIT = 10.0


def no_delay(attempt: int) -> float:
    return 0.001


@pytest.fixture
def table() -> Iterator[Table]:
    table = Table()
    yield table
    table.stop()


def driver_for(
    address: str,
    table: Table,
    opener: SimOpener,
    approval: ApprovalList | None = None,
    **kwargs: object,
) -> LinkDriver:
    driver = LinkDriver(
        address,
        approval if approval is not None else ApprovalList(),
        table.on_event,
        opener=opener,
        clock=opener.clock,
        reconnect_delay=no_delay,
        **kwargs,  # type: ignore[arg-type]
    )
    table.run(driver)
    return driver


def deal_and_settle(table: Table, opener: SimOpener, cards: int) -> None:
    table.wait_for_cards(cards)
    table.close_gate()
    table.wait_for(opener.quiet)


# -- connecting, approval, dealing ----------------------------------------------------


@pytest.mark.rule("A1")
def test_in_process_simulator_is_armed_and_deals_every_card_once(table: Table) -> None:
    opener = SimOpener()
    with sim_address("seed=21&pace=0") as address:
        driver = driver_for(address, table, opener)
        connected = driver.wait_connected(10)
        assert connected is not None and connected.verdict is not None
        assert connected.verdict.approved and driver.armed
        assert connected.identity.model == firmware.MODEL
        deal_and_settle(table, opener, 120)
        assert table.delivered_pairs() == opener.shoe_events()
        driver.stop()
    table.wait_for(lambda: bool(table.of_type(LinkDown)))
    assert table.of_type(LinkDown)[-1] == LinkDown("stopped", "stopped")
    assert not driver.armed


def test_commands_are_waitable_from_another_thread(table: Table) -> None:
    opener = SimOpener()
    with sim_address("seed=22&pace=0&autoload=0") as address:
        driver = driver_for(address, table, opener)
        table.deal = False
        assert driver.wait_connected(10) is not None
        results: list[object] = []
        worker = threading.Thread(
            target=lambda: results.extend(
                [driver.send_command(Ping()).result(5), driver.send_command(GetCounters()).wait(5)]
            )
        )
        worker.start()
        worker.join(10)
        ack, counters = results
        assert ack == Ack()
        assert isinstance(counters, CommandCompleted) and isinstance(counters.reply, Counters)
        assert any(isinstance(e, CommandCompleted) for e in table.of_type(CommandCompleted))


def test_calls_before_start_are_refused() -> None:
    driver = LinkDriver("sim://", ApprovalList(), lambda event: None)
    with pytest.raises(RuntimeError, match="start"):
        driver.send_command(Ping())


@pytest.mark.rule("A1")
def test_shoe_not_on_the_list_stays_connected_but_is_not_armed(table: Table) -> None:
    opener = ClaimsToBeSimulator()
    with sim_address("seed=23&pace=0") as address:
        table.deal = False
        driver = driver_for(address, table, opener)
        connected = driver.wait_connected(10)
        assert connected is not None and connected.verdict is not None
        assert not connected.verdict.approved and connected.verdict.field == "model"
        assert "NOT ARMED" in str(connected)
        assert not driver.armed
        for mode in (GateMode.DEAL, GateMode.STUB):
            with pytest.raises(NotApproved, match="not armed: model: 'ES-SIM' is not on"):
                driver.send_command(SetGate(mode, 49))
        # Diagnostics and locking still work.
        assert driver.send_command(SetGate(GateMode.LOCKED)).result(5) == Ack()
        assert driver.send_command(GetCounters()).result(5) is not None
        assert not table.cards()


@pytest.fixture
def sim_image(tmp_path: Path) -> Path:
    path = tmp_path / "es-sim-1.0.0.bin"
    path.write_bytes(firmware.IMAGE)
    return path


def bench_entry(image: Path) -> ApprovalList:
    return ApprovalList.from_config(
        [
            {
                "model": firmware.MODEL,
                "firmware_version": firmware.FIRMWARE_VERSION,
                "firmware_digest": firmware.DIGEST.hex(),
                "image": str(image),
            }
        ]
    )


@pytest.mark.rule("A1")
def test_listed_shoe_is_verified_with_a_seed_at_connection_and_on_demand(
    table: Table, sim_image: Path
) -> None:
    seeds: list[bytes] = []

    def seed_source(size: int) -> bytes:
        seeds.append(bytes([len(seeds) + 1]) * size)
        return seeds[-1]

    opener = ClaimsToBeSimulator()
    with sim_address("seed=24&pace=0") as address:
        table.deal = False
        driver = driver_for(address, table, opener, bench_entry(sim_image), seed_source=seed_source)
        connected = driver.wait_connected(10)
        assert connected is not None and connected.verdict is not None
        assert connected.verdict.approved and connected.verdict.verified
        assert driver.armed and len(seeds) == 1

        again = driver.verify(5)
        assert again.approved and again.verified and len(seeds) == 2
        # The approved image on file changes: the shoe no longer proves it runs it.
        sim_image.write_bytes(firmware.IMAGE[:-1] + b"\x00")
        verdict = driver.verify(5)
        assert not verdict.approved and verdict.field == "verification"
        assert not driver.armed
        table.wait_for(lambda: bool(table.of_type(ApprovalChanged)))
        with pytest.raises(NotApproved, match="verification"):
            driver.send_command(SetGate(GateMode.DEAL))


def test_verify_needs_a_connected_shoe() -> None:
    driver = LinkDriver("sim://", ApprovalList(), lambda event: None)
    driver.start()
    try:
        driver.stop()
        with pytest.raises(LinkError, match="no shoe is connected"):
            driver.verify(1)
    finally:
        driver.stop()


# -- losing the link ------------------------------------------------------------------


@pytest.mark.rule("F2")
def test_disconnects_mid_deck_reconnect_and_lose_nothing(table: Table) -> None:
    opener = SimOpener()
    with sim_address("seed=25&pace=0&faults=disconnect@20,disconnect@80") as address:
        driver_for(address, table, opener)
        deal_and_settle(table, opener, 130)
    downs = table.of_type(LinkDown)
    assert [d.reason for d in downs] == ["transport", "transport"]
    connections = table.of_type(Connected)
    assert len(connections) == 3 and not any(c.rebooted for c in connections)
    assert not table.of_type(EventsLost)
    assert table.delivered_pairs() == opener.shoe_events()


@pytest.mark.rule("F2")
def test_reboot_keeping_events_delivers_them_once(table: Table) -> None:
    opener = SimOpener()
    with sim_address("seed=26&pace=0&persist=1&faults=reboot@30") as address:
        driver_for(address, table, opener)
        deal_and_settle(table, opener, 110)
    assert [c.rebooted for c in table.of_type(Connected)] == [False, True]
    assert not table.of_type(EventsLost)
    assert table.delivered_pairs() == opener.shoe_events()


@pytest.mark.rule("F2")
def test_reboot_losing_events_reports_them(table: Table) -> None:
    opener = SimOpener()
    with sim_address("seed=27&pace=0&persist=0&faults=reboot@30") as address:
        driver_for(address, table, opener)
        deal_and_settle(table, opener, 110)
    (lost,) = table.of_type(EventsLost)
    assert lost.reason == "shoe_restarted" and lost.got_seq > lost.expected_seq
    issued = opener.shoe_events()
    assert [p for p in issued if p[0] not in table.lost_seqs()] == table.delivered_pairs()


def _sent_to_the_shoe(opener: SimOpener) -> list[str]:
    return _frames(b"".join(opener.writes))


@pytest.mark.rule("F2")
@pytest.mark.parametrize("fast_recovery", [1, 0], ids=["fast_recovery", "first_release"])
def test_both_kinds_of_shoe_deal_every_card_once_over_a_lossy_line(
    table: Table, fast_recovery: int
) -> None:
    """A shoe with FAST_RECOVERY is asked for what the line lost; one of the first release
    never hears of ResendEvents and recovers by its timer, as it always did."""
    opener = SimOpener()
    query = f"seed=28&pace=0&faults=noise=0.005,drop=0.05&fast_recovery={fast_recovery}"
    with sim_address(query) as address:
        driver = driver_for(address, table, opener)
        connected = driver.wait_connected(WAIT)
        assert connected is not None
        assert (Capability.FAST_RECOVERY in connected.identity.capabilities) is bool(fast_recovery)
        deal_and_settle(table, opener, 110)
        driver.stop()
        stats = driver.stats  # every request counted is on the wire now, and no more
    assert not table.of_type(EventsLost)
    assert table.delivered_pairs() == opener.shoe_events()
    asked = _sent_to_the_shoe(opener).count("ResendEvents")
    assert asked == stats.resend_requests
    if fast_recovery:
        assert asked > 0 and opener.shoe().resent_on_request > 0
    else:
        assert asked == 0 and stats.hastened_commands == 0
        assert opener.shoe().timer_retransmissions > 0


@pytest.mark.rule("F2")
def test_silent_shoe_takes_the_link_down_then_it_resumes(table: Table) -> None:
    opener = SimOpener(scaled_clock(20))
    with sim_address("seed=28&pace=0&faults=silent@15&silent_for=6") as address:
        driver_for(address, table, opener)
        deal_and_settle(table, opener, 80)
    assert "silence" in [d.reason for d in table.of_type(LinkDown)]
    assert len(table.of_type(Connected)) >= 2
    assert not table.of_type(EventsLost)
    assert table.delivered_pairs() == opener.shoe_events()


# -- the reader thread never dies -----------------------------------------------------


class _Flaky(SimOpener):
    """Fails to open a few times; breaks the read that follows ``break_read``."""

    def __init__(self, open_failures: int) -> None:
        super().__init__()
        self.open_failures = open_failures
        self.break_read = threading.Event()

    def __call__(self, address: str) -> Transport:
        if self.open_failures:
            self.open_failures -= 1
            raise DeviceNotFound("shoe unplugged: plug it in")
        transport = super().__call__(address)
        real_read = transport.read

        def read(timeout: float) -> bytes:
            if self.break_read.is_set():
                self.break_read.clear()
                raise RuntimeError("a bug in a transport")
            return real_read(timeout)

        transport.read = read  # type: ignore[method-assign]
        return transport


def test_open_failures_and_a_bug_in_the_thread_become_events(
    table: Table, caplog: pytest.LogCaptureFixture
) -> None:
    opener = _Flaky(open_failures=2)
    with sim_address("seed=29&pace=0") as address:
        driver = driver_for(address, table, opener)
        table.wait_for_cards(30)
        reconnecting = table.of_type(Reconnecting)
        assert [r.attempt for r in reconnecting] == [1, 2]
        assert reconnecting[0].detail == "shoe unplugged: plug it in"
        opener.break_read.set()
        table.wait_for(lambda: len(table.of_type(Connected)) == 2)
        (bug,) = table.of_type(DriverError)
        assert bug.detail == "RuntimeError: a bug in a transport"
        assert "driver error" in table.of_type(LinkDown)[0].detail
        assert "the link reader failed" in caplog.text
        deal_and_settle(table, opener, 90)
        assert driver.armed
    assert not table.of_type(EventsLost)
    assert table.delivered_pairs() == opener.shoe_events()


def test_a_consumer_that_raises_does_not_stop_the_link(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[LinkEvent] = []
    connected = threading.Event()

    def on_event(event: LinkEvent) -> None:
        seen.append(event)
        if isinstance(event, Connected):
            connected.set()
            raise ValueError("consumer bug")

    with (
        caplog.at_level(logging.ERROR),
        sim_address("seed=30&pace=0&autoload=0") as address,
    ):
        driver = LinkDriver(address, ApprovalList(), on_event, reconnect_delay=no_delay)
        driver.start()
        try:
            assert connected.wait(10)
            assert driver.send_command(Ping()).result(5) == Ack()
        finally:
            driver.stop()
    assert "on_event raised" in caplog.text
    assert isinstance(seen[-1], LinkDown)


def test_reconnect_backoff_grows_to_a_cap() -> None:
    delays = [reconnect_backoff(n) for n in range(1, 10)]
    assert delays[0] == pytest.approx(0.1)
    assert delays == sorted(delays) and delays[-1] == 5.0


class _BrokenApproval(ApprovalList):
    def check(self, identity: object, transport_is_in_process_simulator: bool) -> object:  # type: ignore[override]
        raise RuntimeError("a bug in the approval check")


def test_a_bug_handling_an_event_still_delivers_it_and_disarms(table: Table) -> None:
    opener = SimOpener()
    with sim_address("seed=33&pace=0&autoload=0") as address:
        table.deal = False
        driver = driver_for(address, table, opener, _BrokenApproval())
        table.wait_for(lambda: bool(table.of_type(DriverError)))
        (connected,) = table.of_type(Connected)
        assert connected.verdict is None
        assert table.of_type(DriverError)[0].detail == "RuntimeError: a bug in the approval check"
        assert not driver.armed
        with pytest.raises(NotApproved):
            driver.send_command(SetGate(GateMode.DEAL))
        assert driver.send_command(Ping()).result(5) == Ack()


# -- requests from other threads reach the reader at once ------------------------------

#: A shoe and a core that stay quiet for minutes: no heartbeat, no retransmission, no
#: silence timeout, so that only the request itself can wake the reader.
QUIET = "pace=0&autoload=1&heartbeat=600&retransmit=600&retransmit_max=600"


@pytest.mark.parametrize("opener_type", [SimOpener, Uninterruptible])
def test_an_acknowledgement_reaches_the_shoe_without_waiting_for_the_poll(
    opener_type: type[SimOpener],
) -> None:
    """The reader blocks for up to ten minutes here; the acknowledgement interrupts it (or,
    on a transport that cannot be interrupted, waits for the short poll)."""
    delivered = threading.Event()
    opener = opener_type()
    with sim_address(f"seed=34&{QUIET}") as address:
        driver = LinkDriver(
            address,
            ApprovalList(),
            lambda event: delivered.set() if isinstance(event, ShoeEvent) else None,
            opener=opener,
            core=LinkCore(silence_limit=600),
            poll_interval=600,
        )
        driver.start()
        try:
            assert delivered.wait(WAIT)  # the DeckLoaded of power-up
            with opener.runner.locked() as shoe:
                assert shoe.unacked == [1]
            driver.acknowledge(1)
            assert opener.runner.wait_until(lambda shoe: not shoe.unacked, WAIT)
        finally:
            driver.stop()


def _frames(data: bytes) -> list[str]:
    decoder = StreamDecoder()
    decoder.receive_data(data)
    return [type(packet.message).__name__ for packet in decoder]


def test_an_acknowledgement_and_the_commands_behind_it_leave_in_one_write() -> None:
    """After a card the gate's next limit travels with its acknowledgement: one write, one
    wake-up of the shoe, the acknowledgement first."""
    delivered = threading.Event()
    opener = SimOpener()
    with sim_address(f"seed=36&{QUIET}") as address:
        driver = LinkDriver(
            address,
            ApprovalList(),
            lambda event: delivered.set() if isinstance(event, ShoeEvent) else None,
            opener=opener,
            core=LinkCore(silence_limit=600),
            poll_interval=600,
        )
        driver.start()
        try:
            assert delivered.wait(WAIT)  # the DeckLoaded of power-up
            handles = driver.acknowledge(1, [Ping(), SetGate(GateMode.LOCKED)])
            assert [h.wait(WAIT).reply for h in handles] == [Ack(), Ack()]
            together = [w for w in opener.writes if "AckEvents" in _frames(w)]
            assert [_frames(w) for w in together] == [["AckEvents", "Ping"]]
            assert opener.runner.wait_until(lambda shoe: not shoe.unacked, WAIT)
        finally:
            driver.stop()


def test_a_refused_command_behind_an_acknowledgement_leaves_the_acknowledgement_sent() -> None:
    delivered = threading.Event()
    opener = ClaimsToBeSimulator()  # not the in-process simulator: never approved here
    with sim_address(f"seed=37&{QUIET}") as address:
        driver = LinkDriver(
            address,
            ApprovalList(),  # nothing approved: the gate may not open
            lambda event: delivered.set() if isinstance(event, ShoeEvent) else None,
            opener=opener,
            core=LinkCore(silence_limit=600),
            poll_interval=600,
        )
        driver.start()
        try:
            assert delivered.wait(WAIT)
            with pytest.raises(NotApproved, match="not armed"):
                driver.acknowledge(1, [SetGate(GateMode.DEAL, 5)])
            assert opener.runner.wait_until(lambda shoe: not shoe.unacked, WAIT)
            assert not any("SetGate" in _frames(w) for w in opener.writes)
        finally:
            driver.stop()


def test_a_command_given_while_the_shoe_cannot_be_opened_fails_at_once() -> None:
    failed: list[LinkEvent] = []
    opener = _Flaky(open_failures=1000)
    with sim_address("seed=35") as address:
        driver = LinkDriver(
            address, ApprovalList(), failed.append, opener=opener, reconnect_delay=lambda n: 600
        )
        driver.start()
        try:
            outcome = driver.send_command(Ping()).wait(WAIT)
            assert isinstance(outcome, CommandFailed) and outcome.reason == "link_down"
        finally:
            driver.stop(WAIT)
    assert isinstance(failed[0], Reconnecting) and failed[0].delay == 600


def test_after_stop_commands_are_refused_and_the_counters_still_read() -> None:
    with sim_address("seed=36&pace=0&autoload=0") as address:
        driver = LinkDriver(address, ApprovalList(), lambda event: None)
        assert driver.stats.handshakes == 0  # read before the start too
        driver.start()
        assert driver.wait_connected(WAIT) is not None
        assert driver.stats.handshakes == 1
        driver.stop()
    with pytest.raises(LinkError, match="link driver was stopped"):
        driver.send_command(Ping())
    assert driver.stats.links_lost == 1
    assert driver.state is LinkState.DOWN


# -- a busy shoe -----------------------------------------------------------------------


def test_a_gate_the_shoe_is_busy_with_opens_once_it_is_free(table: Table) -> None:
    opener = SimOpener(scaled_clock(20))
    with sim_address("seed=37&pace=0&busy=3") as address:
        driver = driver_for(address, table, opener)
        deal_and_settle(table, opener, 20)
        assert driver.stats.busy_retries == 3
    assert not table.of_type(CommandFailed)
    assert table.delivered_pairs() == opener.shoe_events()


def test_a_shoe_busy_at_every_attempt_fails_the_command_with_its_nak(table: Table) -> None:
    opener = SimOpener(scaled_clock(20))
    with sim_address("seed=38&pace=0&autoload=0&busy=4") as address:
        table.deal = False
        driver = driver_for(address, table, opener)
        assert driver.wait_connected(WAIT) is not None
        # The table locks the gate at every connection; a SetGate given while that one is
        # still waiting would replace it (and the other way round), so it ends first.
        table.wait_for(
            lambda: any(
                isinstance(e.handle.message, SetGate) for e in table.of_type(CommandCompleted)
            )
        )
        outcome = driver.send_command(SetGate(GateMode.DEAL, 49)).wait(WAIT)
    assert isinstance(outcome, CommandFailed) and outcome.reason == "nak"
    assert outcome.nak is not None and outcome.nak.reason is NakReason.BUSY
    assert "refused by the shoe: BUSY" in str(outcome)
