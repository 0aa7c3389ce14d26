"""Run every benchmark, print their JSON lines, and optionally write docs/performance.md.

Each benchmark runs as its own process (``python benchmarks/<name>.py``), so that none
inherits another's memory, threads or warm caches. With ``--write-doc`` the results table
between the markers in docs/performance.md is replaced by this run's; the rest of the
page is left as it is. The exit status is 1 when a benchmark failed (then the page is not
touched); a benchmark that misses its aim is reported, not a failure.

    python -m benchmarks [--quick] [--write-doc] [--only NAME ...]
    python benchmarks/run_all.py [--quick] [--write-doc] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "performance.md"
START_MARK = "<!-- results:start -->"
END_MARK = "<!-- results:end -->"

Line = dict[str, Any]


@dataclass(frozen=True)
class Benchmark:
    name: str
    aim: str
    met: Callable[[Line], bool]
    shown: Callable[[Line], str]


def _n(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


BENCHMARKS = (
    Benchmark(
        "decode",
        "ratio >= 5",
        lambda r: r["ratio"] >= 5,
        lambda r: (
            f"{_n(r['value'])} frames/s ({r['frame_bytes']}-byte frames; a 115200-baud line "
            f"carries {_n(r['wire_frames_per_s'])})"
        ),
    ),
    Benchmark(
        "round",
        ">= 1,000 cards/s, above wire speed",
        lambda r: r["value"] >= 1000 and r["ratio"] > 1,
        lambda r: (
            f"{_n(r['value'])} cards/s; card to ack p50 {r['latency_p50_ms']} ms, "
            f"p99 {r['latency_p99_ms']} ms; {r['host_us_per_card']} us/card on the host "
            f"vs {r['wire_us_per_card']} us/card on the wire"
        ),
    ),
    Benchmark(
        "startup",
        "ratio <= 3",
        lambda r: r["ratio"] <= 3,
        lambda r: f"{r['value']} ms ({r['command']}, median of {r['runs']})",
    ),
    Benchmark(
        "idle",
        "< 1 % of a core",
        lambda r: r["percent_of_core"] < 1,
        lambda r: (
            f"{r['percent_of_core']} % of a core ({r['value']} ms CPU in {r['seconds']} s; "
            f"a bare thread waking every {r['poll_interval_ms']:g} ms: "
            f"{r['poller_percent_of_core']} %)"
        ),
    ),
    Benchmark(
        "memory",
        "< 40 MB, growth < 2 MB",
        lambda r: r["value"] < 40 and r["growth_mb"] < 2,
        lambda r: (
            f"{r['value']} MB after {r['rounds_last']} rounds, growth {r['growth_mb']} MB "
            f"from round {r['rounds_first']}, {r['growth_second_half_mb']} MB in the second "
            f"half (shoe in-process: {r['sim_last_mb']} MB, "
            f"growth {r['sim_growth_mb']} MB)"
        ),
    ),
    Benchmark(
        "api",
        "p99 <= 20 ms",
        lambda r: r["value"] <= 20,
        lambda r: (
            f"card to WebSocket notification, {r['clients']} clients: p50 "
            f"{r['latency_p50_ms']} ms, p99 {r['latency_p99_ms']} ms ({_n(r['cards'])} cards)"
        ),
    ),
    Benchmark(
        "floor",
        ">= 20,000 records/s into PostgreSQL (two collectors); p99 < 100 ms at 200 tables",
        lambda r: r["value"] >= 20_000 and (r["latency_p99_ms"] or 1e9) < 100,
        lambda r: (
            f"{_n(r['value'])} records/s into PostgreSQL with two collectors, "
            f"{_n(r['sqlite_one_collector_per_s'])} into SQLite with one "
            f"({_n(r['flood_records'])} records of {r['tables']} tables); {r['tables']} boxes "
            f"at {r['pace_per_table']:g} records/s each, commit to row p50 "
            f"{r['latency_p50_ms']} ms, p99 {r['latency_p99_ms']} ms (the floor's part, "
            f"boxes elsewhere: p50 {r['floor_latency_p50_ms']} ms, p99 "
            f"{r['floor_latency_p99_ms']} ms); catch-up of an hour "
            f"({_n(r['catchup_records'])} records) in {r['catchup_seconds']} s"
        ),
    ),
    Benchmark(
        "hostile",
        "every round dealt; p99 flooded <= 2 x quiet",
        lambda r: r["rounds_dealt"] == r["rounds"] and r["ratio"] <= 2,
        lambda r: (
            f"{_n(r['connections'])} hostile connections from 100 machines and 20 PIN "
            f"guessers while dealing at pace 0 under ulimit -n 1024: {r['rounds_dealt']} of "
            f"{r['rounds']} rounds dealt, {_n(r['refused'])} connections refused at once, "
            f"{_n(r['let_go'])} taken then let go; card to ack p50 {r['latency_p50_ms']} ms, "
            f"p99 {r['latency_p99_ms']} ms flooded (quiet: p50 {r['quiet_p50_ms']} ms, p99 "
            f"{r['quiet_p99_ms']} ms; median of {r['runs']} runs each)"
        ),
    ),
    Benchmark(
        "verify",
        ">= 200,000 records/s",
        lambda r: r["value"] >= 200_000,
        lambda r: f"{_n(r['value'])} records/s ({_n(r['records'])} records)",
    ),
    Benchmark(
        "lossy_line",
        "card-gap p99 < 20 ms with 2 % of frames dropped, < 100 ms with 2 % of bytes "
        "corrupted; every card once",
        lambda r: r["aims_met"] and r["exactly_once"],
        lambda r: (
            f"card-gap p99 with 2 % of frames dropped {r['drop_p99_ms']} ms, with 2 % of "
            f"bytes corrupted {r['noise_p99_ms']} ms; every card exactly once: "
            f"{'yes' if r['exactly_once'] else 'NO'} ({r['rounds_per_line']} rounds a line)"
        ),
    ),
    Benchmark(
        "journal_open",
        "ratio <= 0.01 (with the verified prefix)",
        lambda r: r["ratio"] <= 0.01,
        lambda r: (
            f"{r['value']} ms to open {_n(r['records'])} records with the verified prefix; "
            f"{_n(r['first_open_ms'], 1)} ms the first time, whole chain verified "
            f"({r['first_open_ratio']} x the read)"
        ),
    ),
)


def run_one(name: str, quick: bool) -> Line:
    command = [sys.executable, str(HERE / f"{name}.py"), *(["--quick"] if quick else [])]
    completed = subprocess.run(command, check=False, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(f"{name} failed: {completed.stderr.strip()}")
    lines = completed.stdout.strip().splitlines()
    if len(lines) != 1:
        raise RuntimeError(f"{name} printed {len(lines)} lines, not one JSON line")
    line: Line = json.loads(lines[0])
    return line


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for text in info:
                if text.startswith("model name"):
                    return text.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def table(results: list[tuple[Benchmark, Line]], quick: bool) -> str:
    rows = [
        "| Benchmark | Result | Baseline | Ratio | Aim | Met |",
        "|---|---|---|---|---|---|",
    ]
    for bench, line in results:
        baseline = f"{line['baseline']}: {_n(line['baseline_value'], 1)}"
        rows.append(
            f"| {bench.name} | {bench.shown(line)} | {baseline} | {line['ratio']} | "
            f"{bench.aim} | {'yes' if bench.met(line) else '**no**'} |"
        )
    when = time.strftime("%Y-%m-%d", time.gmtime())
    kind = "quick (smoke) run" if quick else "full run"
    return "\n".join(
        [
            f"Latest {kind}, {when}: {os.cpu_count()} cores ({cpu_model()}), "
            f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
            f"{platform.system()} {platform.release()}.",
            "",
            *rows,
        ]
    )


def write_doc(text: str, doc: Path = DOC) -> None:
    page = doc.read_text(encoding="utf-8")
    start, end = page.find(START_MARK), page.find(END_MARK)
    if start < 0 or end < start:
        raise RuntimeError(f"{doc} lacks the markers {START_MARK} and {END_MARK}")
    head = page[: start + len(START_MARK)]
    doc.write_text(f"{head}\n{text}\n{page[end:]}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke runs, for CI")
    parser.add_argument(
        "--write-doc", action="store_true", help=f"write the results table into {DOC.name}"
    )
    names = [b.name for b in BENCHMARKS]
    parser.add_argument("--only", nargs="+", choices=names, help="run these benchmarks only")
    args = parser.parse_args(argv)
    chosen = [b for b in BENCHMARKS if args.only is None or b.name in args.only]
    results: list[tuple[Benchmark, Line]] = []
    failed = False
    for bench in chosen:
        try:
            line = run_one(bench.name, args.quick)
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            failed = True
            continue
        print(json.dumps(line), flush=True)
        results.append((bench, line))
    if failed:
        return 1
    if args.write_doc:
        write_doc(table(results, args.quick))
        print(f"results written to {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
