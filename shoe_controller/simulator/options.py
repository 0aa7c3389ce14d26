"""Everything that configures a simulated shoe, and its ``sim://`` address form.

``sim://?seed=7&deck=short&faults=misread@12,noise=0.01&pace=0`` sets the options named
in the query; every option has a default, so ``sim://`` alone is a well-behaved shoe.
docs/simulator.md lists them all.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from firmware_protocol import Button
from firmware_protocol.timing import (
    HEARTBEAT_PERIOD,
    MAX_UNACKED_EVENTS,
    RETRANSMIT_TIMEOUT,
    RETRANSMIT_TIMEOUT_MAX,
)
from shoe_controller.errors import ConfigError
from shoe_controller.simulator.faults import FaultPlan
from shoe_controller.simulator.firmware import DEFAULT_SERIAL_NUMBER, MODEL

SCHEME = "sim"


class DeckVariant(enum.StrEnum):
    """What the croupier loads: ``standard`` 53 cards (52 and a joker), ``short`` 52 (one
    missing), ``long`` 54 (one extra), ``duplicate`` 53 (one card twice, one missing)."""

    STANDARD = "standard"
    SHORT = "short"
    LONG = "long"
    DUPLICATE = "duplicate"


@dataclass(frozen=True, slots=True)
class ScriptedPress:
    """The croupier presses ``button`` ``after`` seconds after each deck is loaded."""

    button: Button
    after: float

    def __str__(self) -> str:
        return f"{self.button.name.lower()}@{self.after:g}"


@dataclass(frozen=True, slots=True)
class SimOptions:
    seed: int = 0
    deck: DeckVariant = DeckVariant.STANDARD
    #: Apply ``deck`` to every deck the croupier loads, not only the first.
    repeat_variant: bool = False
    #: Seconds between two cards the croupier pulls (0: as fast as the gate lets them).
    pace: float = 0.0
    #: Load the next deck when the shoe is empty and its gate locked, and take the deck out
    #: when the table asks for it on the shoe's display.
    autoload: bool = True
    serial_number: str = DEFAULT_SERIAL_NUMBER
    #: The model in Hello: another model with the same serial number is another shoe.
    model: str = MODEL
    faults: FaultPlan = field(default_factory=FaultPlan)
    buttons: tuple[ScriptedPress, ...] = ()
    #: A reboot keeps unacknowledged events (battery-backed memory) or loses them.
    persist: bool = True
    silent_for: float = 10.0
    jam_for: float = 1.0
    door_for: float = 1.0
    heartbeat: float = HEARTBEAT_PERIOD
    retransmit: float = RETRANSMIT_TIMEOUT
    retransmit_max: float = RETRANSMIT_TIMEOUT_MAX
    window: int = MAX_UNACKED_EVENTS
    #: Answer the first ``busy`` SetGate commands that open the gate with Nak(BUSY).
    busy: int = 0
    #: Announce FAST_RECOVERY: answer ResendEvents at once, time retransmissions from the
    #: measured round trip. Off: a shoe of the protocol's first release, timer only.
    fast_recovery: bool = True

    def __post_init__(self) -> None:
        if self.retransmit_max < self.retransmit:
            raise ConfigError(
                f"simulator option retransmit_max={self.retransmit_max:g} is below "
                f"retransmit={self.retransmit:g}: make it at least as long"
            )

    @classmethod
    def from_address(cls, address: str) -> SimOptions:
        """Options from a ``sim://[?name=value&...]`` address; ConfigError when bad."""
        try:
            parts = urlsplit(address)
        except ValueError:  # e.g. an unclosed "[" read as an IPv6 host
            parts = urlsplit("")
        if parts.scheme != SCHEME or parts.netloc or parts.path not in ("", "/"):
            raise ConfigError(
                f"{address!r} is not a simulator address: write sim:// or "
                "sim://?seed=7&deck=short&faults=misread@12&pace=0"
            )
        values: dict[str, Any] = {}
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            key = _ALIASES.get(name, name)
            parser = _PARSERS.get(key)
            if parser is None:
                raise ConfigError(
                    f"unknown simulator option {name!r}: use one of {', '.join(_ADDRESS_NAMES)}"
                )
            if key in values:
                raise ConfigError(f"simulator option {name!r} is given twice: keep one")
            values[key] = parser(name, value)
        return cls(**values)

    def with_changes(self, **changes: Any) -> SimOptions:
        return replace(self, **changes)


def _int(low: int, high: int) -> Callable[[str, str], int]:
    def parse(name: str, value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = low - 1
        if not low <= number <= high:
            raise ConfigError(
                f"simulator option {name}={value!r}: use a whole number from {low} to {high}"
            )
        return number

    return parse


def _seconds(name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not (math.isfinite(number) and number >= 0):
        raise ConfigError(f"simulator option {name}={value!r}: use a number of seconds >= 0")
    return number


def _positive_seconds(name: str, value: str) -> float:
    number = _seconds(name, value)
    if number == 0:
        raise ConfigError(f"simulator option {name}={value!r}: use a number of seconds > 0")
    return number


def _flag(name: str, value: str) -> bool:
    if value not in ("0", "1"):
        raise ConfigError(f"simulator option {name}={value!r}: use 1 (on) or 0 (off)")
    return value == "1"


def _deck(name: str, value: str) -> DeckVariant:
    try:
        return DeckVariant(value)
    except ValueError:
        names = ", ".join(v.value for v in DeckVariant)
        raise ConfigError(f"simulator option {name}={value!r}: use one of {names}") from None


def _serial(name: str, value: str) -> str:
    if not value or len(value.encode("utf-8")) > 32 or not value.isprintable():
        raise ConfigError(f"simulator option {name}={value!r}: use 1 to 32 printable characters")
    return value


def _faults(name: str, value: str) -> FaultPlan:
    return FaultPlan.parse(value)


def _buttons(name: str, value: str) -> tuple[ScriptedPress, ...]:
    presses = []
    for raw in value.split(","):
        item = raw.strip()
        if not item:
            continue
        button_name, _, after = item.partition("@")
        try:
            button = Button[button_name.strip().upper()]
        except KeyError:
            names = ", ".join(b.name.lower() for b in Button)
            raise ConfigError(
                f"simulator option {name}: unknown button {button_name!r}: use {names}"
            ) from None
        seconds = _seconds(f"{name} ({button_name})", after) if after else 0.0
        presses.append(ScriptedPress(button, seconds))
    return tuple(presses)


_PARSERS: dict[str, Callable[[str, str], Any]] = {
    "seed": _int(0, 2**63 - 1),
    "deck": _deck,
    "repeat_variant": _flag,
    "pace": _seconds,
    "autoload": _flag,
    "serial_number": _serial,
    "model": _serial,
    "faults": _faults,
    "buttons": _buttons,
    "persist": _flag,
    "silent_for": _seconds,
    "jam_for": _seconds,
    "door_for": _seconds,
    "heartbeat": _positive_seconds,
    "retransmit": _positive_seconds,
    "retransmit_max": _positive_seconds,
    "window": _int(1, 4096),
    "busy": _int(0, 1_000_000),
    "fast_recovery": _flag,
}
#: Short names accepted in addresses.
_ALIASES = {"serial": "serial_number"}
#: The option names as written in an address.
_ADDRESS_NAMES = sorted((_PARSERS.keys() - _ALIASES.values()) | _ALIASES.keys())
#: Every option name a ``sim://`` address may use, aliases included.
OPTION_NAMES: tuple[str, ...] = tuple(sorted(_PARSERS.keys() | _ALIASES.keys()))
