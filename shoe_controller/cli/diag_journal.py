"""``shoe-diag journal confirm-stub``: does a claimed stub match a round's? (rule E1: the
answer, never the stub)."""

from __future__ import annotations

from pathlib import Path

from shoe_controller.cli.diag_audit import journal_path, key_path
from shoe_controller.cli.diag_common import Context, key_values
from shoe_controller.errors import ConfigError, ExitCode, ShoeControllerError
from shoe_controller.journal.lookup import reading
from shoe_controller.journal.paths import default_key_path
from shoe_controller.journal.stub_commitment import (
    STUB_KINDS,
    StubCommitter,
    confirm_stub,
    default_stub_key_path,
    load_stub_key,
    stub_entries,
)


class StubDoesNotMatch(ShoeControllerError):
    exit_code = ExitCode.CHECK_FAILED


def stub_key_path(ctx: Context, journal: Path) -> Path:
    """--stub-key, else the stub key beside the journal's key."""
    given: Path | None = ctx.option("stub_key")
    if given is not None:
        return given
    return default_stub_key_path(key_path(ctx) or default_key_path(journal))


def confirm(ctx: Context) -> int:
    journal = journal_path(ctx)
    round_id: str = ctx.option("round")
    claimed: list[str] = ctx.option("cards")
    with reading(journal) as reader:
        if not reader.holds_round(round_id):
            raise ConfigError(
                f"no round {round_id} in journal {journal}: list its rounds with shoe-diag "
                "audit export --rounds"
            )
        records = reader.of_round(round_id, STUB_KINDS)
    entries = stub_entries(records)
    if not entries:
        raise ConfigError(
            f"round {round_id} of journal {journal} has no stub: it ended before the shoe "
            "counted its stub, so there is nothing to compare a claim with"
        )
    committer = None
    if any("commitment" in entry for entry in entries):
        committer = StubCommitter(load_stub_key(stub_key_path(ctx, journal)))
    result = confirm_stub(round_id, records, claimed, committer)
    out = ctx.out
    if ctx.json:
        out.json(
            {
                "journal": str(journal),
                "round": round_id,
                "kept_as": result.kept_as,
                "key_id": result.key_id,
                "stub_cards": result.stub_cards,
                "unread": result.unread,
                "claimed": result.claimed,
                "matches": result.matches,
                "complete": result.complete,
            }
        )
    else:
        kept = (
            f"kept as commitments (stub key id {result.key_id})"
            if result.kept_as == "commitment"
            else "kept sealed in the journal"
        )
        unread = f", {result.unread} not read by the shoe" if result.unread else ""
        if not result.matches:
            verdict = "DOES NOT MATCH: the claimed cards are not all in the stub"
        elif result.complete:
            verdict = "matches: the claimed cards are the stub"
        else:
            verdict = (
                f"matches: the claimed cards are in the stub ({result.claimed} of its "
                f"{result.stub_cards})"
            )
        key_values(
            out,
            [
                ("journal", str(journal)),
                ("round", round_id),
                ("stub", f"{result.stub_cards} cards{unread}, {kept}"),
                ("claimed", f"{result.claimed} cards"),
                ("result", verdict),
            ],
            {"result": ("green",) if result.matches else ("red", "bold")},
        )
    if not result.matches:
        raise StubDoesNotMatch(
            f"the claimed stub of round {round_id} does not match the journal's: at least one "
            "claimed card was not in its stub"
        )
    return int(ExitCode.OK)
