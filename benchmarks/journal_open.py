"""Opening the journal for appending: with its verified prefix, and the first time (the
whole chain verified), against reading the same rows with sqlite3.

The service verifies the journal's chain whenever it opens it, so that it never appends to
a journal changed since; the verified prefix (``journal.verified``) makes that check cover
only the records written since the last opening. A journal is written as
benchmarks/verify.py writes it (one group commit per round), then, interleaved and best of
``--repeat``:

- ``value``: milliseconds for ``Journal.open`` + ``close`` with the verified prefix at the
  end of the journal (every start after the first);
- ``first_open_ms``: the same without a verified prefix (the first opening, or one after
  the prefix file was lost): every record's MAC recomputed along the chain;
- baseline: milliseconds to read every row in order with plain sqlite3, no MAC (the cost of
  the storage alone); ``ratio`` and ``first_open_ratio`` are both times over it.

    python benchmarks/journal_open.py [--quick] [--records N]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import emit, filesystem_of, result
from verify import build, read_all

from shoe_controller.journal import Journal
from shoe_controller.journal.paths import verified_path


def best_ms(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def open_and_close(path: Path, *, first: bool) -> None:
    if first:
        verified_path(path).unlink(missing_ok=True)
    Journal.open(path, create=False).close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run, for CI")
    parser.add_argument(
        "--records", type=int, help="journal size (default 1,000,000; quick 20,000)"
    )
    parser.add_argument("--repeat", type=int, help="runs of each, best kept (default 3)")
    parser.add_argument("--dir", type=Path, help="where the journal goes (default: a temp dir)")
    args = parser.parse_args(argv)
    records = args.records or (20_000 if args.quick else 1_000_000)
    repeat = args.repeat or (2 if args.quick else 3)
    with tempfile.TemporaryDirectory(prefix="bench-open-", dir=args.dir) as tmp:
        path = Path(tmp) / "journal.sqlite3"
        build(path, records)
        first = prefixed = read = float("inf")
        # Interleaved, so that every side sees the same state of the machine and its caches.
        for _ in range(repeat):
            first = min(first, best_ms(lambda: open_and_close(path, first=True), 1))
            prefixed = min(prefixed, best_ms(lambda: open_and_close(path, first=False), 1))
            read = min(read, best_ms(lambda: read_all(path, records), 1))
        journal_fs = filesystem_of(tmp)
    emit(
        result(
            "journal_open",
            prefixed,
            "ms",
            "sqlite3 read of every row (ms)",
            read,
            ratio_digits=4,
            first_open_ms=round(first, 1),
            first_open_ratio=round(first / read, 2),
            records=records,
            repeat=repeat,
            sqlite=sqlite3.sqlite_version,
            journal_fs=journal_fs,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
