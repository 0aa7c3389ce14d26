"""The floor on a broker as a casino runs it: TLS with the floor's own CA, a password per
box, and the per-table ACL of docs/floor.md; and the collector's refusal of an open one."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

import floor_protocol as fp
from floor_protocol.messages import compact
from shoe_controller.errors import ExitCode
from shoe_controller.floor.broker import (
    BrokerSettings,
    broker_settings,
    make_client,
    publish_properties,
)
from shoe_floor.collector import Collector
from tests.floor.helpers import (
    FLOOR_KEY,
    WAIT,
    Box,
    Subscriber,
    box_key,
    check_store_matches,
    enrol,
    public_records,
)
from tests.floor.servers import CasinoMosquitto
from tests.floor.test_collector import settled
from tests.floor.test_faults import child_env

pytestmark = pytest.mark.needs("mosquitto")

ROOT = Path(__file__).resolve().parents[2]
SITE = "sanjuan"


def documented_acl() -> str:
    """The ACL of docs/floor.md, as written there."""
    text = (ROOT / "docs" / "floor.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- floor\.acl: the tests read this block -->\n```\n(.*?)```", text, re.S)
    assert found, "docs/floor.md has no ACL block for the tests"
    return found.group(1)


@pytest.fixture
def casino(tmp_path: Path) -> CasinoMosquitto:
    directory = tmp_path / "casino-broker"
    directory.mkdir()
    server = CasinoMosquitto(
        directory, users=["PG-07", "PG-08", "floor-collector"], acl=documented_acl()
    )
    server.start()
    try:
        yield server  # type: ignore[misc]
    finally:
        server.kill()


def settings_for(casino: CasinoMosquitto, user: str | None) -> BrokerSettings:
    return broker_settings(
        casino.url,
        username=user,
        password_file=casino.password_file(user) if user else None,
        ca_file=casino.ca_file,
    )


def publish_as(settings: BrokerSettings, message: fp.Outgoing) -> tuple[bool, int | None]:
    """Connect as ``settings`` say and publish ``message`` at QoS 1: (connected, the
    PUBACK's reason code, or None when no PUBACK came)."""
    import threading

    connected = threading.Event()
    acked: list[int] = []
    done = threading.Event()
    refused = threading.Event()
    client = make_client(settings, f"test-{id(message)}")

    def on_connect(c: mqtt.Client, u: object, f: object, reason: object, p: object) -> None:
        if getattr(reason, "is_failure", True):
            refused.set()
        else:
            connected.set()

    def on_publish(c: mqtt.Client, u: object, mid: int, reason: object, p: object) -> None:
        acked.append(int(getattr(reason, "value", 0)))
        done.set()

    client.on_connect = on_connect
    client.on_publish = on_publish
    client.connect_async(settings.host, settings.port)
    client.loop_start()
    try:
        deadline = time.monotonic() + WAIT
        while not (connected.is_set() or refused.is_set()) and time.monotonic() < deadline:
            connected.wait(0.05)
        if not connected.is_set():
            return False, None
        client.publish(
            message.topic, message.payload, qos=1, properties=publish_properties(message.properties)
        )
        done.wait(WAIT)
        return True, acked[0] if acked else None
    finally:
        client.disconnect()
        client.loop_stop()


def test_a_box_on_a_casino_broker_reaches_the_floor_and_no_other_table(
    tmp_path: Path, casino: CasinoMosquitto
) -> None:
    db = str(tmp_path / "floor.sqlite3")
    enrol(db, "PG-07", "PG-08", site=SITE)
    collector = Collector(
        settings_for(casino, "floor-collector"),
        db,
        name="c1",
        floor_key=FLOOR_KEY,
        gap_grace=0.5,
        gap_interval=0.2,
    )
    collector.start()
    assert collector.connected.wait(WAIT)
    watcher = Subscriber(casino.url, "shoes/#", settings=settings_for(casino, "floor-collector"))
    box = Box(
        tmp_path, casino.url, "PG-07", seed=7, broker=settings_for(casino, "PG-07"), site=SITE
    )
    box.wait_rounds(1)
    box.controller.stop()
    settled(collector, len(public_records(box.journal)))

    # PG-07's own credentials on PG-08's topic, even signed with PG-08's key: the broker
    # refuses it (not authorized), and it reaches nobody.
    forged = fp.encode_records(
        SITE,
        "PG-08",
        "0" * 32,
        0,
        [
            (
                1,
                "0" * 64,
                compact(
                    {"event": "wager_settled", "ts": "2026-12-01T00:00:00.000Z", "round": "R1"}
                ),
            )
        ],
    )
    signed = fp.Outgoing(
        forged.topic,
        forged.payload,
        box_key("PG-08", SITE).sign(forged.topic, forged.properties, forged.payload),
    )
    connected, reason = publish_as(settings_for(casino, "PG-07"), signed)
    assert connected and reason == 0x87  # MQTT 5: not authorized
    # Without credentials, or with a wrong password, no connection at all.
    assert publish_as(broker_settings(casino.url, ca_file=casino.ca_file), signed) == (False, None)
    wrong = tmp_path / "wrong.password"
    wrong.write_text("guess\n")
    as_wrong = broker_settings(
        casino.url, username="PG-08", password_file=wrong, ca_file=casino.ca_file
    )
    assert publish_as(as_wrong, signed) == (False, None)

    assert box.forwarder.stop(drain_seconds=10) == 0
    collector.stop()
    watcher.close()
    assert not [m for m in watcher.messages if "/PG-08/" in m.topic]
    assert collector.stats.quarantined == {}
    check_store_matches(db, "PG-07", box.journal)


def test_the_collector_refuses_an_open_broker_unless_told_it_is_a_bench(
    tmp_path: Path, broker: object
) -> None:
    url = broker.url
    command = [sys.executable, "-m", "shoe_floor", "collect", "--broker", url]
    command += ["--db", str(tmp_path / "floor.sqlite3")]
    refused = subprocess.run(
        command, env=child_env(), capture_output=True, text=True, timeout=WAIT, check=False
    )
    assert refused.returncode == ExitCode.CONFIG
    assert len(refused.stderr.splitlines()) == 1
    assert "neither TLS nor a user name" in refused.stderr and "--insecure-broker" in refused.stderr
