"""The fault plan: what goes wrong, and when, in a simulated shoe.

Written as one comma-separated list (the ``faults`` option of a ``sim://`` address)::

    misread@12,jam@20,early_draw,noise=0.01,drop=0.05

``NAME@N`` fires once, at the N-th card the croupier pulls from the shoe since it started
(counted across decks and reboots). ``NAME=P`` is a line fault, applied with probability P
to what the shoe sends. docs/simulator.md describes what each fault does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from shoe_controller.errors import ConfigError


class CardFault(enum.StrEnum):
    MISREAD = "misread"
    DOUBLE = "double"
    DOUBLE_DETECTED = "double_detected"
    JAM = "jam"
    DOOR = "door"
    EARLY_DRAW = "early_draw"
    DISCONNECT = "disconnect"
    REBOOT = "reboot"
    SILENT = "silent"


#: Faults that may be written without ``@N``, and the card they then apply to.
_DEFAULT_CARD = {CardFault.EARLY_DRAW: 1}
_LINE_FAULTS = ("noise", "drop", "dup", "split")


@dataclass(frozen=True, slots=True)
class ScheduledFault:
    kind: CardFault
    #: The card number, counted from 1 since the simulator started.
    at: int

    def __str__(self) -> str:
        return f"{self.kind}@{self.at}"


@dataclass(frozen=True, slots=True)
class LineFaultRates:
    """Probabilities applied to the shoe->host stream: ``noise`` per byte (the byte is
    corrupted), ``drop``, ``dup`` and ``split`` per frame."""

    noise: float = 0.0
    drop: float = 0.0
    dup: float = 0.0
    split: float = 0.0

    @property
    def any(self) -> bool:
        return any((self.noise, self.drop, self.dup, self.split))


@dataclass(frozen=True, slots=True)
class FaultPlan:
    scheduled: tuple[ScheduledFault, ...] = ()
    line: LineFaultRates = LineFaultRates()

    @classmethod
    def parse(cls, text: str) -> FaultPlan:
        """Parse the ``faults`` option; raises ConfigError naming the bad item."""
        scheduled: list[ScheduledFault] = []
        rates: dict[str, float] = {}
        for raw in text.split(","):
            item = raw.strip()
            if not item:
                continue
            if "=" in item:
                name, _, value = item.partition("=")
                rates[_line_fault_name(name.strip(), item)] = _probability(value, item)
            else:
                scheduled.append(_scheduled(item))
        return cls(tuple(scheduled), LineFaultRates(**rates))

    def faults_at(self, card: int) -> frozenset[CardFault]:
        return frozenset(f.kind for f in self.scheduled if f.at == card)

    def __str__(self) -> str:
        items = [str(f) for f in self.scheduled]
        items += [
            f"{name}={getattr(self.line, name)}"
            for name in _LINE_FAULTS
            if getattr(self.line, name)
        ]
        return ",".join(items)


def _known() -> str:
    names = [f"{kind}@N" for kind in CardFault] + [f"{name}=P" for name in _LINE_FAULTS]
    return ", ".join(names)


def _scheduled(item: str) -> ScheduledFault:
    name, at_sign, number = item.partition("@")
    try:
        kind = CardFault(name.strip())
    except ValueError:
        raise ConfigError(f"unknown fault {item!r}: use {_known()}") from None
    if not at_sign:
        if kind not in _DEFAULT_CARD:
            raise ConfigError(
                f"fault {item!r} needs the card it happens at, e.g. {kind}@12 (the 12th card drawn)"
            )
        return ScheduledFault(kind, _DEFAULT_CARD[kind])
    try:
        at = int(number)
    except ValueError:
        at = 0
    if at < 1:
        raise ConfigError(f"fault {item!r}: the card number after @ must be 1 or more")
    return ScheduledFault(kind, at)


def _line_fault_name(name: str, item: str) -> str:
    if name not in _LINE_FAULTS:
        raise ConfigError(f"unknown fault {item!r}: use {_known()}")
    return name


def _probability(value: str, item: str) -> float:
    try:
        p = float(value)
    except ValueError:
        p = -1.0
    if not 0.0 <= p <= 1.0:
        raise ConfigError(f"fault {item!r}: the probability must be a number from 0 to 1")
    return p
