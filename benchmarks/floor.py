"""Floor: many tables' journals forwarded through one Mosquitto into the floor's store.

One process hosts every table: its journal (written with the Journal API, one commit per
record as the controller commits cards, with the records of real rounds: cards with
identities, the stub, the closed round's hands) and its forwarder (the box's own). A real
Mosquitto carries the records to one or two collectors (this process) that store them in
SQLite and in a throwaway PostgreSQL cluster. Measured:

- **sustained**: every table appends as fast as it can for a while; records stored per
  second, into SQLite with one collector and into PostgreSQL with two; the baseline is the
  rate the journals were written at in the same run (ratio 1: the floor keeps up);
- **latency**: the tables at a pit's pace (``--pace`` records per second each); from a
  record's journal commit (its wall time) to its row committed in the store, p50 and p99;
- **catch-up**: one table's hour of rounds (60 rounds) waiting in its journal while the
  broker was away, then drained into SQLite: seconds from the forwarder's start.

    python benchmarks/floor.py [--quick] [--tables N] [--seconds S] [--pace R]

prints one JSON line (value: records per second into PostgreSQL with two collectors).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import multiprocessing
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, filesystem_of, machine, percentile, result
from benchmarks._servers import Mosquitto, Postgres
from shoe_controller.broker import broker_settings
from shoe_controller.journal.records import Kind
from shoe_controller.journal.writer import Journal
from shoe_controller.service.floor_settings import FloorSettings
from shoe_controller.service.forwarder import Forwarder
from shoe_floor.collector import Collector

RANKS = "A23456789TJQK"
DECK = [r + s for s in "SHDC" for r in RANKS] + ["JK"]
WAGERED = [2, 4, 5]
#: The flood's bound on messages published and not yet acknowledged (paho's message ids
#: run 1..65535 and wrap).
UNACKNOWLEDGED = 50_000


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


class Table:
    """One simulated table: its journal and its forwarder."""

    def __init__(self, directory: Path, name: str, url: str) -> None:
        self.name = name
        self.path = directory / name / "journal.sqlite3"
        # Opened by the thread that writes it (SQLite connections belong to their thread).
        self.journal: Journal | None = None
        self.records = (r for n in itertools.count() for r in round_records(n))
        settings = FloorSettings(broker_settings(url), "bench", name)
        self.forwarder = Forwarder(settings, self.path, keepalive=60)
        self.written = 0
        self.public = 0

    def append(self) -> None:
        if self.journal is None:
            self.journal = Journal.open(self.path)
        kind, payload, rid = next(self.records)
        self.journal.append(kind, payload, rid)
        self.written += 1
        if kind not in (Kind.ROUND_OPENED, Kind.BETS_CLOSED, Kind.STUB_CARD):
            self.public += 1
        self.forwarder.wake()

    def close(self) -> None:
        self.forwarder.stop(drain_seconds=30)

    def close_journal(self) -> None:
        if self.journal is not None:
            self.journal.close()
            self.journal = None


def write(tables: list[Table], seconds: float, pace: float | None, writers: int) -> float:
    """Append to every table for ``seconds`` (at ``pace`` records/s each, or as fast as
    possible); returns the records per second written."""
    stop = threading.Event()
    counts = [0] * writers

    def worker(index: int, mine: list[Table]) -> None:
        step = 1.0 / pace if pace else 0.0
        due = time.monotonic()
        while not stop.is_set():
            for table in mine:
                table.append()
                counts[index] += 1
            if step:
                due += step
                stop.wait(max(0.0, due - time.monotonic()))
        for table in mine:
            table.close_journal()

    threads = [
        threading.Thread(target=worker, args=(i, tables[i::writers]), daemon=True)
        for i in range(writers)
    ]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - start)


def wait_stored(collectors: list[Collector], total: int, timeout: float) -> float:
    """Seconds until the collectors stored ``total`` records (inf past ``timeout``)."""
    start = time.perf_counter()
    done = threading.Event()

    def check(_: object) -> bool:
        return sum(c.stats.stored for c in collectors) >= total

    for collector in collectors:
        threading.Thread(
            target=lambda c=collector: (
                c.wait_for(lambda s: check(s) or done.is_set(), timeout) and done.set()
            ),
            daemon=True,
        ).start()
    done.wait(timeout)
    return time.perf_counter() - start if check(None) else float("inf")


def scenario(
    workdir: Path,
    broker: Mosquitto,
    db: str,
    *,
    collectors: int,
    tables: int,
    seconds: float,
    pace: float | None,
) -> dict[str, Any]:
    """One run: tables writing, forwarders forwarding, collectors storing."""
    url = broker.url
    group = [
        Collector(broker_settings(url), db, name=f"bench-{i}", keep_latencies=True)
        for i in range(collectors)
    ]
    for collector in group:
        collector.start()
        collector.connected.wait(30)
    fleet = [Table(workdir, f"T{i:03d}", url) for i in range(tables)]
    for table in fleet:
        table.forwarder.start()
    written_rate = write(fleet, seconds, pace, writers=4)
    public = sum(t.public for t in fleet)
    start = time.perf_counter()
    drained = wait_stored(group, public, timeout=600)
    stored_rate = public / (seconds + drained) if drained != float("inf") else 0.0
    latencies = sorted(x for c in group for x in c.stats.latencies)
    for table in fleet:
        table.close()
    for collector in group:
        collector.stop()
    del start
    return {
        "written_per_s": written_rate,
        "public": public,
        "stored_per_s": stored_rate,
        "drain_after_s": drained,
        "p50_ms": percentile(latencies, 0.5) * 1000 if latencies else None,
        "p99_ms": percentile(latencies, 0.99) * 1000 if latencies else None,
    }


def catch_up(workdir: Path, broker: Mosquitto, db: str, rounds: int) -> dict[str, Any]:
    """One table's ``rounds`` rounds written while the broker was away, then drained."""
    table = Table(workdir, "catchup", broker.url)
    for _ in range(rounds * len(round_records(0))):
        table.append()
    collector = Collector(broker_settings(broker.url), db, name="catchup")
    collector.start()
    collector.connected.wait(30)
    start = time.perf_counter()
    table.forwarder.start()
    table.close_journal()
    seconds = wait_stored([collector], table.public, timeout=600)
    elapsed = time.perf_counter() - start
    table.close()
    collector.stop()
    return {"records": table.public, "seconds": round(min(seconds, elapsed), 2)}


def flood(url: str, tables: int, per_table: int, ready: Any, go: Any) -> None:
    """A child process publishing ``per_table`` card records for each of ``tables`` tables
    as fast as paho can (QoS 1), as 200 boxes' forwarders would together."""
    import paho.mqtt.client as mqtt  # noqa: PLC0415 (in the child process)
    from paho.mqtt.enums import CallbackAPIVersion  # noqa: PLC0415

    from shoe_controller.broker import publish_properties, topic  # noqa: PLC0415

    settings = broker_settings(url)
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="flood", protocol=mqtt.MQTTv5)
    client.max_inflight_messages_set(1000)
    client.connect(settings.host, settings.port)
    client.loop_start()
    ts = "2026-01-01T00:00:00.000Z"
    ready.set()
    go.wait()
    infos: collections.deque[mqtt.MQTTMessageInfo] = collections.deque()
    for seq in range(1, per_table + 1):
        body = json.dumps(
            {"event": "card", "ts": ts, "round": "R1", "index": seq % 49 + 1, "position": 2}
        ).encode()
        for t in range(tables):
            props = publish_properties(
                [("journal", f"J{t:03d}"), ("seq", str(seq)), ("prev", str(seq - 1)), ("mac", "0")]
            )
            if len(infos) >= UNACKNOWLEDGED:
                infos.popleft().wait_for_publish(120)
            infos.append(
                client.publish(topic("flood", f"F{t:03d}", "events"), body, 1, properties=props)
            )
    for info in infos:
        info.wait_for_publish(120)
    client.disconnect()
    client.loop_stop()


def flooded(broker: Mosquitto, db: str, collectors: int, tables: int, per_table: int) -> float:
    """Records per second stored by ``collectors`` while a publisher floods the broker."""
    group = [
        Collector(broker_settings(broker.url), db, name=f"flood-{i}") for i in range(collectors)
    ]
    for collector in group:
        collector.start()
        collector.connected.wait(30)
    context = multiprocessing.get_context("spawn")
    ready, go = context.Event(), context.Event()
    child = context.Process(target=flood, args=(broker.url, tables, per_table, ready, go))
    child.start()
    ready.wait(60)
    go.set()
    elapsed = wait_stored(group, tables * per_table, timeout=300)
    child.join(120)
    for collector in group:
        collector.stop()
    return tables * per_table / elapsed if elapsed != float("inf") else 0.0


def run(args: argparse.Namespace) -> dict[str, Any]:
    # The journals of 200 boxes share this machine's one disk, whose syncs would be what is
    # measured: in memory (tmpfs) when there is one, the floor's side is.
    where = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="bench-floor-", dir=where) as tmp:
        root = Path(tmp)
        postgres = Postgres()
        postgres.start()
        brokers: list[Mosquitto] = []

        def broker(name: str) -> Mosquitto:
            # A broker per phase: no retained head of an earlier phase's journals.
            directory = root / f"broker-{name}"
            directory.mkdir()
            server = Mosquitto(directory)
            server.start()
            brokers.append(server)
            return server

        try:
            size = {"tables": args.tables, "seconds": args.seconds}
            fleet = scenario(
                root / "s1",
                broker("s1"),
                str(root / "s1.sqlite3"),
                collectors=1,
                pace=None,
                **size,
            )
            paced = scenario(
                root / "p3",
                broker("p3"),
                postgres.new_database("paced"),
                collectors=2,
                pace=args.pace,
                **size,
            )
            per_table = args.flood // args.tables
            pg_rate = flooded(
                broker("f1"), postgres.new_database("flood"), 2, args.tables, per_table
            )
            sqlite_rate = flooded(broker("f2"), str(root / "f2.sqlite3"), 1, args.tables, per_table)
            hour = catch_up(root / "c", broker("c"), str(root / "c.sqlite3"), args.catchup_rounds)
        finally:
            postgres.stop()
            for server in brokers:
                server.kill()
        fs = filesystem_of(root)
    publisher = args.tables * (args.flood // args.tables)
    return result(
        "floor",
        pg_rate,
        "records/s",
        "records/s the fleet of forwarders wrote to their journals",
        fleet["written_per_s"],
        tables=args.tables,
        flood_records=publisher,
        postgres_two_collectors_per_s=round(pg_rate, 1),
        sqlite_one_collector_per_s=round(sqlite_rate, 1),
        fleet_written_per_s=round(fleet["written_per_s"], 1),
        fleet_stored_sqlite_per_s=round(fleet["stored_per_s"], 1),
        fleet_seconds=args.seconds,
        paced_records_per_s=round(paced["written_per_s"], 1),
        latency_p50_ms=_ms(paced["p50_ms"]),
        latency_p99_ms=_ms(paced["p99_ms"]),
        catchup_records=hour["records"],
        catchup_seconds=hour["seconds"],
        pace_per_table=args.pace,
        filesystem=fs,
        **machine(),
    )


def _ms(value: float | None) -> float | None:
    return round(value, 1) if value is not None else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few tables, a few seconds")
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--pace", type=float, default=2.0, help="records/s per table, paced run")
    parser.add_argument("--catchup-rounds", type=int, default=60)
    parser.add_argument("--flood", type=int, default=200_000, help="records of the flood phase")
    args = parser.parse_args(argv)
    if args.quick:
        args.tables, args.seconds, args.catchup_rounds, args.flood = 5, 2.0, 3, 2000
    emit(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
