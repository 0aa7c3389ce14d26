"""The driver over a real pseudo-terminal to the simulated shoe, as over a serial port.

The shoe is the simulator behind its pty front end; the driver opens the terminal through
the serial transport, exactly as it opens /dev/electronic-shoe. Over a port the simulator
is a shoe like any other: approved only by an entry of the operator's list.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoe_controller.link.approval import ApprovalList
from shoe_controller.link.driver import LinkDriver
from shoe_controller.link.events import Connected, EventsLost, LinkDown
from shoe_controller.simulator import FaultPlan, SimOptions, firmware
from shoe_controller.simulator.pty_frontend import PtyFrontEnd
from tests.link.simhelpers import Clock
from tests.link.table import Table

HARSH_LINE = "noise=0.005,drop=0.1,dup=0.1,split=0.3"


class PtyShoe:
    """The simulated shoe behind a pty, reachable at a stable symbolic link."""

    def __init__(self, link: Path, options: SimOptions, clock: Clock) -> None:
        self.front = PtyFrontEnd(options, link_path=str(link), clock=clock)
        self.address = self.front.start()

    def events(self) -> list[tuple[int, object]]:
        with self.front.runner.locked() as shoe:
            return list(shoe.events)

    def quiet(self) -> bool:
        with self.front.runner.locked() as shoe:
            return not shoe.unacked and shoe.gate.name == "LOCKED"


@pytest.fixture
def clock() -> Clock:
    # Real time: the front end's thread waits in real seconds for the shoe's deadlines.
    return time.monotonic


@pytest.fixture
def table() -> Iterator[Table]:
    table = Table()
    yield table
    table.stop()


def serve(tmp_path: Path, clock: Clock, faults: str = "", **options: object) -> PtyShoe:
    sim = SimOptions(pace=0, faults=FaultPlan.parse(faults), **options)  # type: ignore[arg-type]
    return PtyShoe(tmp_path / "electronic-shoe", sim, clock)


def run_driver(
    shoe: PtyShoe, table: Table, clock: Clock, approval: ApprovalList | None = None
) -> LinkDriver:
    driver = LinkDriver(
        shoe.address,
        approval if approval is not None else ApprovalList(),
        table.on_event,
        clock=clock,
        reconnect_delay=lambda attempt: 0.01,
    )
    table.run(driver)
    return driver


def bench_entry(tmp_path: Path) -> ApprovalList:
    """The entry docs/link.md tells an operator to add for bench testing."""
    image = tmp_path / "es-sim-1.0.0.bin"
    image.write_bytes(firmware.IMAGE)
    return ApprovalList.from_config(
        [
            {
                "model": "ES-SIM",
                "firmware_version": "1.0.0",
                "firmware_digest": firmware.DIGEST.hex(),
                "image": str(image),
            }
        ]
    )


@pytest.mark.rule("A1")
def test_simulator_over_a_port_is_not_armed_unless_listed(
    tmp_path: Path, table: Table, clock: Clock
) -> None:
    shoe = serve(tmp_path, clock, seed=31)
    try:
        table.deal = False
        driver = run_driver(shoe, table, clock)
        connected = driver.wait_connected(10)
        assert connected is not None and connected.verdict is not None
        assert not connected.verdict.approved
        assert connected.verdict.reason == "model: 'ES-SIM' is not on the approved list"
        assert not driver.armed
    finally:
        table.stop()
        shoe.front.stop()


@pytest.mark.rule("A1")
def test_simulator_over_a_port_with_the_bench_entry_is_verified_and_armed(
    tmp_path: Path, table: Table, clock: Clock
) -> None:
    shoe = serve(tmp_path, clock, seed=32)
    try:
        driver = run_driver(shoe, table, clock, bench_entry(tmp_path))
        connected = driver.wait_connected(10)
        assert connected is not None and connected.verdict is not None
        assert connected.verdict.approved and connected.verdict.verified
        assert driver.armed
        table.wait_for_cards(60)
        table.close_gate()
        table.wait_for(shoe.quiet)
        assert table.delivered_pairs() == shoe.events()
    finally:
        table.stop()
        shoe.front.stop()


def exactly_once_over_a_noisy_port(
    tmp_path: Path, table: Table, clock: Clock, seed: int, cards: int
) -> None:
    # The shoe resends sooner than a real one would, so that the test runs quickly.
    shoe = serve(tmp_path, clock, HARSH_LINE, seed=seed, retransmit=0.02, retransmit_max=0.2)
    try:
        run_driver(shoe, table, clock, bench_entry(tmp_path))
        table.wait_for_cards(cards, timeout=cards / 10)
        table.close_gate()
        table.wait_for(shoe.quiet)
        assert not table.of_type(EventsLost)
        assert table.delivered_pairs() == shoe.events()
        with shoe.front.runner.locked() as sim:
            assert sim.line_stats.dropped and sim.line_stats.corrupted_bytes
    finally:
        table.stop()
        shoe.front.stop()


@pytest.mark.rule("F2")
@pytest.mark.parametrize("seed", [41, 42])
def test_every_card_exactly_once_over_a_noisy_port(
    tmp_path: Path, table: Table, clock: Clock, seed: int
) -> None:
    exactly_once_over_a_noisy_port(tmp_path, table, clock, seed, 1_000)


@pytest.mark.soak
@pytest.mark.rule("F2")
@pytest.mark.parametrize("seed", range(51, 56))
def test_ten_thousand_cards_over_a_noisy_port(
    tmp_path: Path, table: Table, clock: Clock, seed: int
) -> None:
    exactly_once_over_a_noisy_port(tmp_path, table, clock, seed, 2_000)


@pytest.mark.rule("F2")
def test_cable_pulled_mid_deck_over_a_port(tmp_path: Path, table: Table, clock: Clock) -> None:
    shoe = serve(tmp_path, clock, "disconnect@25,disconnect@100", seed=43)
    try:
        run_driver(shoe, table, clock, bench_entry(tmp_path))
        table.wait_for_cards(150)
        table.close_gate()
        table.wait_for(shoe.quiet)
        assert [d.reason for d in table.of_type(LinkDown)].count("transport") >= 2
        assert len(table.of_type(Connected)) >= 3
        assert not table.of_type(EventsLost)
        assert table.delivered_pairs() == shoe.events()
    finally:
        table.stop()
        shoe.front.stop()


@pytest.mark.rule("F2")
@pytest.mark.parametrize("persist", [True, False])
def test_shoe_restart_over_a_port(
    tmp_path: Path, table: Table, clock: Clock, persist: bool
) -> None:
    shoe = serve(tmp_path, clock, "reboot@30", seed=44, persist=persist)
    try:
        run_driver(shoe, table, clock, bench_entry(tmp_path))
        table.wait_for_cards(100)
        table.close_gate()
        table.wait_for(shoe.quiet)
        assert any(c.rebooted for c in table.of_type(Connected))
        lost = table.of_type(EventsLost)
        if persist:
            assert not lost
        else:
            assert [e.reason for e in lost] == ["shoe_restarted"]
        issued = shoe.events()
        assert [p for p in issued if p[0] not in table.lost_seqs()] == table.delivered_pairs()
    finally:
        table.stop()
        shoe.front.stop()
