"""Floor: many tables' records through one Mosquitto into the floor's store, signed.

Measured, each phase with a broker of its own and every collector in a process of its own
(as on a floor, where they run on machines of their own), every message signed by its
table's key and verified by the collectors, and each phase again unsigned (the collectors
skip the check) for the ratio of what the signatures cost:

- **catch-up**: 200 tables' backlogs (the forwarder's own bytes: payloads, topics and
  properties of real rounds, made from a journal written with the Journal API, consecutive
  records of a table in one message of at most 64 KiB, as a box with a backlog sends
  them) published at QoS 1 by a load generator (benchmarks/_mqtt_load.py) as fast as the
  broker takes them; records stored per second into PostgreSQL by one collector process,
  from the first record published to the last row committed;
- **latency**: 200 boxes (a journal and its forwarder each, 50 to a process) appending at
  a pit's pace (``--pace`` records per second each, spread evenly), two collectors storing
  into PostgreSQL; from a record's journal commit (its time) to its row committed, p50 and
  p99;
- **the floor's part of it**: the same pace, the records published by the load generator
  stamped as they are sent instead of by 200 forwarders on the same two cores (on a floor,
  every box has a machine of its own): p50 and p99 from that stamp to the row committed;
- **one table's hour**: 60 rounds waiting in a journal while the broker was away, drained
  by its forwarder into SQLite with one collector: seconds from the forwarder's start to
  the last row stored.

    python benchmarks/floor.py [--quick] [--tables N] [--flood RECORDS] [--seconds S]

prints one JSON line (value: records per second into PostgreSQL per collector process
during a catch-up, signed; baseline: the same unsigned).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import multiprocessing
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import floor_protocol as fp
from benchmarks import _mqtt_wire as wire
from benchmarks._common import emit, filesystem_of, machine, percentile, result
from benchmarks._servers import Mosquitto, Postgres
from floor_protocol.messages import MAX_PAYLOAD, MAX_RECORDS
from shoe_controller.floor.broker import broker_settings
from shoe_controller.floor.core import batches
from shoe_controller.floor.forwarder import Forwarder
from shoe_controller.floor.keys import make_signing_key, signing_key_path
from shoe_controller.floor.settings import FloorSettings
from shoe_controller.journal.records import Kind
from shoe_controller.journal.tail import JournalTail
from shoe_controller.journal.writer import Journal
from shoe_controller.service.public import public_event
from shoe_floor.collector import Collector
from shoe_floor.store import open_store

RANKS = "A23456789TJQK"
DECK = [r + s for s in "SHDC" for r in RANKS] + ["JK"]
WAGERED = [2, 4, 5]
SITE = "bench"
#: Boxes one process hosts at most: paho waits on its sockets with select(), which takes
#: no descriptor above 1,023, and a box holds about ten (journal, its reader, the socket).
BOXES_PER_PROCESS = 50
#: The boxes' processes' niceness (nice(1)): below the floor's servers.
BOXES_NICENESS = 10
#: Longest wait for any phase's end (seconds).
PHASE_TIMEOUT = 600.0


def table_key(table: str) -> fp.SigningKey:
    """The load generator's key for ``table`` (the same in every process)."""
    return fp.SigningKey.from_seed(hashlib.sha256(f"bench {table}".encode()).digest())


def enrol(db: str, keys: dict[str, fp.VerifyKey]) -> None:
    """Enrol the tables' keys, as ``shoe-floor enroll`` does."""
    with open_store(db) as store:
        for table, key in keys.items():
            store.enrol(SITE, table, key, time.time())


def signed_packet(message: fp.Outgoing, key: fp.SigningKey | None, mid: int) -> bytes:
    properties = message.properties
    if key is not None:
        properties = key.sign(message.topic, properties, message.payload)
    return wire.publish(message.topic, message.payload, qos=1, mid=mid, user=properties)


def round_records(number: int) -> list[tuple[Kind, dict[str, Any], str | None]]:
    """The records of one dealt round, as the controller journals them."""
    rid = f"R{number:06d}"
    cards = DECK[(number * 7) % 53 :] + DECK[: (number * 7) % 53]
    out: list[tuple[Kind, dict[str, Any], str | None]] = [
        (Kind.ROUND_OPENED, {"round_id": rid}, rid),
        (Kind.STATE, {"old": "idle", "new": "deck_loaded", "trigger": "deck"}, rid),
        (Kind.BETS_CLOSED, {"wagered": WAGERED}, rid),
        (Kind.STATE, {"old": "deck_loaded", "new": "bets_closed", "trigger": "bets"}, rid),
        (Kind.START_POSITION, {"method": "rng", "raw": [3], "position": 3}, rid),
        (Kind.STATE, {"old": "bets_closed", "new": "dealing", "trigger": "start"}, rid),
    ]
    hands: dict[str, list[str]] = {str(p): [] for p in range(1, 8)}
    for index in range(49):
        position = (2 + index) % 7 + 1
        hands[str(position)].append(cards[index])
        card = {"index": index + 1, "position": position, "card": cards[index], "gate_mode": "deal"}
        out.append((Kind.CARD, card, rid))
    out += [(Kind.STUB_CARD, {"index": 50 + i, "card": cards[49 + i]}, rid) for i in range(4)]
    out += [
        (Kind.STUB_COUNTED, {"count": 4, "source": "shoe"}, rid),
        (
            Kind.ROUND_ENDED,
            {
                "outcome": "dealt",
                "reason": "the stub holds 4 cards",
                "start_position": 3,
                "cards_per_position": {str(p): 7 for p in range(1, 8)},
                "wagered": WAGERED,
                "collected_unseen": [3, 6, 7],
            },
            rid,
        ),
        (Kind.STATE, {"old": "dealing", "new": "dealt", "trigger": "stub"}, rid),
        (
            Kind.ROUND_CLOSED,
            {
                "hands": {p: c for p, c in hands.items() if int(p) in (1, *WAGERED)},
                "wagered": WAGERED,
            },
            rid,
        ),
        (Kind.STATE, {"old": "dealt", "new": "closed", "trigger": "close"}, rid),
    ]
    return out


def forwarded(directory: Path, rounds: int) -> list[tuple[int, int, str, bytes]]:
    """(seq, prev, mac, payload) of every public record of ``rounds`` rounds, as a
    forwarder publishes them: written with the Journal API, projected as it projects."""
    path = directory / "source.sqlite3"
    journal = Journal.open(path)
    for number in range(rounds):
        for kind, payload, rid in round_records(number):
            journal.append(kind, payload, rid)
    journal.close()
    out: list[tuple[int, int, str, bytes]] = []
    prev = seq = 0
    with JournalTail.open(path) as tail:
        while records := tail.after(seq, 1000):
            for record in records:
                seq = record.seq
                event = public_event(record)
                if event is None:
                    continue
                body = json.dumps(event.to_json(), separators=(",", ":"), ensure_ascii=False)
                out.append((record.seq, prev, record.mac.hex(), body.encode()))
                prev = record.seq
    return out


def flood_packets(directory: Path, tables: int, per_table: int, signed: bool) -> list[bytes]:
    """``per_table`` records of each of ``tables`` tables waiting since an outage, as their
    forwarders send them once the broker is back: consecutive records of a table in one
    message (at most 64 KiB), the tables' messages interleaved, as PUBLISH packets."""
    rounds = per_table // 40 + 1
    source = forwarded(directory, rounds)[:per_table]
    batches: list[list[tuple[int, int, str, bytes]]] = [[]]
    size = 0
    for item in source:
        if size + len(item[3]) + 1 > MAX_PAYLOAD or len(batches[-1]) >= MAX_RECORDS:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += len(item[3]) + 1
    mids = itertools.count()
    packets: list[bytes] = []
    for batch in batches:
        for t in range(tables):
            table = f"F{t:03d}"
            message = fp.encode_records(
                SITE,
                table,
                f"{t:032x}",
                batch[0][1],
                [(seq, mac, body) for seq, _, mac, body in batch],
            )
            key = table_key(table) if signed else None
            packets.append(signed_packet(message, key, next(mids) % 65_535 + 1))
    return packets


def intake_cost(directory: Path, records: int = 4000, repeats: int = 5) -> dict[str, float]:
    """What reading a message costs the collector per record (signature check, parse,
    schema), signed and unsigned, batched as in a catch-up and one a message as live: in
    this process, the two alternated, the best of ``repeats`` (robust on a noisy machine
    where the phases above are not)."""
    from shoe_floor import intake  # noqa: PLC0415

    directory.mkdir(parents=True, exist_ok=True)
    source = forwarded(directory, records // 40 + 1)[:records]
    key = table_key("F000")
    keyring = intake.Keyring()
    keyring._keys = {(SITE, "F000"): (key.public,)}
    prev = {seq: before for seq, before, _, _ in source}
    ready = [(seq, mac, body) for seq, _, mac, body in source]
    live = [[item] for item in ready]
    catchup = list(batches(ready, backlog=True))
    out: dict[str, float] = {}
    for name, groups in (("catchup", catchup), ("live", live)):
        messages = []
        for group in groups:
            message = fp.encode_records(SITE, "F000", "0" * 32, prev[group[0][0]], group)
            props = key.sign(message.topic, message.properties, message.payload)
            messages.append((message.topic, message.payload, props))
        best = {True: float("inf"), False: float("inf")}
        for _ in range(repeats):
            for verify in (True, False):
                start = time.perf_counter()
                for topic, payload, props in messages:
                    read = intake.read(topic, payload, props, 0.0, keyring, verify=verify)
                    assert isinstance(read, fp.Records), read
                best[verify] = min(best[verify], time.perf_counter() - start)
        out[f"{name}_signed_us"] = best[True] / len(source) * 1e6
        out[f"{name}_unsigned_us"] = best[False] / len(source) * 1e6
    return out


def load(
    url: str, directory: str, tables: int, per_table: int, signed: bool, *, ready: Any, go: Any
) -> None:
    """The load generator's process: encode, say ready, publish on ``go``."""
    from benchmarks._mqtt_load import Publisher  # noqa: PLC0415 (in the child process)

    packets = flood_packets(Path(directory), tables, per_table, signed)
    settings = broker_settings(url)
    publisher = Publisher(settings.host, settings.port, "bench-load")
    ready.set()
    go.wait()
    publisher.send(packets)
    publisher.wait_acknowledged(PHASE_TIMEOUT)
    publisher.close()


def collect(
    url: str,
    db: str,
    name: str,
    latencies: bool,
    verify: bool,
    *,
    stored: Any,
    ready: Any,
    stop: Any,
    out: Any,
) -> None:
    """A collector's process (``shoe-floor collect`` as the floor runs it)."""
    collector = Collector(
        broker_settings(url), db, name=name, keep_latencies=latencies, verify=verify
    )
    try:
        collector.start()
    except Exception as exc:
        out.put({"latencies": [], "failure": str(exc)})
        ready.set()
        return
    collector.connected.wait(60)
    ready.set()
    while not stop.wait(0.02):
        stored.value = collector.stats.stored
        if collector.failure is not None:
            break
    collector.stop()
    stored.value = collector.stats.stored
    failure = collector.failure
    out.put({"latencies": collector.stats.latencies, "failure": str(failure) if failure else None})


class Collectors:
    """``count`` collector processes on one store."""

    def __init__(
        self, url: str, db: str, count: int, *, latencies: bool = False, verify: bool = True
    ) -> None:
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._out = context.Queue()
        self._stored = [context.Value("q", 0) for _ in range(count)]
        readies = [context.Event() for _ in range(count)]
        self._processes = [
            context.Process(
                target=collect,
                args=(url, db, f"bench-{i}", latencies, verify),
                kwargs={
                    "stored": self._stored[i],
                    "ready": readies[i],
                    "stop": self._stop,
                    "out": self._out,
                },
                daemon=True,
            )
            for i in range(count)
        ]
        for process in self._processes:
            process.start()
        for ready in readies:
            if not ready.wait(120) or not self._out.empty():
                self._stop.set()
                raise RuntimeError(f"a collector did not start: {self._out.get(timeout=1)}")

    def stored(self) -> int:
        return sum(int(v.value) for v in self._stored)

    def wait_stored(self, total: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.stored() < total:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def stop(self) -> list[float]:
        """Stop them; every record's latency (seconds), when they kept them."""
        self._stop.set()
        found: list[float] = []
        for _ in self._processes:
            report = self._out.get(timeout=120)
            if report["failure"]:
                raise RuntimeError(f"a collector failed: {report['failure']}")
            found += report["latencies"]
        for process in self._processes:
            process.join(60)
        return found


def flooded(broker: Mosquitto, workdir: Path, db: str, args: Any, *, signed: bool) -> float:
    """Records per second stored by one collector process during a catch-up flood."""
    per_table = args.flood // args.tables
    enrol(db, {f"F{t:03d}": table_key(f"F{t:03d}").public for t in range(args.tables)})
    group = Collectors(broker.url, db, 1, verify=signed)
    try:
        return (
            _flood(
                broker, workdir, args, signed, lambda total: group.wait_stored(total, PHASE_TIMEOUT)
            )
            if per_table
            else 0.0
        )
    finally:
        group.stop()


def _flood(broker: Mosquitto, workdir: Path, args: Any, signed: bool, wait: Any) -> float:
    workdir.mkdir()
    per_table = args.flood // args.tables
    context = multiprocessing.get_context("spawn")
    ready, go = context.Event(), context.Event()
    child = context.Process(
        target=load,
        args=(broker.url, str(workdir), args.tables, per_table, signed),
        kwargs={"ready": ready, "go": go},
    )
    child.start()
    try:
        if not ready.wait(300):
            raise RuntimeError("the load generator did not start")
        start = time.perf_counter()
        go.set()
        if not wait(args.tables * per_table):
            raise RuntimeError("the records were not all stored in time")
        return args.tables * per_table / (time.perf_counter() - start)
    finally:
        child.join(PHASE_TIMEOUT)


class Table:
    """One simulated table: its journal and its forwarder (the box's own)."""

    def __init__(self, directory: Path, name: str, url: str) -> None:
        self.name = name
        self.path = directory / name / "journal.sqlite3"
        self.journal = Journal.open(self.path)
        self.records = (r for n in itertools.count() for r in round_records(n))
        make_signing_key(signing_key_path(self.path))
        settings = FloorSettings(broker_settings(url), SITE, name)
        self.forwarder = Forwarder(settings, self.path, keepalive=60)
        self.public = 0

    def append(self) -> None:
        kind, payload, rid = next(self.records)
        self.journal.append(kind, payload, rid)
        if kind not in (Kind.ROUND_OPENED, Kind.BETS_CLOSED, Kind.STUB_CARD):
            self.public += 1
        self.forwarder.wake()

    def close(self) -> None:
        self.forwarder.stop(drain_seconds=30)
        self.journal.close()


def boxes(
    url: str,
    directory: str,
    names: list[str],
    pace: float,
    seconds: float,
    *,
    ready: Any,
    go: Any,
    out: Any,
) -> None:
    """A process of boxes: a journal and its forwarder for each of ``names``, appended to
    at ``pace`` records per second each, one table after the other at even intervals (the
    tables of a pit do not deal in step)."""
    # On a floor every box is a machine of its own: here they share the floor's two cores,
    # and yield them to the broker, the collectors and PostgreSQL, as if they had others.
    os.nice(BOXES_NICENESS)
    fleet = [Table(Path(directory), name, url) for name in names]
    for table in fleet:
        table.forwarder.start()
    for table in fleet:
        if not table.forwarder.wait_for(lambda state: state.connected, 120):
            raise RuntimeError(f"the forwarder of {table.name} did not connect")
    ready.set()
    go.wait()
    step = 1.0 / (pace * len(fleet))
    start = due = time.monotonic()
    for table in itertools.cycle(fleet):
        if due - start >= seconds:
            break
        table.append()
        due += step
        time.sleep(max(0.0, due - time.monotonic()))
    written = sum(t.public for t in fleet)
    elapsed = time.monotonic() - start
    for table in fleet:
        table.close()
    out.put({"public": written, "per_s": written / elapsed})


def paced_load(
    url: str,
    directory: str,
    tables: int,
    pace: float,
    seconds: float,
    *,
    signed: bool,
    ready: Any,
    go: Any,
    out: Any,
) -> None:
    """The boxes' records at the same pace, published by the load generator instead of 200
    forwarders: each record stamped with the time it is sent, as a box whose commit and
    forwarding cost nothing would send it. What is then measured is the floor's part."""
    from benchmarks._mqtt_load import Publisher  # noqa: PLC0415 (in the child process)

    source = forwarded(Path(directory), int(pace * seconds) // 40 + 2)
    settings = broker_settings(url)
    publisher = Publisher(settings.host, settings.port, "bench-paced")
    ready.set()
    go.wait()
    step = 1.0 / (pace * tables)
    sent = 0
    start = due = time.monotonic()
    while due - start < seconds:
        table, (seq, prev, mac, payload) = sent % tables, source[sent // tables]
        body = json.loads(payload)
        body["ts"] = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        name = f"T{table:03d}"
        message = fp.encode_records(
            SITE, name, f"{table:032x}", prev, [(seq, mac, fp.messages.compact(body))]
        )
        packet = signed_packet(message, table_key(name) if signed else None, sent % 65_535 + 1)
        publisher.send([packet])
        sent += 1
        due += step
        time.sleep(max(0.0, due - time.monotonic()))
    elapsed = time.monotonic() - start
    publisher.wait_acknowledged(PHASE_TIMEOUT)
    publisher.close()
    out.put({"public": sent, "per_s": sent / elapsed})


def paced(
    broker: Mosquitto, workdir: Path, db: str, args: Any, *, forwarders: bool, signed: bool
) -> dict[str, Any]:
    """Commit-to-stored latency, two collectors, ``args.tables`` tables at ``args.pace``
    records per second each: from 200 boxes' forwarders (``forwarders``), or from the load
    generator at the same pace."""
    names = [f"T{i:03d}" for i in range(args.tables)]
    if forwarders:
        # The boxes' keys, made at their install and enrolled before anything is sent.
        enrol(db, {name: _box_key(workdir, name) for name in names})
    else:
        enrol(db, {name: table_key(name).public for name in names})
    group = Collectors(broker.url, db, 2, latencies=True, verify=signed)
    context = multiprocessing.get_context("spawn")
    go, out = context.Event(), context.Queue()
    if forwarders:
        ready = [context.Event() for _ in range(0, args.tables, BOXES_PER_PROCESS)]
        children = [
            context.Process(
                target=boxes,
                args=(broker.url, str(workdir), names[i :: len(ready)], args.pace, args.seconds),
                kwargs={"ready": ready[i], "go": go, "out": out},
            )
            for i in range(len(ready))
        ]
    else:
        workdir.mkdir(exist_ok=True)
        ready = [context.Event()]
        children = [
            context.Process(
                target=paced_load,
                args=(broker.url, str(workdir), args.tables, args.pace, args.seconds),
                kwargs={"signed": signed, "ready": ready[0], "go": go, "out": out},
            )
        ]
    for child in children:
        child.start()
    try:
        for event in ready:
            if not event.wait(300):
                raise RuntimeError("the paced tables did not start")
        go.set()
        reports = [out.get(timeout=PHASE_TIMEOUT) for _ in children]
        public = sum(r["public"] for r in reports)
        if not group.wait_stored(public, PHASE_TIMEOUT):
            raise RuntimeError("the paced records were not all stored in time")
    finally:
        for child in children:
            child.join(PHASE_TIMEOUT)
        latencies = sorted(group.stop())
    return {
        "written_per_s": sum(r["per_s"] for r in reports),
        "records": len(latencies),
        "p50_ms": percentile(latencies, 0.5) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
    }


def _box_key(workdir: Path, name: str) -> fp.VerifyKey:
    journal = workdir / name / "journal.sqlite3"
    journal.parent.mkdir(parents=True, exist_ok=True)
    return make_signing_key(signing_key_path(journal))[0].public


def catch_up(workdir: Path, broker: Mosquitto, db: str, rounds: int) -> dict[str, Any]:
    """One table's ``rounds`` rounds written while the broker was away, then drained."""
    table = Table(workdir, "catchup", broker.url)
    for _ in range(rounds * len(round_records(0))):
        table.append()
    enrol(db, {"catchup": _box_key(workdir, "catchup")})
    group = Collectors(broker.url, db, 1)
    try:
        start = time.perf_counter()
        table.forwarder.start()
        if not group.wait_stored(table.public, PHASE_TIMEOUT):
            raise RuntimeError("the hour was not all stored in time")
        seconds = time.perf_counter() - start
    finally:
        table.close()
        group.stop()
    return {"records": table.public, "seconds": seconds}


def run(args: argparse.Namespace) -> dict[str, Any]:
    # 200 boxes' journals share this machine's one disk, whose syncs would be what is
    # measured: in memory (tmpfs) when there is one, the boxes' side is.
    where = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="bench-floor-", dir=where) as tmp:
        root = Path(tmp)
        postgres = Postgres()
        postgres.start()
        brokers: list[Mosquitto] = []

        def broker(name: str) -> Mosquitto:
            # A broker per phase: nothing of an earlier phase waits in it.
            directory = root / f"broker-{name}"
            directory.mkdir()
            server = Mosquitto(directory)
            server.start()
            brokers.append(server)
            return server

        try:
            rates: dict[bool, float] = {}
            for signed_run in (False, True) if args.unsigned_first else (True, False):
                name = "f1" if signed_run else "f2"
                rates[signed_run] = flooded(
                    broker(name), root / name, postgres.new_database(name), args, signed=signed_run
                )
            signed, unsigned = rates[True], rates[False]
            latency = paced(
                broker("p"),
                root / "p",
                postgres.new_database("paced"),
                args,
                forwarders=True,
                signed=True,
            )
            floor_runs: dict[bool, dict[str, Any]] = {}
            # Which goes first is a flag: on a shared machine the order itself may weigh.
            for signed_run in (False, True) if args.unsigned_first else (True, False):
                name = "q" if signed_run else "u"
                floor_runs[signed_run] = paced(
                    broker(name),
                    root / name,
                    postgres.new_database(name),
                    args,
                    forwarders=False,
                    signed=signed_run,
                )
            floor_signed, floor_unsigned = floor_runs[True], floor_runs[False]
            hour = catch_up(root / "c", broker("c"), str(root / "c.sqlite3"), args.catchup_rounds)
            cost = intake_cost(root / "cost")
        finally:
            postgres.stop()
            for server in brokers:
                server.kill()
        fs = filesystem_of(root)
    return result(
        "floor",
        signed,
        "records/s",
        "the same catch-up unsigned (the collector verifies nothing)",
        unsigned,
        tables=args.tables,
        flood_records=args.tables * (args.flood // args.tables),
        catchup_signed_per_s=round(signed, 1),
        catchup_unsigned_per_s=round(unsigned, 1),
        catchup_signature_ratio=round(signed / unsigned, 3) if unsigned else None,
        paced_records_per_s=round(latency["written_per_s"], 1),
        paced_seconds=args.seconds,
        pace_per_table=args.pace,
        latency_records=latency["records"],
        latency_p50_ms=round(latency["p50_ms"], 1),
        latency_p99_ms=round(latency["p99_ms"], 1),
        floor_latency_p50_ms=round(floor_signed["p50_ms"], 1),
        floor_latency_p99_ms=round(floor_signed["p99_ms"], 1),
        floor_latency_unsigned_p50_ms=round(floor_unsigned["p50_ms"], 1),
        floor_latency_unsigned_p99_ms=round(floor_unsigned["p99_ms"], 1),
        floor_latency_signature_ratio=(
            round(floor_signed["p99_ms"] / floor_unsigned["p99_ms"], 3)
            if floor_unsigned["p99_ms"]
            else None
        ),
        intake_us_per_record_catchup_signed=round(cost["catchup_signed_us"], 2),
        intake_us_per_record_catchup_unsigned=round(cost["catchup_unsigned_us"], 2),
        intake_catchup_signature_ratio=round(
            cost["catchup_signed_us"] / cost["catchup_unsigned_us"], 3
        ),
        intake_us_per_record_live_signed=round(cost["live_signed_us"], 2),
        intake_us_per_record_live_unsigned=round(cost["live_unsigned_us"], 2),
        intake_live_signature_ratio=round(cost["live_signed_us"] / cost["live_unsigned_us"], 3),
        one_table_hour_records=hour["records"],
        one_table_hour_seconds=round(hour["seconds"], 2),
        unsigned_first=args.unsigned_first,
        filesystem=fs,
        **machine(),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few tables, a few seconds")
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--flood", type=int, default=200_000, help="records of each flood")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the paced run")
    parser.add_argument("--pace", type=float, default=2.0, help="records/s per table, paced run")
    parser.add_argument("--catchup-rounds", type=int, default=60)
    parser.add_argument(
        "--unsigned-first",
        action="store_true",
        help="run each unsigned phase before its signed twin (to see what the order weighs)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.tables, args.flood, args.seconds, args.catchup_rounds = 5, 2000, 2.0, 3
    emit(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
