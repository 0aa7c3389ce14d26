"""sim:// addresses and the fault plan: every option parsed, every mistake one clear line."""

from __future__ import annotations

import pytest

from firmware_protocol import Button
from firmware_protocol.timing import HEARTBEAT_PERIOD, MAX_UNACKED_EVENTS, RETRANSMIT_TIMEOUT
from shoe_controller.errors import ConfigError
from shoe_controller.simulator import (
    CardFault,
    DeckVariant,
    FaultPlan,
    LineFaultRates,
    ScheduledFault,
    ScriptedPress,
    SimOptions,
)


def test_bare_address_gives_the_defaults() -> None:
    options = SimOptions.from_address("sim://")
    assert options == SimOptions()
    assert options.serial_number == "SIM-00001"
    assert options.heartbeat == HEARTBEAT_PERIOD
    assert options.retransmit == RETRANSMIT_TIMEOUT
    assert options.window == MAX_UNACKED_EVENTS
    assert options.persist and options.autoload and options.pace == 0


def test_the_example_address() -> None:
    options = SimOptions.from_address(
        "sim://?seed=7&deck=short&faults=misread@12,noise=0.01&pace=0"
    )
    assert options.seed == 7
    assert options.deck is DeckVariant.SHORT
    assert options.faults.scheduled == (ScheduledFault(CardFault.MISREAD, 12),)
    assert options.faults.line == LineFaultRates(noise=0.01)
    assert options.pace == 0


def test_every_option() -> None:
    options = SimOptions.from_address(
        "sim://?seed=3&deck=duplicate&repeat_variant=1&pace=0.5&autoload=0&serial=BENCH-7"
        "&buttons=no_more_bets@0,confirm@1.5&persist=0&silent_for=2&jam_for=0.1"
        "&door_for=0.2&heartbeat=0.5&retransmit=0.1&retransmit_max=0.4&window=8"
        "&model=ES-SIM-2&busy=3"
        "&faults=jam@3,door@4,early_draw,drop=0.1,dup=0.2,split=0.3"
    )
    assert options == SimOptions(
        seed=3,
        deck=DeckVariant.DUPLICATE,
        repeat_variant=True,
        pace=0.5,
        autoload=False,
        serial_number="BENCH-7",
        buttons=(
            ScriptedPress(Button.NO_MORE_BETS, 0.0),
            ScriptedPress(Button.CONFIRM, 1.5),
        ),
        persist=False,
        silent_for=2.0,
        jam_for=0.1,
        door_for=0.2,
        heartbeat=0.5,
        retransmit=0.1,
        retransmit_max=0.4,
        window=8,
        model="ES-SIM-2",
        busy=3,
        faults=FaultPlan(
            (
                ScheduledFault(CardFault.JAM, 3),
                ScheduledFault(CardFault.DOOR, 4),
                ScheduledFault(CardFault.EARLY_DRAW, 1),
            ),
            LineFaultRates(drop=0.1, dup=0.2, split=0.3),
        ),
    )


def test_every_fault_name_parses() -> None:
    text = ",".join(f"{kind}@{n}" for n, kind in enumerate(CardFault, start=1))
    plan = FaultPlan.parse(text + ",noise=0.5")
    assert [f.kind for f in plan.scheduled] == list(CardFault)
    assert plan.faults_at(2) == {CardFault.DOUBLE}
    assert str(FaultPlan.parse(str(plan))) == str(plan)


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("usb://", "is not a simulator address"),
        ("sim://host", "is not a simulator address"),
        ("sim://?colour=red", "unknown simulator option 'colour'"),
        ("sim://?seed=x", "seed='x': use a whole number"),
        ("sim://?seed=-1", "use a whole number from 0"),
        ("sim://?seed=1&seed=2", "is given twice"),
        ("sim://?deck=huge", "use one of standard, short, long, duplicate"),
        ("sim://?pace=-1", "use a number of seconds >= 0"),
        ("sim://?pace=nan", "use a number of seconds >= 0"),
        ("sim://?heartbeat=0", "seconds > 0"),
        ("sim://?autoload=yes", "use 1 (on) or 0 (off)"),
        ("sim://?serial=", "1 to 32 printable characters"),
        ("sim://?window=0", "from 1 to 4096"),
        ("sim://?retransmit=1&retransmit_max=0.5", "make it at least as long"),
        ("sim://?faults=explode@3", "unknown fault 'explode@3'"),
        ("sim://?faults=misread", "needs the card it happens at, e.g. misread@12"),
        ("sim://?faults=jam@0", "must be 1 or more"),
        ("sim://?faults=jam@x", "must be 1 or more"),
        ("sim://?faults=noise=2", "probability must be a number from 0 to 1"),
        ("sim://?faults=static=0.1", "unknown fault 'static=0.1'"),
        ("sim://?buttons=panic@1", "unknown button 'panic'"),
        ("sim://?buttons=confirm@soon", "use a number of seconds"),
    ],
)
def test_bad_options_say_what_is_wrong_in_one_line(address: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        SimOptions.from_address(address)
    message = str(caught.value)
    assert says in message
    assert "\n" not in message


def test_unknown_option_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="seed") as caught:
        SimOptions.from_address("sim://?sed=1")
    assert "serial" in str(caught.value) and "serial_number" not in str(caught.value)


def test_an_address_urlsplit_cannot_read_is_a_config_error() -> None:
    # Found by the address fuzz target: an unclosed "[" reads as a broken IPv6 host.
    with pytest.raises(ConfigError, match="is not a simulator address"):
        SimOptions.from_address("SIM://[")
