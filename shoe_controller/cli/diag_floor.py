"""``shoe-diag floor``: is this box's public record reaching the floor?

Shows the broker and whether it answers, the cursor (the last record the broker
acknowledged), the backlog (public records waiting for it), and what the floor sees of the
table (its retained status and chain head). It connects with a client id of its own, so a
running service keeps its connection.

``shoe-diag floor enroll`` makes the box's signing key at install, beside the journal's key
(0600; a key already there is kept, never replaced), and prints the table's identity and
the key's fingerprint and public key, which the floor enrols (``shoe-floor enroll``).
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import paho.mqtt.client as mqtt

from floor_protocol.topics import topic
from shoe_controller.cli.diag_audit import journal_path
from shoe_controller.cli.diag_common import Context, key_values
from shoe_controller.errors import ConfigError, ExitCode, ShoeControllerError
from shoe_controller.floor.broker import check_name, make_client
from shoe_controller.floor.cursor import cursor_path, read_cursor
from shoe_controller.floor.forwarder import client_id
from shoe_controller.floor.keys import make_signing_key, signing_key_path
from shoe_controller.floor.settings import FloorSettings, floor_settings
from shoe_controller.journal.paths import write_new_file
from shoe_controller.journal.tail import JournalTail
from shoe_controller.service.public import public_event

#: Longest wait for the broker's answer, and then for its retained messages (seconds).
CONNECT_TIMEOUT = 5.0
RETAINED_TIMEOUT = 1.0


class FloorUnreachable(ShoeControllerError):
    exit_code = ExitCode.CHECK_FAILED


def floor(ctx: Context) -> int:
    if ctx.option("action") == "enroll":
        return enroll(ctx)
    settings = floor_settings(
        ctx.config().floor, broker=ctx.option("broker"), table_id=ctx.option("table_id")
    )
    if settings is None:
        raise ConfigError(
            "no floor broker is configured: set broker and table_id in the configuration's "
            "[floor] section, or give --broker and --table-id"
        )
    report: dict[str, Any] = {
        "broker": settings.broker.describe(),
        "site": settings.site,
        "table": settings.table_id,
        "client_id": client_id(settings.site, settings.table_id),
    }
    report.update(_journal(ctx))
    report.update(_probe(settings))
    out = ctx.out
    if ctx.json:
        out.json(report)
    else:
        status = report.get("floor_status") or {}
        head = report.get("floor_head") or {}
        rows = [
            ("broker", report["broker"]),
            ("connection", report["connection"]),
            ("table", f"{report['site']}/{report['table']} (client id {report['client_id']})"),
            ("journal", str(report["journal"])),
            ("last record", str(report["last_seq"])),
            ("cursor", str(report["cursor"])),
            ("backlog", f"{report['backlog']} public records wait for the broker"),
            (
                "floor sees",
                "nothing yet"
                if not status
                else ("online" if status.get("online") else "offline")
                + (f", state {status['state']}" if status.get("state") else "")
                + (f", head at record {head['seq']}" if head else "")
                + _refusals(status.get("replays_refused")),
            ),
        ]
        connected = report["connection"] == "ok"
        key_values(out, rows, {"connection": ("green",) if connected else ("red", "bold")})
    if report["connection"] != "ok":
        raise FloorUnreachable(
            f"the floor broker {report['broker']} {report['connection']}: check the address, "
            "the network and the broker's credentials ([floor] in the configuration)"
        )
    return 0


def _refusals(counts: object) -> str:
    """The replay requests the box refused, as its status tells them."""
    if not isinstance(counts, dict) or not counts:
        return ""
    total = sum(n for n in counts.values() if isinstance(n, int))
    each = ", ".join(f"{reason} {n}" for reason, n in counts.items())
    return f", {total} replay request{'s' if total != 1 else ''} refused ({each})"


def enroll(ctx: Context) -> int:
    """Make (or show) this box's signing key, and what the floor enrols of it."""
    section = ctx.config().floor
    table_option = ctx.option("table_id")
    table = check_name(table_option, "--table-id") if table_option else section.table_id
    if table is None:
        raise ConfigError(
            "enrolling needs this table's id: set table_id in the configuration's [floor] "
            "section, or give --table-id"
        )
    journal = journal_path(ctx)
    path = section.signing_key or signing_key_path(journal)
    key, made = make_signing_key(path)
    public_path = path.with_name(path.name + ".pub")
    if made or not public_path.exists():
        try:
            write_new_file(public_path, key.public.to_pem())
            public_path.chmod(0o644)
        except FileExistsError:
            pass
        except OSError as exc:
            raise ConfigError(
                f"cannot write the public key {public_path}: {exc.strerror or exc}"
            ) from None
    on_the_floor = (
        f"shoe-floor enroll --site {section.site} --table {table} --key FILE "
        f"--fingerprint {key.public.fingerprint}"
    )
    report = {
        "site": section.site,
        "table": table,
        "key": str(path),
        "made": made,
        "public_key": str(public_path),
        "fingerprint": key.public.fingerprint,
        "public_pem": key.public.to_pem().decode("ascii"),
        "enroll": on_the_floor,
    }
    out = ctx.out
    if ctx.json:
        out.json(report)
        return 0
    key_values(
        out,
        [
            ("table", f"{section.site}/{table}"),
            ("signing key", f"{path} ({'made now' if made else 'already there, kept'})"),
            ("public key", str(public_path)),
            ("fingerprint", key.public.fingerprint),
            ("on the floor", f"{on_the_floor}   (FILE: a copy of {public_path})"),
        ],
        {},
    )
    return 0


def _journal(ctx: Context) -> dict[str, Any]:
    path = journal_path(ctx)
    with JournalTail.open(path) as tail:
        cursor = read_cursor(cursor_path(path), tail.journal_id)
        head = tail.head()
        backlog, seq = 0, cursor
        while records := tail.after(seq, 4096):
            backlog += sum(1 for r in records if public_event(r) is not None)
            seq = records[-1].seq
        return {
            "journal": str(path),
            "journal_id": tail.journal_id,
            "last_seq": head.seq if head else 0,
            "cursor": cursor,
            "backlog": backlog,
        }


def _probe(settings: FloorSettings) -> dict[str, Any]:
    """Connect, read the table's retained status and head, disconnect."""
    answered = threading.Event()
    subscribed = threading.Event()
    outcome: dict[str, Any] = {"connection": "did not answer", "floor_status": None}
    retained: dict[str, Any] = {}
    site, table = settings.site, settings.table_id
    wanted = {topic(site, table, leaf): f"floor_{leaf}" for leaf in ("status", "head")}
    done = threading.Event()

    def on_connect(c: mqtt.Client, u: Any, f: Any, reason: Any, p: Any) -> None:
        outcome["connection"] = "ok" if not reason.is_failure else f"refused the box: {reason}"
        answered.set()
        if not reason.is_failure:
            c.subscribe([(name, 1) for name in wanted])

    def on_subscribe(c: mqtt.Client, u: Any, mid: int, codes: Any, p: Any) -> None:
        subscribed.set()

    def on_message(c: mqtt.Client, u: Any, message: mqtt.MQTTMessage) -> None:
        try:
            retained[wanted[message.topic]] = json.loads(message.payload)
        except (KeyError, ValueError):
            return
        if len(retained) == len(wanted):
            done.set()

    client = make_client(settings.broker, f"shoe-diag-floor-{os.getpid()}")
    client.on_connect = on_connect
    client.on_subscribe = on_subscribe
    client.on_message = on_message
    try:
        client.connect_async(settings.broker.host, settings.broker.port, keepalive=10)
        client.loop_start()
        if answered.wait(CONNECT_TIMEOUT) and subscribed.wait(CONNECT_TIMEOUT):
            done.wait(RETAINED_TIMEOUT)
    finally:
        client.disconnect()
        client.loop_stop()
    outcome.update(retained)
    return outcome
