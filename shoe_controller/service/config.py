"""The configuration file: one TOML document, validated at start.

Every section is optional; with no file at all the defaults run the demo. Errors name the
key, what it holds and what is expected, in one line, and raise ConfigError.

::

    [device]
    address = "auto"                 # a path, a pyserial URL, usb://, sim://, or auto

    [journal]
    path = "/var/lib/shoe-controller/journal.sqlite3"
    key = "/var/lib/shoe-controller/journal.key"

    [table]                          # the table rules: see docs/procedure.md
    positions = 7

    [[approved_shoes]]               # the operator's approved list (rule A1)
    model = "ES-7"
    firmware_version = "1.4.2"
    firmware_digest = "<64 hex digits: SHA-256 of the firmware image>"
    image = "/etc/shoe-controller/firmware/es7-1.4.2.bin"   # optional: seeded verification

    [output]
    color = "auto"                   # auto, always, never

    [floor]                          # forwarding to the floor: see floor_settings.py
    broker = "mqtt://broker.floor:1883"
    table_id = "PG-07"
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shoe_controller.errors import ConfigError
from shoe_controller.link.approval import ApprovalList
from shoe_controller.procedure.table import TableRules
from shoe_controller.service.floor_settings import FloorSection, parse_floor_section

SECTIONS = ("device", "journal", "table", "approved_shoes", "output", "floor")
COLOR_CHOICES = ("auto", "always", "never")


@dataclass(frozen=True)
class Config:
    device: str = "auto"
    journal_path: Path | None = None
    journal_key: Path | None = None
    table: TableRules = field(default_factory=TableRules)
    approved: ApprovalList = field(default_factory=lambda: ApprovalList.from_config([]))
    color: str = "auto"
    source: Path | None = None
    floor: FloorSection = field(default_factory=FloorSection)


def load_config(path: Path | None) -> Config:
    """Read and validate ``path``; None gives the defaults."""
    if path is None:
        return Config()
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"configuration file {path} does not exist: check --config, or omit it to run "
            "with the defaults"
        ) from None
    except PermissionError:
        raise ConfigError(
            f"configuration file {path} is not readable by this user: fix its permissions"
        ) from None
    except IsADirectoryError:
        raise ConfigError(f"configuration path {path} is a directory, not a TOML file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"configuration file {path} is not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from None
    return parse_config(data, source=path)


def parse_config(data: Mapping[str, Any], source: Path | None = None) -> Config:
    where = f"{source}: " if source else ""
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise ConfigError(
            f"{where}unknown section or key {unknown[0]!r}; known sections: " + ", ".join(SECTIONS)
        )
    device = _section(data, "device", where)
    _only(device, ("address",), "device", where)
    journal = _section(data, "journal", where)
    _only(journal, ("path", "key"), "journal", where)
    output = _section(data, "output", where)
    _only(output, ("color",), "output", where)
    table = _section(data, "table", where)
    approved = data.get("approved_shoes", [])
    if not isinstance(approved, list):
        raise ConfigError(
            f"{where}approved_shoes must be a list of tables ([[approved_shoes]]), "
            f"not {type(approved).__name__}"
        )
    base = source.parent if source else Path.cwd()
    try:
        rules = TableRules.from_mapping(table)
        approval = ApprovalList.from_config(approved, base_dir=base)
    except ConfigError as exc:
        raise ConfigError(f"{where}{exc}") from None
    color = _str(output, "color", "auto", "output", where)
    if color not in COLOR_CHOICES:
        raise ConfigError(
            f"{where}output.color is {color!r}; expected one of {', '.join(COLOR_CHOICES)}"
        )
    floor = parse_floor_section(_section(data, "floor", where), base, where)
    return Config(
        device=_str(device, "address", "auto", "device", where),
        journal_path=_path(journal, "path", base, where),
        journal_key=_path(journal, "key", base, where),
        table=rules,
        approved=approval,
        color=color,
        source=source,
        floor=floor,
    )


def _section(data: Mapping[str, Any], name: str, where: str) -> Mapping[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{where}{name} must be a table ([{name}]), not {type(value).__name__}")
    return value


def _only(section: Mapping[str, Any], keys: tuple[str, ...], name: str, where: str) -> None:
    for key in section:
        if key not in keys:
            raise ConfigError(
                f"{where}unknown key {name}.{key}; known keys in [{name}]: {', '.join(keys)}"
            )


def _str(section: Mapping[str, Any], key: str, default: str, name: str, where: str) -> str:
    value = section.get(key, default)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}{name}.{key} must be a non-empty string, not {value!r}")
    return value


def _path(section: Mapping[str, Any], key: str, base: Path, where: str) -> Path | None:
    if key not in section:
        return None
    value = section[key]
    if not isinstance(value, str) or not value or "\x00" in value:
        raise ConfigError(f"{where}journal.{key} must be a path string, not {value!r}")
    try:
        path = Path(value).expanduser()
    except RuntimeError:
        # "~user/..." naming a user this system does not know.
        raise ConfigError(
            f"{where}journal.{key} is {value!r}, whose home directory is unknown here: "
            "give an absolute path"
        ) from None
    return path if path.is_absolute() else base / path
