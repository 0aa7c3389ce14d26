"""``shoe-floor audit``: check a box's journal against what the floor received from it.

Every public record the box forwarded carried its MAC, and every chain head carried the
journal's last sequence number and MAC at that moment. A genuine journal holds each of
them unchanged. A journal rolled back to an older copy (its checkpoint with it) or cut
short ends before what the floor received; one rewritten with the key has other MACs where
the floor holds anchors. On the box alone neither shows (docs/journal.md).

With the journal's key (``--key``, or the key file beside the journal when it is
readable) the journal's own MAC chain and checkpoint are verified as well.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from shoe_controller.errors import ConfigError, ExitCode, ShoeControllerError
from shoe_controller.journal import verify
from shoe_controller.journal.paths import default_key_path
from shoe_controller.journal.tail import JournalTail
from shoe_floor.store import Store, open_store


class AuditFailed(ShoeControllerError):
    exit_code = ExitCode.CHECK_FAILED


@dataclass(frozen=True)
class AuditResult:
    ok: bool
    table: str
    journal: Path
    journal_id: str
    journal_last: int
    floor_last: int
    anchors: int
    problem: str | None = None
    detail: str = ""
    chain: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "table": self.table,
            "journal": str(self.journal),
            "journal_id": self.journal_id,
            "journal_last": self.journal_last,
            "floor_last": self.floor_last,
            "anchors": self.anchors,
            "problem": self.problem,
            "detail": self.detail,
            "chain": self.chain,
        }

    def summary(self) -> str:
        if self.ok:
            return (
                f"journal of table {self.table} agrees with the floor: {self.anchors} anchors "
                f"up to record {self.floor_last} match; the journal ends at {self.journal_last}"
                + (f"; {self.chain}" if self.chain else "")
            )
        return (
            f"journal of table {self.table} FAILED the floor audit: {self.problem}: {self.detail}"
        )


def audit_site(store: Store, table: str, site: str | None) -> str:
    """The site whose ``table`` is audited: the one named, else the only one that has a
    table of that name (two casinos may both have a PG-07)."""
    if site is not None:
        return site
    sites = store.sites_of(table)
    if len(sites) > 1:
        raise ConfigError(
            f"table {table} is at several sites ({', '.join(sites)}): name one with --site"
        )
    return sites[0] if sites else ""


def audit_journal(
    store: Store, site: str, table: str, journal: Path, key: Path | None = None
) -> AuditResult:
    """Compare ``journal`` with the anchors the floor holds for ``table`` of ``site``."""
    with JournalTail.open(journal) as tail:
        journal_id = tail.journal_id
        head = tail.head()
        last = head.seq if head is not None else 0
        held = store.anchors(site, table)
        anchors = [(seq, mac) for jid, seq, mac in held if jid == journal_id]
        known = sorted({jid for jid, _, _ in held})

        def result(ok: bool, problem: str | None = None, detail: str = "") -> AuditResult:
            floor_last = anchors[-1][0] if anchors else 0
            return AuditResult(
                ok, table, journal, journal_id, last, floor_last, len(anchors), problem, detail
            )

        if not anchors:
            if known:
                return result(
                    False,
                    "unknown_journal",
                    f"the floor never received journal {journal_id} from table {table} (it "
                    f"holds {', '.join(known)}): this is not the journal the table forwarded",
                )
            return result(False, "no_anchors", f"the floor holds nothing of table {table}")
        floor_last = anchors[-1][0]
        if floor_last > last:
            return result(
                False,
                "cut_short",
                f"the journal ends at record {last} but the box forwarded record "
                f"{floor_last}: it was rolled back to an older copy or cut short",
            )
        mismatch = _first_mismatch(tail, anchors)
        if mismatch is not None:
            return result(
                False,
                "rewritten",
                f"record {mismatch} differs from the one the box forwarded (its MAC changed): "
                "the journal was rewritten from there",
            )
    checked = result(True)
    key_file = key if key is not None else default_key_path(journal)
    if key is None and not os.access(key_file, os.R_OK):
        return checked
    report = verify(journal, key_file)
    if not report.ok:
        return replace(checked, ok=False, problem="chain", detail=report.summary())
    return replace(checked, chain=report.summary())


def _first_mismatch(tail: JournalTail, anchors: list[tuple[int, str]]) -> int | None:
    wanted = dict(anchors)
    seq, last = 0, anchors[-1][0]
    while seq < last:
        records = tail.after(seq, 4096)
        if not records:
            return seq + 1
        for record in records:
            mac = wanted.get(record.seq)
            if mac is not None and not hmac.compare_digest(mac, record.mac.hex()):
                return record.seq
        seq = records[-1].seq
    return None


def audit_command(args: argparse.Namespace) -> int:
    with open_store(args.db, create=False) as store:
        site = audit_site(store, args.table, args.site)
        outcome = audit_journal(store, site, args.table, args.journal, args.key)
    if args.json:
        sys.stdout.write(json.dumps(outcome.as_json(), separators=(",", ":")) + "\n")
    elif outcome.ok:
        sys.stdout.write(outcome.summary() + "\n")
    if not outcome.ok:
        raise AuditFailed(
            outcome.summary()
            + "; keep the journal as it is for the investigation and compare it with its backups"
        )
    return 0
