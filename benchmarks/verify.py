"""Journal verification: records checked per second, against reading them with sqlite3.

A journal is written with the Journal API (a real file, WAL, ``synchronous=FULL``), one
group commit per round, with the records a round leaves: round opened, states, bets, start
position, each card as the shoe's event and the procedure's card record, the stub, the
round's end and close. Then, interleaved and best of ``--repeat``:

- ``value``: records per second through :func:`shoe_controller.journal.verify` (every
  record's MAC recomputed along the chain, the checkpoint checked);
- baseline: the same rows read in the same order with plain sqlite3, no MAC (the cost of
  the storage alone), so ``ratio`` is the share of that speed verification keeps.

``append_rate`` is how fast the journal was written, in records per second, commits
included.

    python benchmarks/verify.py [--quick] [--records N]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import best_rate, emit, filesystem_of, result

from firmware_protocol import DECK_53
from shoe_controller.journal import Journal, Kind, verify

POSITIONS = 7
WAGERED = [2, 4, 5]
SHOE = {"serial_number": "SIM-0001", "boot_id": 3_141_592}


def round_records(number: int, rng: random.Random) -> Iterator[tuple[Kind, dict[str, Any]]]:
    """The records of one dealt round, in the order the controller writes them."""
    deck = [card.text for card in DECK_53]
    rng.shuffle(deck)
    start = rng.randint(1, POSITIONS)
    yield Kind.ROUND_OPENED, {"round_id": f"R{number}"}
    yield Kind.STATE, {"old": "idle", "new": "deck_loaded", "trigger": "deck_loaded"}
    yield Kind.INPUT, {"by": "croupier", "name": "no_more_bets", "wagered": WAGERED}
    yield Kind.BETS_CLOSED, {"wagered": WAGERED}
    yield Kind.START_POSITION, {"method": "rng", "raw": [start], "position": start}
    yield Kind.WAGER_SETTLED, {"by": "croupier"}
    yield Kind.STATE, {"old": "start_set", "new": "dealing", "trigger": "wager_settled"}
    for index, card in enumerate(deck[:49], start=1):
        message = {"type": "CardDrawn", "draw_index": index, "gate_mode": "deal", "read": True}
        yield Kind.SHOE_EVENT, {"seq": number * 60 + index, "message": message, **SHOE}
        position = (start - 1 + index - 1) % POSITIONS + 1
        yield Kind.CARD, {"index": index, "position": position, "card": card, "gate_mode": "deal"}
    for index, card in enumerate(deck[49:], start=50):
        message = {"type": "CardDrawn", "draw_index": index, "gate_mode": "stub", "read": True}
        yield Kind.SHOE_EVENT, {"seq": number * 60 + index, "message": message, **SHOE}
        yield Kind.STUB_CARD, {"index": index, "card": card}
    yield Kind.STUB_COUNTED, {"count": 4, "source": "shoe"}
    yield (
        Kind.ROUND_ENDED,
        {
            "outcome": "dealt",
            "reason": "49 cards dealt, stub of 4",
            "start_position": start,
            "cards_per_position": {str(p): 7 for p in range(1, POSITIONS + 1)},
            "wagered": WAGERED,
            "collected_unseen": [3, 6, 7],
        },
    )
    yield Kind.ROUND_CLOSED, {"hands": {"1": deck[0:7], "2": deck[7:14]}}


def build(path: Path, records: int) -> float:
    """Write ``records`` records, a round per commit; returns records per second."""
    rng = random.Random(10)
    written = 0
    start = time.perf_counter()
    with Journal.open(path) as journal:
        number = 0
        while written < records:
            number += 1
            with journal.transaction():
                for kind, payload in round_records(number, rng):
                    journal.append(kind, payload, f"R{number}")
                    written += 1
                    if written == records:
                        break
    return written / (time.perf_counter() - start)


def verify_all(path: Path, records: int) -> int:
    report = verify(path)
    if not report.ok or report.records != records:
        raise RuntimeError(f"the benchmark's journal does not verify: {report.summary()}")
    return report.records


def read_all(path: Path, records: int) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        count = 0
        for _row in conn.execute(
            "SELECT seq, wall, mono_ns, round_id, kind, payload, mac FROM records ORDER BY seq"
        ):
            count += 1
    finally:
        conn.close()
    if count != records:
        raise RuntimeError(f"sqlite3 read {count} of {records} records")
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run, for CI")
    parser.add_argument("--records", type=int, help="journal size (default 200000, quick 20000)")
    parser.add_argument("--repeat", type=int, help="runs of each, best kept (default 3)")
    parser.add_argument("--dir", type=Path, help="where the journal goes (default: a temp dir)")
    args = parser.parse_args(argv)
    records = args.records or (20_000 if args.quick else 200_000)
    repeat = args.repeat or (2 if args.quick else 3)
    with tempfile.TemporaryDirectory(prefix="bench-verify-", dir=args.dir) as tmp:
        path = Path(tmp) / "journal.sqlite3"
        append_rate = build(path, records)
        verify_rate = read_rate = 0.0
        # Interleaved, so that both sides see the same state of the machine.
        for _ in range(repeat):
            verify_rate = max(verify_rate, best_rate(lambda: verify_all(path, records), 1))
            read_rate = max(read_rate, best_rate(lambda: read_all(path, records), 1))
        size_mb = path.stat().st_size / 1e6
        journal_fs = filesystem_of(tmp)
    emit(
        result(
            "verify",
            verify_rate,
            "records/s",
            "sqlite3 read, no MAC",
            read_rate,
            records=records,
            append_rate=round(append_rate, 1),
            journal_mb=round(size_mb, 1),
            repeat=repeat,
            sqlite=sqlite3.sqlite_version,
            journal_fs=journal_fs,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
