"""What every ``shoe-diag`` command shares: its options resolved, the configuration, the
output, and the plain forms of the shoe's identity and messages for tables and JSON.
"""

from __future__ import annotations

import argparse
import enum
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shoe_controller.box.installation import CONFIG_FILE
from shoe_controller.cli.output import Output, Styled

if TYPE_CHECKING:
    from firmware_protocol import Message
    from shoe_controller.link.approval import ApprovalList
    from shoe_controller.link.identity import ShoeIdentity
    from shoe_controller.service.config import Config

#: Read when --config is not given and the file exists (docs/install.md, step 4).
DEFAULT_CONFIG: Path = CONFIG_FILE


@dataclass
class Context:
    """One run of a command: its arguments, and the configuration once loaded."""

    args: argparse.Namespace
    _config: Config | None = field(default=None, init=False)
    _out: Output | None = field(default=None, init=False)

    def option(self, name: str, default: Any = None) -> Any:
        return getattr(self.args, name, default)

    @property
    def json(self) -> bool:
        return bool(self.option("json", False))

    @property
    def config_path(self) -> Path | None:
        """--config, else the installed configuration when there is one."""
        given: Path | None = self.option("config")
        if given is not None:
            return given
        return DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None

    def config(self) -> Config:
        """The configuration (loaded once; a bad one raises ConfigError)."""
        if self._config is None:
            from shoe_controller.service.config import load_config

            self._config = load_config(self.config_path)
        return self._config

    @property
    def approved(self) -> ApprovalList:
        return self.config().approved

    @property
    def device(self) -> str:
        """--device, else the configuration's address, else auto."""
        given: str | None = self.option("device")
        return given if given else self.config().device

    @property
    def out(self) -> Output:
        if self._out is None:
            color: str | None = self.option("color")
            if color is None:
                # Only commands that read the configuration take its colour setting.
                color = self._config.color if self._config is not None else "auto"
            self._out = Output(json_mode=self.json, color=color)
        return self._out


def identity_fields(identity: ShoeIdentity) -> dict[str, Any]:
    """The identity as JSON: capability names in lower case, the digest in hex."""
    return {
        "model": identity.model,
        "serial_number": identity.serial_number,
        "hardware_revision": identity.hardware_revision,
        "firmware_version": identity.firmware_version,
        "firmware_digest": identity.firmware_digest,
        "protocol_versions": list(identity.protocol_versions),
        "capabilities": capability_names(int(identity.capabilities)),
        "boot_id": f"{identity.boot_id:08x}",
    }


def capability_names(bits: int) -> list[str]:
    from firmware_protocol import Capability

    names = [flag.name.lower() for flag in Capability if flag.name and bits & flag.value]
    unknown = bits & ~sum(flag.value for flag in Capability)
    if unknown:
        names.append(f"0x{unknown:02x}")
    return names


def message_fields(message: Message) -> dict[str, Any]:
    """A message's fields as plain JSON values (cards as text, bytes in hex)."""
    return {f.name: plain(getattr(message, f.name)) for f in fields(message)}  # type: ignore[arg-type]


def plain(value: Any) -> Any:
    from firmware_protocol import Card

    if isinstance(value, Card):
        return value.text
    if isinstance(value, enum.Enum):
        return value.name.lower()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    return value


def show_value(value: Any) -> str:
    """A plain value as a table cell."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return "-" if value is None else str(value)


def key_values(
    out: Output, rows: list[tuple[str, str]], styles: dict[str, tuple[str, ...]] | None = None
) -> None:
    """Rows of "key  value", keys aligned; ``styles`` paints the values of some keys."""
    width = max((len(key) for key, _ in rows), default=0)
    for key, value in rows:
        out.parts(f"{key.ljust(width)}  ", Styled(value, (styles or {}).get(key, ())))
