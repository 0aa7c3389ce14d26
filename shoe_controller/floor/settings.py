"""What the box forwards with: the configuration's ``[floor]`` section
(:mod:`shoe_controller.service.floor_section`) with the command line's ``--broker`` and
``--table-id`` winning over it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shoe_controller.errors import ConfigError
from shoe_controller.floor.broker import BrokerSettings, broker_settings, check_name
from shoe_controller.service.floor_section import (
    DEFAULT_DRAIN_SECONDS,
    DEFAULT_KEEPALIVE,
    DEFAULT_REPLAY_INTERVAL,
    FloorSection,
)


@dataclass(frozen=True)
class FloorSettings:
    """Everything the forwarder needs: the broker, which table of which site this is, the
    box's signing key (None: beside the journal) and the floor's public key (None: replay
    requests are not answered)."""

    broker: BrokerSettings
    site: str
    table_id: str
    drain_seconds: float = DEFAULT_DRAIN_SECONDS
    keepalive: int = DEFAULT_KEEPALIVE
    signing_key: Path | None = None
    floor_key: Path | None = None
    replay_interval: float = DEFAULT_REPLAY_INTERVAL


def floor_settings(
    section: FloorSection, *, broker: str | None = None, table_id: str | None = None
) -> FloorSettings | None:
    """The settings to forward with, ``--broker`` and ``--table-id`` winning over the
    section; None when no broker is named anywhere (nothing is forwarded)."""
    url = broker or section.broker
    if url is None:
        if table_id is not None:
            raise ConfigError(
                "--table-id needs a broker: give --broker mqtt://HOST:PORT or set "
                "broker in the configuration's [floor] section"
            )
        return None
    table = check_name(table_id, "--table-id") if table_id is not None else section.table_id
    if table is None:
        raise ConfigError(
            "forwarding to the floor needs this table's id: give --table-id ID or set "
            "table_id in the configuration's [floor] section"
        )
    settings = broker_settings(
        url,
        username=section.username,
        password=section.password,
        password_file=section.password_file,
        ca_file=section.ca_file,
        cert_file=section.cert_file,
        key_file=section.key_file,
        what="--broker" if broker else "floor.broker",
    )
    return FloorSettings(
        settings,
        section.site,
        table,
        section.drain_seconds,
        section.keepalive,
        section.signing_key,
        section.floor_key,
        section.replay_interval,
    )
