"""The link core against the simulated shoe in this process, on a virtual clock.

The simulator keeps its own record of every card that left it and every event it issued;
the link must deliver each of them exactly once, in order, whatever the line does.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoe_controller.link.events import Connected
from shoe_controller.simulator import FaultPlan, SimOptions
from tests.link.pairing import Pairing

HARSH_LINE = "noise=0.01,drop=0.2,dup=0.2,split=0.3"
SEEDS = (1, 2, 3, 4, 5)
CARDS_PER_SEED = 2_000  # 10,000 cards over the seeds


def pairing(seed: int, faults: str = "", **options: object) -> Pairing:
    return Pairing(SimOptions(seed=seed, faults=FaultPlan.parse(faults), pace=0, **options))  # type: ignore[arg-type]


@pytest.mark.rule("F2")
@pytest.mark.parametrize("seed", SEEDS)
def test_every_card_exactly_once_in_order_on_a_harsh_line(seed: int) -> None:
    pair = pairing(seed, HARSH_LINE)
    pair.run_until_cards(CARDS_PER_SEED)
    assert not pair.lost and not pair.downs
    assert pair.delivered_pairs() == pair.shoe.events
    assert pair.cards_delivered() == pair.cards_reported_by_the_shoe()
    assert len(pair.cards_delivered()) >= CARDS_PER_SEED
    line = pair.shoe.line_stats
    assert line.dropped and line.duplicated and line.split and line.corrupted_bytes
    stats = pair.core.stats
    assert stats.duplicate_events and stats.out_of_order_events
    assert pair.core.line_stats.crc_errors + pair.core.line_stats.malformed > 0


@pytest.mark.rule("F2")
def test_disconnects_mid_deck_lose_nothing() -> None:
    pair = pairing(11, f"disconnect@20,disconnect@75,disconnect@130,{HARSH_LINE}")
    pair.run_until_cards(160)
    assert len(pair.downs) == 3 and all(d.reason == "transport" for d in pair.downs)
    assert not pair.lost
    assert pair.delivered_pairs() == pair.shoe.events
    assert pair.cards_delivered() == pair.cards_reported_by_the_shoe()


@pytest.mark.rule("F2")
def test_reboot_keeping_events_loses_nothing() -> None:
    pair = pairing(12, f"reboot@30,reboot@31,{HARSH_LINE}", persist=True)
    pair.run_until_cards(120)
    assert pair.shoe.reboots == 2
    assert pair.core.stats.shoe_restarts >= 1 and pair.connections[-1].rebooted
    assert not pair.lost
    assert pair.delivered_pairs() == pair.shoe.events


@pytest.mark.rule("F2")
def test_reboot_losing_events_reports_exactly_the_lost_ones() -> None:
    # The consumer is slow to acknowledge, so the shoe holds events when it restarts.
    pair = pairing(13, "reboot@30", persist=False)
    pair.ack_batch = 1_000
    pair.run_until_cards(100)
    assert pair.shoe.reboots == 1
    (lost,) = pair.lost
    assert lost.reason == "shoe_restarted"
    issued = dict(pair.shoe.events)
    delivered = dict(pair.delivered_pairs())
    never_delivered = sorted(set(issued) - set(delivered))
    assert never_delivered == list(range(lost.expected_seq, lost.got_seq))
    assert [p for p in pair.shoe.events if p[0] in delivered] == pair.delivered_pairs()


@pytest.mark.rule("F2")
def test_silence_takes_the_link_down_and_it_comes_back() -> None:
    pair = pairing(14, "silent@25", silent_for=8.0)
    pair.run_until_cards(80)
    assert [d.reason for d in pair.downs][:1] == ["silence"]
    assert isinstance(pair.connections[-1], Connected)
    assert not pair.lost
    assert pair.delivered_pairs() == pair.shoe.events


line_rate = st.sampled_from([0.0, 0.01, 0.1, 0.3])
card_faults = st.lists(
    st.tuples(st.sampled_from(["disconnect", "reboot", "silent"]), st.integers(1, 150)),
    max_size=4,
)


@pytest.mark.rule("F2")
@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32),
    drop=line_rate,
    dup=line_rate,
    split=line_rate,
    noise=st.sampled_from([0.0, 0.001, 0.01]),
    faults=card_faults,
    persist=st.booleans(),
    ack_batch=st.integers(1, 200),
)
def test_any_mix_of_faults_delivers_exactly_once_or_reports_the_loss(  # noqa: PLR0917
    seed: int,
    drop: float,
    dup: float,
    split: float,
    noise: float,
    faults: list[tuple[str, int]],
    persist: bool,
    ack_batch: int,
) -> None:
    plan = ",".join(f"{kind}@{at}" for kind, at in faults)
    line = f"drop={drop},dup={dup},split={split},noise={noise}"
    pair = pairing(seed, f"{plan},{line}", persist=persist, silent_for=5.0)
    pair.ack_batch = ack_batch
    pair.run_until_cards(120)
    lost = pair.lost_seqs()
    assert [p for p in pair.shoe.events if p[0] not in lost] == pair.delivered_pairs()
    if persist or not pair.shoe.reboots:
        assert not pair.lost  # only a restart without persistence may lose events
    # A restart the link could not see (its Hello garbled, before any heartbeat) is
    # still a loss it reports, as events the shoe no longer holds.
    assert all(e.reason in ("shoe_restarted", "not_held") for e in pair.lost)
