"""Rules profiles: the game's constants as named, versioned data shipped with the package.

A profile is a TOML file in ``shoe_controller/profiles/`` (package data)::

    [profile]       name, version, title, source (the regulation it restates)
    [rules]         every TableRules field the profile fixes, and the rules of the record
                    (``stub``, ``external_rng_signature``: :mod:`.evidence`)
    [adjustable.KEY]
                    a key the operator's configuration may set, with what it may be:
                    values = [...] (one of these), min/max (an integer between them), or
                    labels = true (seat labels, one for each position)

The configuration's ``[table]`` section names a profile (``profile = "..."``, by default
:data:`DEFAULT_PROFILE`) and sets only what the profile declares adjustable: anything else
is a ConfigError naming the key and what may be set. The procedure itself does no I/O: this
module reads the files and hands it a validated :class:`TableRules`.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

from shoe_controller.errors import ConfigError
from shoe_controller.procedure.table import TableRules
from shoe_controller.profiles.evidence import KEYS as EVIDENCE_KEYS
from shoe_controller.profiles.evidence import EvidenceRules

#: The profile a configuration gets when it names none.
DEFAULT_PROFILE: Final = "pr-pai-gow-poker"

_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_SUFFIX = ".toml"


@dataclass(frozen=True, slots=True)
class Adjustable:
    """One key a configuration may set, and the values it may take."""

    key: str
    values: tuple[Any, ...] | None = None
    low: int | None = None
    high: int | None = None

    def allowed(self) -> str:
        """What the key may be, for a message."""
        if self.values is not None:
            return " or ".join(_toml(v) for v in self.values)
        if self.low is not None and self.high is not None:
            return f"an integer from {self.low} to {self.high}"
        return "a label for each position (a table of position = label)"

    def accepts(self, value: Any) -> bool:
        if self.values is not None:
            # By type too: TOML's 1 is not true.
            return any(type(value) is type(v) and value == v for v in self.values)
        if self.low is not None and self.high is not None:
            return type(value) is int and self.low <= value <= self.high
        return True  # seat labels: TableRules checks them against the positions


@dataclass(frozen=True, slots=True)
class RulesProfile:
    """A named, versioned set of table rules and what an operator may adjust in them."""

    name: str
    version: int
    title: str
    source: str
    #: The profile's ``[rules]`` as written (TOML values).
    defaults: Mapping[str, Any]
    adjustable: Mapping[str, Adjustable]

    @property
    def rules(self) -> TableRules:
        """The profile's rules with nothing adjusted."""
        return self.apply({})

    def apply(self, settings: Mapping[str, Any]) -> TableRules:
        """The profile's rules with ``settings`` (the configuration's ``[table]`` keys other
        than ``profile``) applied; a key or value the profile does not allow raises
        ConfigError naming it and what is allowed."""
        for key, value in settings.items():
            rule = self.adjustable.get(key)
            if rule is None:
                raise ConfigError(self._fixed(key))
            if not rule.accepts(value):
                raise ConfigError(
                    f"table.{key} is {_toml(value)}; the rules profile {self.label} allows "
                    f"{rule.allowed()}"
                )
        merged = {**self.defaults, **settings}
        return TableRules.from_mapping({k: v for k, v in merged.items() if k not in EVIDENCE_KEYS})

    def evidence(self, settings: Mapping[str, Any]) -> EvidenceRules:
        """The rules of the record (:mod:`.evidence`) the profile gives once ``settings``
        are applied (checked by :meth:`apply`)."""
        merged = {**self.defaults, **settings}
        return EvidenceRules.from_mapping({k: v for k, v in merged.items() if k in EVIDENCE_KEYS})

    @property
    def label(self) -> str:
        return f"{self.name} version {self.version}"

    def _fixed(self, key: str) -> str:
        settable = ", ".join(["profile", *self.adjustable])
        if key in self.defaults:
            what = f"is fixed at {_toml(self.defaults[key])} by the rules profile {self.label}"
        else:
            what = "is not a key the configuration may set"
        return f"table.{key} {what}; [table] may set only: {settable}"


def shipped_profiles() -> list[str]:
    """The names of the profiles shipped with this release, sorted."""
    return sorted(
        entry.name.removesuffix(_SUFFIX)
        for entry in _directory().iterdir()
        if entry.name.endswith(_SUFFIX)
    )


def load_profile(name: str) -> RulesProfile:
    """The shipped profile ``name``; ConfigError when there is none of that name."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name not in shipped_profiles():
        shown = _toml(name) if not isinstance(name, str) else repr(name)
        raise ConfigError(
            f"table.profile is {shown}, not a rules profile shipped with this release; "
            f"shipped: {', '.join(shipped_profiles())}"
        )
    return _load(name)


@functools.cache
def _load(name: str) -> RulesProfile:
    text = (_directory() / f"{name}{_SUFFIX}").read_text(encoding="utf-8")
    try:
        return profile_from_text(name, text)
    except ValueError as exc:
        # Package data, not the operator's: a broken one means a broken installation.
        raise ConfigError(
            f"the rules profile {name} shipped with this release is damaged ({exc}): "
            "reinstall shoe-controller"
        ) from None


def profile_from_text(name: str, text: str) -> RulesProfile:
    """The profile ``name`` written in ``text`` (a profile file's TOML); ValueError saying
    what is wrong. A profile under review is read this way before it ships."""
    try:
        return _parse(name, tomllib.loads(text))
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None


def _parse(name: str, data: Mapping[str, Any]) -> RulesProfile:
    head = data["profile"]
    if head["name"] != name:
        raise ValueError(f"its [profile] name is {head['name']!r}")
    version = head["version"]
    if type(version) is not int or version < 1:
        raise ValueError(f"version {version!r} is not a positive integer")
    defaults = dict(data["rules"])
    adjustable = {}
    for key, spec in data.get("adjustable", {}).items():
        values = spec.get("values")
        rule = Adjustable(
            key,
            values=tuple(values) if values is not None else None,
            low=spec.get("min"),
            high=spec.get("max"),
        )
        if values is None and (rule.low is None) != (rule.high is None):
            raise ValueError(f"adjustable.{key} needs both min and max")
        if values is None and rule.low is None and spec.get("labels") is not True:
            raise ValueError(f"adjustable.{key} says neither values, min/max nor labels")
        adjustable[key] = rule
    profile = RulesProfile(
        name, version, str(head["title"]), str(head["source"]), defaults, adjustable
    )
    try:
        profile.apply({})
        profile.evidence({})
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return profile


def _directory() -> Any:
    return resources.files("shoe_controller.profiles")


def _toml(value: Any) -> str:
    """``value`` as the configuration would write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)
