"""The configuration's ``[floor]`` section as written: where the box forwards its public
record. (:mod:`shoe_controller.floor.settings` turns it, with the command line, into what
the forwarder runs with.)

::

    [floor]
    broker = "mqtts://broker.floor.example:8883"   # or mqtt://HOST:PORT (no TLS)
    site = "sanjuan"                 # the casino; one topic level
    table_id = "PG-07"               # this table; one topic level
    drain_seconds = 10               # at a requested stop, forward the backlog this long
    keepalive = 15                   # seconds; the floor sees a silent box offline after 1.5x
    username = "pg-07"               # optional: broker credentials
    password_file = "/etc/shoe-controller/broker.password"   # or password = "..." inline
    ca_file = "/etc/shoe-controller/floor-ca.pem"            # optional: TLS trust
    cert_file = "/etc/shoe-controller/pg-07.crt"             # optional: client certificate
    key_file = "/etc/shoe-controller/pg-07.key"
    signing_key = "/var/lib/shoe-controller/journal.floor-key"  # default: beside the journal
    floor_key = "/etc/shoe-controller/floor.pub"    # the floor's public key: signs replays
    replay_interval = 10             # seconds: the box answers one replay request at most

Without ``broker`` (and without ``--broker`` on the command line) nothing is forwarded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from floor_protocol.errors import InvalidName
from floor_protocol.topics import check_name
from shoe_controller.errors import ConfigError

KEYS: Final = (
    "broker",
    "site",
    "table_id",
    "drain_seconds",
    "keepalive",
    "username",
    "password",
    "password_file",
    "ca_file",
    "cert_file",
    "key_file",
    "signing_key",
    "floor_key",
    "replay_interval",
)
DEFAULT_SITE: Final = "default"
DEFAULT_DRAIN_SECONDS: Final = 10.0
DEFAULT_KEEPALIVE: Final = 15
DEFAULT_REPLAY_INTERVAL: Final = 10.0


@dataclass(frozen=True)
class FloorSection:
    """The ``[floor]`` section as written, before the command line overrides it."""

    broker: str | None = None
    site: str = DEFAULT_SITE
    table_id: str | None = None
    drain_seconds: float = DEFAULT_DRAIN_SECONDS
    keepalive: int = DEFAULT_KEEPALIVE
    username: str | None = None
    password: str | None = None
    password_file: Path | None = None
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    signing_key: Path | None = None
    floor_key: Path | None = None
    replay_interval: float = DEFAULT_REPLAY_INTERVAL


def parse_floor_section(section: Mapping[str, Any], base: Path, where: str = "") -> FloorSection:
    """Validate ``[floor]``; relative file paths are taken from ``base``."""
    _check_keys(section, where)
    drain_seconds = _drain_seconds(section, where)
    keepalive = _keepalive(section, where)
    site = _text(section, "site", where)
    table_id = _text(section, "table_id", where)
    # These say where themselves; only the name checks and the section's own are prefixed.
    broker = _text(section, "broker", where)
    username = _text(section, "username", where)
    password = _text(section, "password", where)
    password_file = _path(section, "password_file", base, where)
    ca_file = _path(section, "ca_file", base, where)
    cert_file = _path(section, "cert_file", base, where)
    key_file = _path(section, "key_file", base, where)
    signing_key = _path(section, "signing_key", base, where)
    floor_key = _path(section, "floor_key", base, where)
    replay_interval = _seconds(section, "replay_interval", DEFAULT_REPLAY_INTERVAL, where)
    try:
        return FloorSection(
            broker=broker,
            site=check_name(site, "floor.site") if site is not None else DEFAULT_SITE,
            table_id=check_name(table_id, "floor.table_id") if table_id is not None else None,
            drain_seconds=drain_seconds,
            keepalive=keepalive,
            username=username,
            password=password,
            password_file=password_file,
            ca_file=ca_file,
            cert_file=cert_file,
            key_file=key_file,
            signing_key=signing_key,
            floor_key=floor_key,
            replay_interval=replay_interval,
        )
    except (ConfigError, InvalidName) as exc:
        raise ConfigError(f"{where}{exc}") from None


def _check_keys(section: Mapping[str, Any], where: str) -> None:
    # A misspelt key would otherwise be ignored and its setting silently take the default.
    for key in section:
        if key not in KEYS:
            raise ConfigError(
                f"{where}unknown key floor.{key}; known keys in [floor]: {', '.join(KEYS)}"
            )


def _text(section: Mapping[str, Any], key: str, where: str) -> str | None:
    """``floor.KEY`` as a non-empty string; None when it is not set."""
    value = section.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}floor.{key} must be a non-empty string, not {value!r}")
    return value


def _path(section: Mapping[str, Any], key: str, base: Path, where: str) -> Path | None:
    """``floor.KEY`` as a file path, relative ones taken from ``base``; None when not set."""
    value = _text(section, key, where)
    if value is None:
        return None
    # A NUL byte cannot be in a path: opening it later would fail far from the cause.
    if "\x00" in value:
        raise ConfigError(f"{where}floor.{key} must be a path, not {value!r}")
    candidate = Path(value)
    return candidate if candidate.is_absolute() else base / candidate


def _seconds(section: Mapping[str, Any], key: str, default: float, where: str) -> float:
    """``floor.KEY``: a finite number of seconds, 0 or more (a bool is not a number here)."""
    value = section.get(key, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ConfigError(
            f"{where}floor.{key} is {value!r}; expected a number of seconds, 0 or more"
        )
    return float(value)


def _drain_seconds(section: Mapping[str, Any], where: str) -> float:
    """``floor.drain_seconds``: a finite number, 0 or more (a bool is not a number here)."""
    drain = section.get("drain_seconds", DEFAULT_DRAIN_SECONDS)
    if (
        isinstance(drain, bool)
        or not isinstance(drain, int | float)
        or not math.isfinite(drain)
        or drain < 0
    ):
        raise ConfigError(
            f"{where}floor.drain_seconds is {drain!r}; expected a number of seconds, 0 or more"
        )
    return float(drain)


def _keepalive(section: Mapping[str, Any], where: str) -> int:
    """``floor.keepalive``: whole seconds, 1 to 3600 (a bool is not a number here)."""
    keepalive = section.get("keepalive", DEFAULT_KEEPALIVE)
    if isinstance(keepalive, bool) or not isinstance(keepalive, int) or not 1 <= keepalive <= 3600:
        raise ConfigError(
            f"{where}floor.keepalive is {keepalive!r}; expected whole seconds, 1 to 3600"
        )
    return keepalive
