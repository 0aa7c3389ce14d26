"""``shoe-diag verify-install``: the installation read again, and compared with the software
manifest the service journaled at its latest start (rule A1: software identity).

This is a second reading, by another route than the one that wrote the manifest
(:mod:`.manifest`), so that a fault in one is not repeated in the other:

- every distribution the manifest names is looked up again; its version and the digest of
  its ``RECORD`` are compared, and every file its ``RECORD`` lists with a digest is read
  and checked against that digest (and size): a file changed, replaced or removed after
  installation shows here even when nobody touched ``RECORD``;
- our own packages are walked again (every file but ``__pycache__``, by
  :meth:`pathlib.Path.rglob`) and digested by the recipe of docs/journal.md, each package
  and all of them together;
- the interpreter the service ran is read again and digested; its version is compared
  when this command runs on that same interpreter;
- the system files (the manifest's, and those the installation writes today) are read
  again: changed, appeared or gone.

Each difference is one :class:`Finding`; :func:`check_installation` gives them all, and
:func:`latest_manifest` finds the manifest to compare with.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shoe_controller.errors import JournalError
from shoe_controller.files import open_regular
from shoe_controller.journal.lookup import reading
from shoe_controller.journal.records import Kind
from shoe_controller.service.manifest import dist_info_directory

_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Finding:
    """One way the installation differs: what (``subject``) and how (``detail``)."""

    subject: str
    detail: str

    def line(self) -> str:
        return f"{self.subject}: {self.detail}"


@dataclass(frozen=True, slots=True)
class JournaledManifest:
    """The manifest of a start, as the journal holds it."""

    started_seq: int
    started_at: str
    manifest_seq: int
    sha256: str
    manifest: Mapping[str, Any]


@dataclass
class InstallCheck:
    """What :func:`check_installation` found, and how much it read."""

    findings: list[Finding] = field(default_factory=list)
    #: What could not be compared, and why (not a difference).
    notes: list[str] = field(default_factory=list)
    distributions: int = 0
    #: Files checked against their distribution's RECORD.
    record_files: int = 0
    packages: int = 0
    system_files: int = 0

    @property
    def ok(self) -> bool:
        return not self.findings

    def differs(self, subject: str, detail: str) -> None:
        self.findings.append(Finding(subject, detail))


def latest_manifest(journal: Path) -> JournaledManifest:
    """The manifest of the latest ``service_started`` in ``journal``. A journal with no
    start, a start without a manifest (a release before manifests), or a manifest whose
    bytes do not give the digest its start names is a JournalError saying so."""
    with reading(journal) as reader:
        started = reader.latest(Kind.SERVICE_STARTED)
        if started is None:
            raise JournalError(
                f"journal {journal} holds no service start: start the service once, then "
                "verify the installation"
            )
        digest = started.payload_object().get("manifest_sha256")
        record = reader.first_after(Kind.SOFTWARE_MANIFEST, started.seq)
        if not isinstance(digest, str) or record is None:
            raise JournalError(
                f"the latest start in journal {journal} (record {started.seq}) journaled no "
                "software manifest: it ran a release before manifests; start the service "
                "with this release, then verify the installation"
            )
    if hashlib.sha256(record.payload.encode("utf-8")).hexdigest() != digest:
        raise JournalError(
            f"journal {journal}: the software manifest (record {record.seq}) does not have "
            f"the digest its start (record {started.seq}) names; the journal was altered: "
            "verify it (shoe-diag audit verify) and keep it for the investigation"
        )
    manifest = json.loads(record.payload)
    if not isinstance(manifest, dict) or manifest.get("format") != 1:
        raise JournalError(
            f"journal {journal}: the software manifest (record {record.seq}) is of a format "
            "this release does not read: use the release that wrote it"
        )
    return JournaledManifest(started.seq, started.wall, record.seq, digest, manifest)


def check_installation(
    manifest: Mapping[str, Any], system_files: Iterable[Path] = ()
) -> InstallCheck:
    """Every difference between the installation now and ``manifest``; ``system_files``
    are the files the installation writes today (compared with the manifest's)."""
    check = InstallCheck()
    for entry in _entries(manifest, "distributions"):
        _check_distribution(check, entry)
    _check_packages(check, manifest.get("software") or {})
    _check_python(check, manifest.get("python") or {})
    _check_system_files(check, _entries(manifest, "system_files"), system_files)
    return check


def _entries(manifest: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = manifest.get(key)
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


# --- distributions ------------------------------------------------------------------------


def _check_distribution(check: InstallCheck, entry: Mapping[str, Any]) -> None:
    name = str(entry.get("name"))
    subject = f"distribution {name}"
    check.distributions += 1
    try:
        dist = importlib.metadata.distribution(name)
        version = dist.version
    except importlib.metadata.PackageNotFoundError:
        check.differs(subject, f"version {entry.get('version')} at the start, not installed now")
        return
    except (OSError, ValueError):
        check.differs(subject, "its metadata cannot be read now")
        return
    if version != entry.get("version"):
        check.differs(
            subject, f"version {entry.get('version')} at the start, {version} installed now"
        )
    record = _record_path(dist)
    if record is None:
        if entry.get("record_sha256") is not None:
            check.differs(subject, "its RECORD is gone (it listed its files at the start)")
        else:
            check.notes.append(f"{subject}: installed without a RECORD; its files go unchecked")
        return
    try:
        content = record.read_bytes()
    except OSError as exc:
        check.differs(subject, f"its RECORD cannot be read: {exc.strerror or exc}")
        return
    if hashlib.sha256(content).hexdigest() != entry.get("record_sha256"):
        check.differs(subject, "its RECORD differs from the one at the start")
    for path, problem in _against_record(dist, content):
        check.record_files += 1
        if problem is not None:
            check.differs(subject, f"{path} {problem}")


def _record_path(dist: importlib.metadata.Distribution) -> Path | None:
    directory = dist_info_directory(dist)
    if directory is None or not (directory / "RECORD").is_file():
        return None
    return directory / "RECORD"


def _against_record(
    dist: importlib.metadata.Distribution, content: bytes
) -> Iterable[tuple[str, str | None]]:
    """Each file the RECORD ``content`` lists with a digest, and what is wrong with it
    (None: it matches)."""
    try:
        rows = list(csv.reader(io.StringIO(content.decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error):
        yield "RECORD", "is not a readable list of files"
        return
    base = Path(str(dist.locate_file("")))
    for row in rows:
        if len(row) < 2 or not row[1]:
            continue  # the RECORD itself, compiled files: listed without a digest
        relative, digest_spec = row[0], row[1]
        algorithm, _, expected = digest_spec.partition("=")
        yield relative, _file_problem(base / relative, algorithm, expected, row[2:3])


def _file_problem(path: Path, algorithm: str, expected: str, size: list[str]) -> str | None:
    try:
        digest = hashlib.new(algorithm)
    except ValueError:
        return f"has a digest of an unknown kind ({algorithm})"
    try:
        length = _digest_file(path, digest)
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    got = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode("ascii")
    if got != expected or (size and size[0] and size[0] != str(length)):
        return "does not match its RECORD"
    return None


# --- our packages -------------------------------------------------------------------------


def _check_packages(check: InstallCheck, software: Mapping[str, Any]) -> None:
    expected = software.get("packages")
    if not isinstance(expected, dict):
        check.differs("software", "the manifest lists no packages")
        return
    lines: list[str] = []
    same = True
    for name in sorted(expected):
        check.packages += 1
        root = _package_directory(name)
        if root is None:
            check.differs(f"package {name}", "not installed now")
            same = False
            continue
        own = _recipe_lines(root)
        lines += own
        if _digest_lines(own) != expected[name]:
            check.differs(f"package {name}", "its files differ from those at the start")
            same = False
    for name in sorted(_shipped_now() - set(expected)):
        check.differs(f"package {name}", "shipped now, not at the start")
        same = False
    if same and _digest_lines(lines) != software.get("sha256"):
        # Every package is as it was, yet the whole is not: the manifest contradicts itself.
        check.differs("software", "software_sha256 is not the digest of its packages")


def _package_directory(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _shipped_now() -> set[str]:
    try:
        listed = importlib.metadata.distribution("shoe-controller").read_text("top_level.txt")
    except importlib.metadata.PackageNotFoundError:
        return set()
    return set((listed or "").split())


def _recipe_lines(root: Path) -> list[str]:
    """docs/journal.md's lines for the package at ``root``: ``name NUL sha256 LF``."""
    lines = []
    for path in root.rglob("*"):
        if "__pycache__" in path.relative_to(root).parts or not path.is_file():
            continue
        name = path.relative_to(root.parent).as_posix()
        lines.append(f"{name}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n")
    return lines


def _digest_lines(lines: Sequence[str]) -> str:
    return hashlib.sha256("".join(sorted(lines)).encode("utf-8")).hexdigest()


# --- the interpreter ----------------------------------------------------------------------


def _check_python(check: InstallCheck, python: Mapping[str, Any]) -> None:
    executable = python.get("executable")
    if not isinstance(executable, str):
        check.notes.append("python: the manifest names no interpreter")
        return
    try:
        current = _sha256_of(Path(executable))
    except OSError as exc:
        check.differs(f"python {executable}", f"cannot be read now: {exc.strerror or exc}")
        return
    if current != python.get("sha256"):
        check.differs(f"python {executable}", "the interpreter differs from the one at the start")
    if os.path.realpath(sys.executable) == executable:
        if platform.python_version() != python.get("version"):
            check.differs(
                f"python {executable}",
                f"version {python.get('version')} at the start, {platform.python_version()} now",
            )
    else:
        check.notes.append(
            f"python: this check runs on {os.path.realpath(sys.executable)}, the service ran "
            f"{executable}: its version and distributions are read as this interpreter sees "
            "them"
        )


# --- system files -------------------------------------------------------------------------


def _check_system_files(
    check: InstallCheck, recorded: list[Mapping[str, Any]], now: Iterable[Path]
) -> None:
    at_start = {str(entry.get("path")): entry for entry in recorded}
    for path in sorted(set(at_start) | {str(p) for p in now}):
        check.system_files += 1
        subject = f"file {path}"
        before = at_start.get(path)
        present, digest, error = _system_file_now(Path(path))
        if error is not None:
            check.differs(subject, f"cannot be read now: {error}")
        elif before is None:
            if present:
                check.differs(subject, "present now, not in the manifest of the start")
        elif bool(before.get("present")) != present:
            check.differs(
                subject,
                "absent at the start, present now"
                if present
                else "present at the start, absent now",
            )
        elif present and digest != before.get("sha256"):
            check.differs(subject, "changed since the start")


def _system_file_now(path: Path) -> tuple[bool, str | None, str | None]:
    try:
        return True, _sha256_of(path), None
    except FileNotFoundError:
        return False, None, None
    except OSError as exc:
        return True, None, exc.strerror or str(exc)


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    _digest_file(path, digest)
    return digest.hexdigest()


def _digest_file(path: Path, digest: Any) -> int:
    """Feed the regular file ``path`` to ``digest``; returns its length. A FIFO or a device
    named by a hostile RECORD is refused, never waited on or read for ever."""
    length = 0
    with open_regular(path) as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            length += len(chunk)
    return length
