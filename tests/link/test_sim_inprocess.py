"""The link core against the simulated shoe in this process, on a virtual clock.

The simulator keeps its own record of every card that left it and every event it issued;
the link must deliver each of them exactly once, in order, whatever the line does.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoe_controller.link.core import LinkCore
from shoe_controller.link.events import Connected
from shoe_controller.link.sequence import ResumePoint
from shoe_controller.simulator import FaultPlan, SimOptions, SimulatedShoe
from tests.link.pairing import Pairing

HARSH_LINE = "noise=0.01,drop=0.2,dup=0.2,split=0.3"
SEEDS = (1, 2, 3, 4, 5)
CARDS_PER_SEED = 2_000  # 10,000 cards over the seeds


def pairing(seed: int, faults: str = "", **options: object) -> Pairing:
    return Pairing(SimOptions(seed=seed, faults=FaultPlan.parse(faults), pace=0, **options))  # type: ignore[arg-type]


@pytest.mark.rule("F2")
@pytest.mark.parametrize("fast_recovery", [True, False], ids=["fast_recovery", "timer_only"])
@pytest.mark.parametrize("seed", SEEDS)
def test_every_card_exactly_once_in_order_on_a_harsh_line(seed: int, fast_recovery: bool) -> None:
    pair = pairing(seed, HARSH_LINE, fast_recovery=fast_recovery)
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
    fast_recovery=st.booleans(),
    gate_window=st.sampled_from([None, 1, 4]),
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
    fast_recovery: bool,
    gate_window: int | None,
) -> None:
    plan = ",".join(f"{kind}@{at}" for kind, at in faults)
    line = f"drop={drop},dup={dup},split={split},noise={noise}"
    pair = pairing(
        seed,
        f"{plan},{line}",
        persist=persist,
        silent_for=5.0,
        fast_recovery=fast_recovery,
    )
    pair.ack_batch = ack_batch
    pair.gate_window = gate_window
    pair.run_until_cards(120)
    lost = pair.lost_seqs()
    assert [p for p in pair.shoe.events if p[0] not in lost] == pair.delivered_pairs()
    if persist or not pair.shoe.reboots:
        assert not pair.lost  # only a restart without persistence may lose events
    # A restart the link could not see (its Hello garbled, before any heartbeat) is
    # still a loss it reports, as events the shoe no longer holds.
    assert all(e.reason in ("shoe_restarted", "not_held") for e in pair.lost)


# -- a restart of the consumer: resuming by the shoe's identity and its own numbers ----

#: Events the first run delivered but did not make durable before it stopped.
NOT_DURABLE = 5


def first_run(options: SimOptions) -> tuple[Pairing, ResumePoint]:
    """A run that deals 30 cards, acknowledges only the first ten events and stops: it had
    made durable all it received but the last NOT_DURABLE events."""
    first = Pairing(options, ack_limit=10)
    first.run_until_drawn(30)
    assert first.shoe.unacked, "the shoe must hold events when the consumer stops"
    shoe = first.connections[-1].identity
    durable = first.delivered[-1 - NOT_DURABLE].shoe_seq
    return first, ResumePoint(shoe.model, shoe.serial_number, durable)


def second_run(first: Pairing, point: ResumePoint, shoe: SimulatedShoe) -> Pairing:
    second = Pairing(
        shoe.options,
        core=LinkCore(resume=point),
        now=first.now,
        given_shoe=shoe,
        dealing=True,
    )
    second.run_until_cards(len(shoe.draws) + 20)
    return second


def assert_exactly_once_or_lost(
    first: Pairing, second: Pairing, point: ResumePoint, issued: list[tuple[int, object]]
) -> None:
    """Across the two runs, every event the shoe issued is made durable once, or reported
    lost; none is skipped silently. The first run made durable up to the resume point."""
    durable_first = [
        (e.shoe_seq, e.message) for e in first.delivered if e.shoe_seq <= point.shoe_seq
    ]
    delivered_second = [(e.shoe_seq, e.message) for e in second.delivered]
    assert [e.seq for e in second.delivered] == [e.shoe_seq for e in second.delivered]
    lost = second.lost_seqs()
    seen = durable_first + delivered_second
    assert len({seq for seq, _ in seen}) == len(seen), "an event was made durable twice"
    assert sorted(seen + [(s, issued_by_seq(issued, s)) for s in lost]) == sorted(issued)


def issued_by_seq(issued: list[tuple[int, object]], seq: int) -> object:
    return dict(issued)[seq]


@pytest.mark.rule("F3")
@pytest.mark.parametrize("reboot", [False, True], ids=["same boot", "rebooted while away"])
def test_restart_of_the_consumer_with_the_same_shoe_keeping_its_events(reboot: bool) -> None:
    first, point = first_run(SimOptions(seed=41, pace=0, persist=True))
    shoe = first.shoe
    if reboot:
        shoe.reboot()  # a new boot id; it keeps what was not acknowledged
    second = second_run(first, point, shoe)
    assert not second.lost
    assert not second.connections[0].rebooted
    assert_exactly_once_or_lost(first, second, point, shoe.events)
    # The events the first run had made durable came again, and were only acknowledged.
    assert second.core.stats.duplicate_events >= 10 - 1


@pytest.mark.rule("F3")
def test_restart_of_the_consumer_with_a_shoe_that_rebooted_losing_its_events() -> None:
    first, point = first_run(SimOptions(seed=42, pace=0, persist=False))
    shoe = first.shoe
    shoe.reboot()  # what it held is gone: the last events the first run did not keep
    second = second_run(first, point, shoe)
    (lost,) = second.lost
    assert lost.reason == "not_held" and lost.expected_seq == point.shoe_seq + 1
    assert lost.count == NOT_DURABLE
    assert_exactly_once_or_lost(first, second, point, shoe.events)


@pytest.mark.rule("F3")
def test_restart_of_the_consumer_with_a_shoe_that_repeats_its_boot_id_and_numbers_from_1() -> None:
    options = SimOptions(seed=43, pace=0)
    first, point = first_run(options)
    # The same seed: the same boot id, and events numbered from 1 again (a swapped shoe
    # of the same identity, or one that lost its counter).
    fresh = SimulatedShoe(options)
    fresh.tick(first.now)
    assert fresh.boot_id == first.shoe.boot_id
    second = second_run(first, point, fresh)
    reset, *others = second.lost
    assert reset.reason == "sequence_reset" and not others
    # Every event of the new numbering is delivered; none is taken for a duplicate.
    assert [(e.shoe_seq, e.message) for e in second.delivered] == fresh.events
    assert second.delivered[0].seq == point.shoe_seq + 1


@pytest.mark.rule("F3")
def test_restart_of_the_consumer_with_another_model_of_the_same_serial_number() -> None:
    options = SimOptions(seed=44, pace=0)
    first, point = first_run(options)
    other = SimulatedShoe(options.with_changes(model="ES-SIM-2"))
    second = second_run(first, point, other)
    assert second.connections[0].identity.model == "ES-SIM-2"
    assert second.connections[0].identity.serial_number == point.serial_number
    assert not second.lost
    # Numbered afresh: every event of the other shoe, none skipped.
    assert second.delivered_pairs() == other.events
