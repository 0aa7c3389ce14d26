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
    profile = "pr-pai-gow-poker"     # a rules profile shipped with the package
    dice_wager = false               # and only what that profile lets the operator set

    [[approved_shoes]]               # the operator's approved list (rule A1)
    model = "ES-7"
    firmware_version = "1.4.2"
    firmware_digest = "<64 hex digits: SHA-256 of the firmware image>"
    image = "/etc/shoe-controller/firmware/es7-1.4.2.bin"   # optional: seeded verification

    [output]
    color = "auto"                   # auto, always, never

    [api]                            # the dealer console and the API: docs/api.md
    listen = "127.0.0.1:8750"        # off when absent (or --api on the command line)
    users = "/var/lib/shoe-controller/users.json"   # default: beside the journal
    tls_cert = "/etc/shoe-controller/api.crt"       # required off loopback
    tls_key = "/etc/shoe-controller/api.key"
    token_ttl = 43200                # seconds a sign-in lasts at most (12 h)
    idle_timeout = 1800              # seconds a session may stay unused
    host_names = ["box-7.casino.lan"]   # names clients use; default: the listen address
    max_connections = 256            # connections in all
    max_connections_per_address = 16 # connections from one client address (IPv6: a /64)
    sign_in_deadline = 5             # seconds to send a request, and to sign in on a WebSocket
    console_addresses = ["127.0.0.1"] # the table's console: its buttons, its room (loopback)

    [floor]                          # forwarding to the floor: see floor_settings.py
    broker = "mqtt://broker.floor:1883"
    table_id = "PG-07"

    [external_rng]                   # a generator that signs its numbers: external_rng.py
    device = "RNG-0042"
    algorithm = "ed25519"            # or "hmac-sha256"
    key = "/etc/shoe-controller/rng-0042.pub"
"""

from __future__ import annotations

import hashlib
import ipaddress
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from shoe_controller.errors import ConfigError
from shoe_controller.files import MAX_TEXT_FILE, FileTooLarge, NotRegularFile, read_regular
from shoe_controller.link.approval import ApprovalList
from shoe_controller.procedure.table import TableRules
from shoe_controller.profiles import DEFAULT_PROFILE, RulesProfile, load_profile
from shoe_controller.profiles.evidence import EvidenceRules
from shoe_controller.service.external_rng import ExternalRngSettings
from shoe_controller.service.external_rng import parse_section as parse_external_rng
from shoe_controller.service.floor_section import FloorSection, parse_floor_section

SECTIONS = (
    "device",
    "journal",
    "table",
    "approved_shoes",
    "output",
    "api",
    "floor",
    "external_rng",
)
API_KEYS = (
    "listen",
    "users",
    "tls_cert",
    "tls_key",
    "token_ttl",
    "idle_timeout",
    "host_names",
    "max_connections",
    "max_connections_per_address",
    "sign_in_deadline",
    "console_addresses",
)
COLOR_CHOICES = ("auto", "always", "never")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
#: The table's console by default: the box's own screen.
LOOPBACK: tuple[Network, ...] = (
    ipaddress.IPv4Network("127.0.0.0/8"),
    ipaddress.IPv6Network("::1/128"),
)


def _default_profile() -> RulesProfile:
    return load_profile(DEFAULT_PROFILE)


@dataclass(frozen=True)
class ApiConfig:
    """The ``[api]`` section: where the API listens (None: not served), its users file, its
    TLS files, how long sessions last (seconds), the host names it answers to (none: the
    listen address), and the limits on its clients (docs/api.md, "Threat model")."""

    listen: str | None = None
    users: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    token_ttl: float = 12 * 3600.0
    idle_timeout: float = 30 * 60.0
    host_names: tuple[str, ...] = ()
    max_connections: int = 256
    max_connections_per_address: int = 16
    sign_in_deadline: float = 5.0
    #: Where the table's console connects from: the shoe's buttons act for the dealer
    #: signed in there (E4), and its clients keep room of their own under the shared
    #: limits (docs/api.md, "The table's console and the shoe's buttons").
    console_addresses: tuple[Network, ...] = field(default_factory=lambda: LOOPBACK)


@dataclass(frozen=True)
class Config:
    device: str = "auto"
    journal_path: Path | None = None
    journal_key: Path | None = None
    #: The rules profile the table section chose, and the rules it gives once adjusted.
    profile: RulesProfile = field(default_factory=_default_profile)
    table: TableRules = field(default_factory=lambda: _default_profile().rules)
    #: The profile's rules of the record: the stub's, the external generator's signature.
    evidence: EvidenceRules = field(default_factory=lambda: _default_profile().evidence({}))
    approved: ApprovalList = field(default_factory=lambda: ApprovalList.from_config([]))
    color: str = "auto"
    api: ApiConfig = field(default_factory=ApiConfig)
    source: Path | None = None
    #: SHA-256 (hex) of the bytes the configuration was parsed from; None without a file.
    source_sha256: str | None = None
    floor: FloorSection = field(default_factory=FloorSection)
    #: The external generator that signs its numbers (rule B1); None: none configured.
    external_rng: ExternalRngSettings | None = None


def load_config(path: Path | None) -> Config:
    """Read and validate ``path``; None gives the defaults."""
    if path is None:
        return Config()
    raw = _read_config_file(path)
    config = parse_config(_parse_toml(raw, path), source=path)
    return replace(config, source_sha256=hashlib.sha256(raw).hexdigest())


def _read_config_file(path: Path) -> bytes:
    """The file's bytes (their digest goes into the record), or a ConfigError that says
    what is wrong with the path and what to do."""
    try:
        return read_regular(path, MAX_TEXT_FILE)
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
    except NotRegularFile as exc:
        raise ConfigError(
            f"configuration path {path} is not a file: {exc.strerror}; name the TOML file itself"
        ) from None
    except FileTooLarge as exc:
        raise ConfigError(
            f"configuration file {path} is too large: {exc.strerror}; name the TOML file itself"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read configuration file {path}: {exc.strerror or exc}; name a readable "
            "TOML file"
        ) from None


def _parse_toml(raw: bytes, path: Path) -> dict[str, Any]:
    """The TOML document in ``raw``, or a ConfigError naming the file and the fault."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"configuration file {path} is not UTF-8 text") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from None
    except RecursionError:
        # A hostile or wrong file can nest deeper than the parser's stack: that is a
        # configuration error too, not a crash.
        raise ConfigError(
            f"configuration file {path} nests arrays or tables too deeply to be a "
            "configuration: check that --config names the right file"
        ) from None


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
    api = _section(data, "api", where)
    _only(api, API_KEYS, "api", where)
    approved = data.get("approved_shoes", [])
    if not isinstance(approved, list):
        raise ConfigError(
            f"{where}approved_shoes must be a list of tables ([[approved_shoes]]), "
            f"not {type(approved).__name__}"
        )
    base = source.parent if source else Path.cwd()
    try:
        profile = load_profile(table.get("profile", DEFAULT_PROFILE))
        settings = {k: v for k, v in table.items() if k != "profile"}
        rules = profile.apply(settings)
        evidence = profile.evidence(settings)
        approval = ApprovalList.from_config(approved, base_dir=base)
    except ConfigError as exc:
        raise ConfigError(f"{where}{exc}") from None
    color = _str(output, "color", "auto", "output", where)
    if color not in COLOR_CHOICES:
        raise ConfigError(
            f"{where}output.color is {color!r}; expected one of {', '.join(COLOR_CHOICES)}"
        )
    floor = parse_floor_section(_section(data, "floor", where), base, where)
    external_rng = parse_external_rng(_section(data, "external_rng", where), base, where)
    return Config(
        device=_str(device, "address", "auto", "device", where),
        journal_path=_path(journal, "path", base, where),
        journal_key=_path(journal, "key", base, where),
        profile=profile,
        table=rules,
        evidence=evidence,
        approved=approval,
        color=color,
        api=_api(api, base, where),
        source=source,
        floor=floor,
        external_rng=external_rng,
    )


def _api(section: Mapping[str, Any], base: Path, where: str) -> ApiConfig:
    listen = _str(section, "listen", "", "api", where) if "listen" in section else None
    return ApiConfig(
        listen=listen,
        users=_path(section, "users", base, where, "api"),
        tls_cert=_path(section, "tls_cert", base, where, "api"),
        tls_key=_path(section, "tls_key", base, where, "api"),
        token_ttl=_seconds(section, "token_ttl", ApiConfig.token_ttl, where),
        idle_timeout=_seconds(section, "idle_timeout", ApiConfig.idle_timeout, where),
        host_names=_names(section, "host_names", where),
        max_connections=_count(section, "max_connections", ApiConfig.max_connections, where),
        max_connections_per_address=_count(
            section, "max_connections_per_address", ApiConfig.max_connections_per_address, where
        ),
        sign_in_deadline=_seconds(section, "sign_in_deadline", ApiConfig.sign_in_deadline, where),
        console_addresses=_networks(section, "console_addresses", where),
    )


def _networks(section: Mapping[str, Any], key: str, where: str) -> tuple[Network, ...]:
    """Addresses or networks (``192.0.2.17``, ``fd00:7::/64``); absent: loopback."""
    if key not in section:
        return LOOPBACK
    value = section[key]
    try:
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise ValueError
        return tuple(ipaddress.ip_network(v.strip(), strict=False) for v in value)
    except ValueError:
        raise ConfigError(
            f'{where}api.{key} must be a list of IP addresses or networks, e.g. ["127.0.0.1"] '
            f'or ["192.0.2.17", "fd00:7::/64"], not {value!r}'
        ) from None


def _names(section: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = section.get(key, [])
    if not isinstance(value, list) or not all(
        isinstance(name, str) and name.strip() for name in value
    ):
        raise ConfigError(
            f'{where}api.{key} must be a list of host names, e.g. ["box-7.casino.lan"], '
            f"not {value!r}"
        )
    return tuple(name.strip() for name in value)


def _count(section: Mapping[str, Any], key: str, default: int, where: str) -> int:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 1_000_000:
        raise ConfigError(f"{where}api.{key} must be a whole number above 0, not {value!r}")
    return value


def _seconds(section: Mapping[str, Any], key: str, default: float, where: str) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9:
        raise ConfigError(f"{where}api.{key} must be a number of seconds above 0, not {value!r}")
    return float(value)


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


def _path(
    section: Mapping[str, Any], key: str, base: Path, where: str, name: str = "journal"
) -> Path | None:
    if key not in section:
        return None
    value = section[key]
    if not isinstance(value, str) or not value or "\x00" in value:
        raise ConfigError(f"{where}{name}.{key} must be a path string, not {value!r}")
    try:
        path = Path(value).expanduser()
    except RuntimeError:
        # "~user/..." naming a user this system does not know.
        raise ConfigError(
            f"{where}{name}.{key} is {value!r}, whose home directory is unknown here: "
            "give an absolute path"
        ) from None
    return path if path.is_absolute() else base / path
