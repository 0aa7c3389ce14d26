"""``shoe-floor report``: the report on standard output, as a table or as JSON lines."""

from __future__ import annotations

import argparse
import json
import sys
import time

from shoe_controller.errors import ConfigError
from shoe_floor.report import OUTCOMES, TableShift, build_report
from shoe_floor.shifts import Shifts, parse_time
from shoe_floor.store import open_store

DAY = 24 * 3600.0


def report(args: argparse.Namespace) -> int:
    shifts = Shifts.parse(args.shifts, args.timezone)
    now = time.time()
    since = parse_time(args.since, shifts.zone, "--since") if args.since else now - DAY
    until = parse_time(args.until, shifts.zone, "--until") if args.until else now
    if until <= since:
        raise ConfigError("--until must be later than --since")
    with open_store(args.db, create=False) as store:
        rows = build_report(store, shifts, since, until, now)
        refused = store.quarantined(since, until)
    out = sys.stdout
    summary = quarantine_summary(refused)
    if args.json:
        for row in rows:
            out.write(json.dumps(row.as_json(), separators=(",", ":")) + "\n")
        out.write(json.dumps(summary, separators=(",", ":")) + "\n")
    else:
        out.write(render(rows))
        out.write(render_quarantine(summary))
    out.flush()
    return 0


def quarantine_summary(refused: dict[tuple[str, str, str], int]) -> dict[str, object]:
    """Messages refused in the period: in all, by reason, by table ("" for tables the floor
    does not know)."""
    by_reason: dict[str, int] = {}
    by_table: dict[str, int] = {}
    for (site, table, reason), count in sorted(refused.items()):
        by_reason[reason] = by_reason.get(reason, 0) + count
        name = f"{site}/{table}" if table else ""
        by_table[name] = by_table.get(name, 0) + count
    return {
        "quarantined": sum(refused.values()),
        "by_reason": by_reason,
        "by_table": by_table,
    }


def render_quarantine(summary: dict[str, object]) -> str:
    total = summary["quarantined"]
    if not total:
        return "quarantined: none\n"
    by_reason = summary["by_reason"]
    by_table = summary["by_table"]
    assert isinstance(by_reason, dict) and isinstance(by_table, dict)
    reasons = ", ".join(f"{reason} {count}" for reason, count in by_reason.items())
    tables = ", ".join(
        f"{name or 'tables the floor does not know'} {count}" for name, count in by_table.items()
    )
    return f"quarantined: {total} messages refused ({reasons}); claiming {tables}\n"


HEADERS = (
    "table",
    "shift",
    "rounds",
    *OUTCOMES,
    "hands",
    "rounds/h",
    "hands/h",
    "offline",
    "faults",
)


def render(rows: list[TableShift]) -> str:
    """The report as an aligned text table."""
    lines = [list(HEADERS)]
    for row in rows:
        data = row.as_json()
        faults = ", ".join(f"{code} {n}" for code, n in data["faults"].items()) or "-"
        lines.append(
            [
                f"{row.site}/{row.table}" + ("" if row.complete else " (incomplete)"),
                data["shift"] or "all",
                str(data["rounds"]),
                *(str(data[o]) for o in OUTCOMES),
                str(data["hands"]),
                _rate(data["rounds_per_hour"]),
                _rate(data["hands_per_hour"]),
                _duration(data["offline_seconds"]),
                faults,
            ]
        )
    if len(lines) == 1:
        return "no table reported in this period\n"
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADERS))]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        + "\n"
        for line in lines
    )


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}"
