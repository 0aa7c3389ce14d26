"""The retransmission timer of FAST_RECOVERY: RFC 6298's estimator, its floor, its ceiling
and its back-off, and the ``retransmit_timer`` vectors a firmware checks itself against."""

from __future__ import annotations

import json

import pytest

from firmware_protocol import RetransmitTimer, timing
from firmware_protocol.vectors import VECTORS_PATH, TimerVector, build, load

SHIPPED = load()


def test_before_any_measurement_the_timeout_is_the_initial_one() -> None:
    timer = RetransmitTimer(0.25, 0.01, 2.0)
    assert (timer.timeout, timer.srtt, timer.measured) == (0.25, None, False)


def test_the_first_measurement_sets_the_smoothed_round_trip_and_half_as_variation() -> None:
    timer = RetransmitTimer(0.25, 0.001, 2.0)
    timer.measure(0.040)
    assert timer.srtt == pytest.approx(0.040) and timer.rttvar == pytest.approx(0.020)
    assert timer.timeout == pytest.approx(0.040 + 4 * 0.020)


def test_later_measurements_update_the_variation_first_then_the_round_trip() -> None:
    timer = RetransmitTimer(0.25, 0.001, 2.0)
    timer.measure(0.040)
    timer.measure(0.080)
    # RTTVAR = 3/4 * 0.020 + 1/4 * |0.040 - 0.080|; SRTT = 7/8 * 0.040 + 1/8 * 0.080
    assert timer.rttvar == pytest.approx(0.025)
    assert timer.srtt == pytest.approx(0.045)
    assert timer.timeout == pytest.approx(0.045 + 4 * 0.025)


def test_a_steady_round_trip_adds_at_least_the_clock_granularity() -> None:
    timer = RetransmitTimer(0.25, 0.0001, 2.0)
    for _ in range(200):
        timer.measure(0.005)
    assert timer.timeout == pytest.approx(0.005 + timing.CLOCK_GRANULARITY)


def test_the_timeout_keeps_between_its_floor_and_its_ceiling() -> None:
    timer = RetransmitTimer(0.25, 0.01, 2.0)
    timer.measure(0.0001)
    assert timer.timeout == 0.01
    timer.measure(5.0)
    assert timer.timeout == 2.0


def test_back_off_doubles_up_to_the_ceiling_until_the_next_measurement() -> None:
    timer = RetransmitTimer(0.25, 0.01, 2.0)
    timer.measure(0.002)
    assert [timer.back_off() for _ in range(9)] == [
        0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.0, 2.0
    ]  # fmt: skip
    timer.measure(0.002)
    assert timer.timeout == pytest.approx(0.01)
    timer.back_off()
    timer.restart()
    assert timer.timeout == pytest.approx(0.01)


def test_reset_forgets_every_measurement() -> None:
    timer = RetransmitTimer(0.5, 0.01, 2.0)
    timer.measure(0.002)
    timer.back_off()
    timer.reset()
    assert (timer.timeout, timer.srtt, timer.rttvar) == (0.5, None, 0.0)


@pytest.mark.parametrize(
    ("initial", "minimum", "maximum"), [(0.0, 0.01, 2.0), (0.25, 0.0, 2.0), (3.0, 0.01, 2.0),
                                        (0.25, 3.0, 2.0)],
)  # fmt: skip
def test_impossible_limits_are_refused(initial: float, minimum: float, maximum: float) -> None:
    with pytest.raises(ValueError, match="timeouts must be positive"):
        RetransmitTimer(initial, minimum, maximum)


def test_the_gains_are_rfc_6298s() -> None:
    assert (timing.RTT_GAIN, timing.RTTVAR_GAIN, timing.RTTVAR_FACTOR) == (1 / 8, 1 / 4, 4)


def test_the_give_up_time_is_what_the_fixed_attempts_take() -> None:
    waits = [
        min(timing.COMMAND_TIMEOUT * 2**attempt, timing.COMMAND_TIMEOUT_MAX)
        for attempt in range(timing.COMMAND_ATTEMPTS)
    ]
    assert sum(waits) == timing.COMMAND_GIVE_UP


# -- the vectors --------------------------------------------------------------------------


def timer_name(vector: TimerVector) -> str:
    return vector.name


def test_the_vectors_hold_a_case_for_each_end() -> None:
    cases = {t.name: t for t in SHIPPED.timers}
    assert set(cases) == {"shoe_events", "host_commands"}
    shoe, host = cases["shoe_events"], cases["host_commands"]
    assert (shoe.initial, shoe.minimum, shoe.maximum) == (
        timing.RETRANSMIT_TIMEOUT,
        timing.RETRANSMIT_TIMEOUT_MIN,
        timing.RETRANSMIT_TIMEOUT_MAX,
    )
    assert (host.initial, host.minimum, host.maximum) == (
        timing.COMMAND_TIMEOUT,
        timing.COMMAND_TIMEOUT_MIN,
        timing.COMMAND_TIMEOUT_MAX,
    )
    for case in (shoe, host):
        timeouts = [step.timeout for step in case.steps]
        # Each case reaches the floor, and backs off.
        assert case.minimum in timeouts
        assert any(step.rtt is None for step in case.steps)
    assert timing.RETRANSMIT_TIMEOUT_MAX in [step.timeout for step in shoe.steps]


@pytest.mark.parametrize("vector", SHIPPED.timers, ids=timer_name)
def test_the_timer_follows_its_vector_step_by_step(vector: TimerVector) -> None:
    timer = RetransmitTimer(vector.initial, vector.minimum, vector.maximum)
    for step in vector.steps:
        if step.rtt is None:
            timer.back_off()
        else:
            timer.measure(step.rtt)
        if step.srtt is None:
            assert timer.srtt is None
        else:
            assert timer.srtt == pytest.approx(step.srtt, abs=1e-6)
        assert timer.rttvar == pytest.approx(step.rttvar, abs=1e-6)
        assert timer.timeout == pytest.approx(step.timeout, abs=1e-6)


def test_the_timer_vectors_are_in_the_shipped_file_as_built() -> None:
    document = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))
    events = {step["event"] for case in document["retransmit_timer"] for step in case["steps"]}
    assert events == {"measure", "timeout"}
    assert SHIPPED.timers == build().timers


def test_an_implementation_in_whole_microseconds_agrees_within_a_thousandth() -> None:
    """What docs/protocol.md promises a firmware that counts in integer microseconds."""
    for vector in SHIPPED.timers:
        srtt: int | None = None
        rttvar = 0
        timeout = round(vector.initial * 1e6)
        low, high = round(vector.minimum * 1e6), round(vector.maximum * 1e6)
        for step in vector.steps:
            if step.rtt is None:
                timeout = min(timeout * 2, high)
            else:
                r = round(step.rtt * 1e6)
                if srtt is None:
                    srtt, rttvar = r, r // 2
                else:
                    rttvar = (3 * rttvar + abs(srtt - r)) // 4
                    srtt = (7 * srtt + r) // 8
                timeout = min(max(srtt + max(1000, 4 * rttvar), low), high)
            assert timeout == pytest.approx(step.timeout * 1e6, rel=1e-3), (vector.name, step)
