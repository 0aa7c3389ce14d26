"""The floor's MQTT broker as both sides connect to it: its address and credentials, and a
paho client set up for it (MQTT 5, TLS and credentials as configured), with the floor
protocol's properties turned into paho's and back.

The box's forwarder and the floor's commands (``shoe-floor``) both connect through this
module; what they say to each other is :mod:`floor_protocol`'s.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from floor_protocol import properties as floor_properties
from floor_protocol import topics
from floor_protocol.errors import InvalidName
from shoe_controller.errors import ConfigError

SCHEMES: Final = {"mqtt": 1883, "mqtts": 8883}
LOOPBACK: Final = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True)
class BrokerSettings:
    """Where the broker is and how to authenticate to it."""

    url: str
    host: str
    port: int
    tls: bool
    username: str | None = None
    password: str | None = None
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    @property
    def open(self) -> bool:
        """Neither TLS nor a user name: anyone who reaches the broker may publish."""
        return not self.tls and not self.username

    def describe(self) -> str:
        """The address for people (never the password)."""
        user = f"{self.username}@" if self.username else ""
        return f"{'mqtts' if self.tls else 'mqtt'}://{user}{self.host}:{self.port}"


def parse_broker_url(text: str, *, what: str = "broker") -> tuple[str, int, bool]:
    """``mqtt://HOST[:PORT]`` or ``mqtts://HOST[:PORT]`` -> (host, port, tls)."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"{what} {text!r} is not a broker address ({exc})") from None
    if parts.scheme not in SCHEMES:
        raise ConfigError(
            f"{what} {text!r} is not a broker address: use mqtt://HOST:PORT, or mqtts://HOST:PORT "
            "for TLS"
        )
    if not parts.hostname:
        raise ConfigError(f"{what} {text!r} names no host: use mqtt://HOST:PORT")
    if parts.username or parts.password:
        raise ConfigError(
            f"{what} {text!r} carries credentials: give the user name and password file in "
            "the configuration instead, so that they do not show in process listings"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigError(f"{what} {text!r} has a path or options: use mqtt://HOST:PORT")
    return parts.hostname, port or SCHEMES[parts.scheme], parts.scheme == "mqtts"


def broker_settings(
    url: str,
    *,
    username: str | None = None,
    password: str | None = None,
    password_file: Path | None = None,
    ca_file: Path | None = None,
    cert_file: Path | None = None,
    key_file: Path | None = None,
    what: str = "broker",
) -> BrokerSettings:
    """Validate a broker's address and credentials; read the password file now, so that a
    missing one is an error at start, not a refused connection later."""
    host, port, tls = parse_broker_url(url, what=what)
    if password is not None and password_file is not None:
        raise ConfigError("give either a password or a password file for the broker, not both")
    if password_file is not None:
        password = read_password_file(password_file)
    if (password is not None) and not username:
        raise ConfigError("a broker password needs a user name: set username as well")
    if (ca_file or cert_file or key_file) and not tls:
        raise ConfigError(
            f"{what} {url!r} is not a TLS address but TLS files are given: use mqtts://"
        )
    if key_file is not None and cert_file is None:
        raise ConfigError("a client key file needs its certificate file (cert_file) as well")
    for label, path in (("CA", ca_file), ("certificate", cert_file), ("key", key_file)):
        if path is not None and not path.is_file():
            raise ConfigError(f"broker TLS {label} file {path} does not exist: check the path")
    return BrokerSettings(url, host, port, tls, username, password, ca_file, cert_file, key_file)


def read_password_file(path: Path) -> str:
    """The first line of ``path``, without its line end."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"broker password file {path} does not exist: check the path") from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read broker password file {path}: {exc.strerror or exc}; run as the user "
            "that owns it"
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(f"broker password file {path} is not UTF-8 text") from None
    lines = text.splitlines()
    if not lines or not lines[0]:
        raise ConfigError(f"broker password file {path} is empty: write the password in it")
    return lines[0]


def check_name(value: object, what: str) -> str:
    """A site or table id usable as one topic level; ConfigError otherwise."""
    try:
        return topics.check_name(value, what)
    except InvalidName as exc:
        raise ConfigError(str(exc)) from None


def make_client(
    settings: BrokerSettings, client_id: str, *, manual_ack: bool = False
) -> mqtt.Client:
    """A paho client (MQTT 5, callback API 2) with the settings' TLS and credentials."""
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2,
        client_id=client_id,
        protocol=mqtt.MQTTv5,
        manual_ack=manual_ack,
    )
    if settings.username:
        client.username_pw_set(settings.username, settings.password)
    if settings.tls:
        context = ssl.create_default_context(
            cafile=os.fspath(settings.ca_file) if settings.ca_file else None
        )
        if settings.cert_file is not None:
            context.load_cert_chain(
                os.fspath(settings.cert_file),
                os.fspath(settings.key_file) if settings.key_file else None,
            )
        client.tls_set_context(context)
    return client


def publish_properties(user: Sequence[tuple[str, str]]) -> Properties:
    """PUBLISH properties: a JSON payload in UTF-8, with ``user`` as user properties."""
    props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    props.PayloadFormatIndicator = floor_properties.PAYLOAD_UTF8
    props.ContentType = floor_properties.CONTENT_TYPE
    if user:
        props.UserProperty = list(user)
    return props


def user_properties(properties: Properties | None) -> tuple[tuple[str, str], ...]:
    """An MQTT 5 message's user properties, in the order they came."""
    pairs = getattr(properties, "UserProperty", None) or []
    return tuple((str(k), str(v)) for k, v in pairs)
