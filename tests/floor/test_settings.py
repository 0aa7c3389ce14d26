"""The broker's address and the configuration's [floor] section: clear errors at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from floor_protocol import split_topic, topic
from shoe_controller.errors import ConfigError
from shoe_controller.floor.broker import broker_settings, parse_broker_url
from shoe_controller.floor.settings import floor_settings
from shoe_controller.service.config import parse_config
from shoe_controller.service.floor_section import parse_floor_section


def test_broker_addresses() -> None:
    assert parse_broker_url("mqtt://broker.floor") == ("broker.floor", 1883, False)
    assert parse_broker_url("mqtts://10.0.0.5") == ("10.0.0.5", 8883, True)
    assert parse_broker_url("mqtt://127.0.0.1:1884/") == ("127.0.0.1", 1884, False)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("tcp://host:1883", "mqtt://HOST:PORT"),
        ("mqtt://", "names no host"),
        ("mqtt://user:secret@host", "carries credentials"),
        ("mqtt://host:99999", "not a broker address"),
        ("mqtt://host/topic", "path or options"),
    ],
)
def test_a_bad_broker_address_is_one_clear_error(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_broker_url(url)


def test_credentials_and_tls_files(tmp_path: Path) -> None:
    secret = tmp_path / "broker.password"
    secret.write_text("s3cret\n", encoding="utf-8")
    settings = broker_settings("mqtts://h", username="pg-7", password_file=secret)
    assert settings.password == "s3cret" and settings.tls
    assert "s3cret" not in settings.describe()
    with pytest.raises(ConfigError, match="not both"):
        broker_settings("mqtt://h", username="u", password="p", password_file=secret)
    with pytest.raises(ConfigError, match="needs a user name"):
        broker_settings("mqtt://h", password="p")
    with pytest.raises(ConfigError, match="use mqtts://"):
        broker_settings("mqtt://h", ca_file=secret)
    with pytest.raises(ConfigError, match="does not exist"):
        broker_settings("mqtts://h", ca_file=tmp_path / "missing.pem")
    with pytest.raises(ConfigError, match="does not exist"):
        broker_settings("mqtt://h", username="u", password_file=tmp_path / "missing")


def test_the_floor_section_and_the_command_line() -> None:
    config = parse_config(
        {
            "floor": {
                "broker": "mqtt://b:1883",
                "site": "sanjuan",
                "table_id": "PG-07",
                "drain_seconds": 3,
                "keepalive": 5,
            }
        }
    )
    settings = floor_settings(config.floor)
    assert settings is not None
    assert (settings.site, settings.table_id, settings.drain_seconds, settings.keepalive) == (
        "sanjuan",
        "PG-07",
        3.0,
        5,
    )
    overridden = floor_settings(config.floor, broker="mqtt://other:1", table_id="PG-08")
    assert overridden is not None
    assert (overridden.broker.host, overridden.table_id) == ("other", "PG-08")
    assert floor_settings(parse_config({}).floor) is None


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ({"broker": "mqtt://b", "table": "x"}, "unknown key floor.table"),
        ({"broker": "mqtt://b", "table_id": "a/b"}, "floor.table_id"),
        ({"broker": "mqtt://b", "table_id": "T", "site": "+"}, "floor.site"),
        ({"broker": "mqtt://b", "table_id": "T", "drain_seconds": -1}, "drain_seconds"),
        ({"broker": "mqtt://b", "table_id": "T", "keepalive": 0}, "keepalive"),
        ({"broker": 7}, "floor.broker must be a non-empty string"),
    ],
)
def test_a_bad_floor_section_is_one_clear_error(section: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_config({"floor": section})


def test_forwarding_needs_a_table_id_and_a_table_id_needs_a_broker() -> None:
    with pytest.raises(ConfigError, match="needs this table's id"):
        floor_settings(parse_config({"floor": {"broker": "mqtt://b"}}).floor)
    with pytest.raises(ConfigError, match="--table-id needs a broker"):
        floor_settings(parse_config({}).floor, table_id="T1")


def test_topics() -> None:
    assert topic("s", "t", "events") == "shoes/s/t/events"
    assert split_topic("shoes/s/t/status") == ("s", "t", "status")
    assert split_topic("other/s/t/status") is None


def test_a_bad_value_names_its_file_once() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_floor_section({"broker": 5}, Path("."), "x.toml: ")
    assert str(caught.value) == "x.toml: floor.broker must be a non-empty string, not 5"
