"""``shoe-diag audit verify`` and ``shoe-diag audit export``: the audit journal."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from shoe_controller.cli.diag_common import Context, key_values
from shoe_controller.errors import ConfigError, ExitCode, JournalError
from shoe_controller.files import describe_mode
from shoe_controller.journal import default_journal_path
from shoe_controller.journal import verify as check
from shoe_controller.journal.exporting import View, open_export

#: An audit export holds identities nobody may see (rule E1): its file is the owner's only.
AUDIT_FILE_MODE = 0o600
EXPORT_FILE_MODE = 0o644


def journal_path(ctx: Context) -> Path:
    """--journal, else the configuration's journal, else the service's."""
    given: Path | None = ctx.option("journal")
    if given is not None:
        return given
    configured = ctx.config().journal_path
    return configured if configured is not None else default_journal_path(service=True)


def key_path(ctx: Context) -> Path | None:
    given: Path | None = ctx.option("key")
    if given is not None:
        return given
    return ctx.config().journal_key if ctx.option("journal") is None else None


def verify(ctx: Context) -> int:
    journal = journal_path(ctx)
    out = ctx.out
    try:
        report = check(
            journal,
            key_path(ctx),
            progress=lambda done, total: out.progress(done, total, "records"),
        )
    finally:
        out.progress_done()
    if ctx.json:
        out.json(
            {
                "journal": str(journal),
                "ok": report.ok,
                "records": report.records,
                "last_seq": report.last_seq,
                "checkpoint_seq": report.checkpoint_seq,
                "key_id": report.key_id,
                "first_bad_seq": report.first_bad_seq,
                "problem": report.problem.value if report.problem else None,
                "detail": report.detail,
            }
        )
    else:
        rows = [
            ("journal", str(journal)),
            ("records verified", str(report.records)),
            ("last record", str(report.last_seq)),
            ("checkpoint", "-" if report.checkpoint_seq is None else str(report.checkpoint_seq)),
            ("key id", report.key_id),
        ]
        if report.ok:
            rows.append(("result", "verified"))
        else:
            assert report.problem is not None
            where = "-" if report.first_bad_seq is None else str(report.first_bad_seq)
            rows += [("first bad record", where), ("result", f"FAILED: {report.problem.value}")]
        key_values(out, rows, {"result": ("green",) if report.ok else ("red", "bold")})
    if not report.ok:
        raise JournalError(
            f"{report.summary()}; keep the file as it is for the investigation and restore "
            "the journal from its backup"
        )
    return int(ExitCode.OK)


def export(ctx: Context) -> int:
    journal = journal_path(ctx)
    audit = bool(ctx.option("audit"))
    fmt: str = ctx.option("format", "jsonl")
    target: Path | None = ctx.option("output")
    if target is not None and str(target) == "-":
        target = None
    what: View = "rounds" if ctx.option("rounds") else "events"
    # Everything that can refuse the export is checked before the destination is touched.
    with (
        open_export(
            journal,
            "csv" if fmt == "csv" else "jsonl",
            audit=audit,
            key_path=key_path(ctx) if audit else None,
            what=what,
            round_id=ctx.option("round"),
        ) as source,
        _destination(target, AUDIT_FILE_MODE if audit else EXPORT_FILE_MODE) as stream,
    ):
        rows = source.write(stream)
    if target is not None:
        out = ctx.out
        if ctx.json:
            out.json(
                {
                    "journal": str(journal),
                    "output": str(target),
                    "format": fmt,
                    "view": what,
                    "audit": audit,
                    "rows": rows,
                }
            )
        else:
            sealed = "everything, nothing sealed" if audit else "sealed identities"
            out.line(f"{rows} {what} written to {target} ({fmt}, {sealed})")
    return int(ExitCode.OK)


@contextlib.contextmanager
def _destination(target: Path | None, mode: int) -> Iterator[TextIO]:
    """Where the export goes: standard output; a character device or a FIFO, written as it
    is (never replaced: it is not ours); or a regular file, written whole or not at all (a
    temporary file in its directory, renamed over it once complete). Anything else is
    refused before a byte is written."""
    if target is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    try:
        kind = os.stat(target).st_mode
    except FileNotFoundError:
        kind = None
    except OSError as exc:
        raise ConfigError(
            f"cannot use --output {target}: {exc.strerror}; choose another --output"
        ) from None
    if kind is not None and (stat.S_ISCHR(kind) or stat.S_ISFIFO(kind)):
        with _stream(target) as stream:
            yield stream
        return
    if kind is not None and stat.S_ISDIR(kind):
        raise ConfigError(
            f"--output {target} is a directory: name a file in it, such as "
            f"{target / 'export.jsonl'}"
        )
    if kind is not None and not stat.S_ISREG(kind):
        raise ConfigError(
            f"--output {target} is {describe_mode(kind)}: name a regular file, a character "
            "device, a FIFO, or - for standard output"
        )
    # Through a symbolic link, the file it names is replaced, never the link.
    with _atomic_file(Path(os.path.realpath(target)), mode) as stream:
        yield stream


@contextlib.contextmanager
def _stream(target: Path) -> Iterator[TextIO]:
    try:
        # A FIFO waits here for its reader, as any writer of a pipe does.
        fd = os.open(target, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the export to {target}: {exc.strerror}; choose another --output"
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as stream:
        yield stream


@contextlib.contextmanager
def _atomic_file(target: Path, mode: int) -> Iterator[TextIO]:
    directory = target.parent
    if not directory.is_dir():
        raise ConfigError(
            f"the directory of --output {target} does not exist: create it (mkdir -p "
            f"{directory}) or choose another --output"
        )
    try:
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.")
    except OSError as exc:
        raise JournalError(
            f"cannot write the export to {directory}: {exc.strerror}; choose another --output"
        ) from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except OSError as exc:
        raise JournalError(
            f"cannot write the export to {target}: {exc.strerror}; choose another --output"
        ) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
