"""The software manifest the service journals at every start (rule A1: software identity).

What a gaming laboratory asks to know about the software that dealt: our own files, every
installed distribution the service runs on, the interpreter, and the system files that
start the service and grant it the shoe. :func:`software_manifest` gives it as plain JSON:

``format``
    1.
``software``
    ``sha256``: the digest of every file of the import packages our distribution ships
    (:func:`~.provenance.software_sha256`, the ``service_started`` record's
    ``software_sha256``), and ``packages``: each package's own digest by the same recipe.
``distributions``
    One entry per installed distribution that provides a module loaded in the process when
    the service starts, or that our distribution requires (directly or not, extras aside):
    ``name`` (normalised: lower case, runs of ``-_.`` as one ``-``), ``version``, and
    ``record_sha256``, the SHA-256 of the bytes of its ``RECORD`` (the list of its files
    with their own digests), null for a distribution installed without one. Sorted by name.
``python``
    ``version``, ``implementation``, ``executable`` (the interpreter's real path, links
    resolved) and its ``sha256``.
``system_files``
    For each path given (the udev rules, the service unit and the other files the
    installation writes: ``shoe_controller.box.installation.system_files``), ``path`` and
    ``sha256``, or ``sha256`` null and ``present`` false when the file is absent; a path
    that cannot be read says why in ``error``. Sorted by path.

The journal keeps it whole in one ``software_manifest`` record, right after
``service_started``, whose ``manifest_sha256`` is the SHA-256 of that record's payload (its
canonical JSON text, exactly as stored). ``shoe-diag verify-install`` reads the installation
again by another route (:mod:`.install_check`) and says what differs.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.metadata
import os
import platform
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from shoe_controller.files import NotRegularFile, open_regular, read_regular
from shoe_controller.journal.records import canonical_json
from shoe_controller.service.provenance import (
    DISTRIBUTION,
    package_roots,
    software_sha256,
    tree_sha256,
)

MANIFEST_FORMAT: Final = 1
#: Larger than any unit or rules file; a bigger one is recorded by its digest all the same.
_MAX_SYSTEM_FILE: Final = 16 << 20
_CHUNK: Final = 1 << 20


def software_manifest(
    system_files: Iterable[Path] = (), modules: Iterable[str] | None = None
) -> dict[str, Any]:
    """The manifest of this process now: ``modules`` are the names of the modules loaded
    (default: :data:`sys.modules`), ``system_files`` the system files to record."""
    loaded = list(sys.modules) if modules is None else list(modules)
    # The parts read once a process are copied: a caller may change its manifest.
    return {
        "format": MANIFEST_FORMAT,
        "software": copy.deepcopy(_software()),
        "distributions": [_distribution(name) for name in service_distributions(loaded)],
        "python": dict(_python()),
        "system_files": [system_file(path) for path in sorted(set(system_files))],
    }


def manifest_sha256(manifest: Mapping[str, Any]) -> str:
    """The manifest's digest: SHA-256 of its canonical JSON, as the journal stores it."""
    return hashlib.sha256(canonical_json(manifest).encode("ascii")).hexdigest()


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares names: ``Paho_MQTT`` -> ``paho-mqtt``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def service_distributions(modules: Iterable[str]) -> list[str]:
    """The normalised names of the distributions providing ``modules``, with every
    distribution our own requires, directly or not (extras aside), sorted."""
    provides = _top_level_providers()
    names: set[str] = set()
    for module in modules:
        names.update(provides.get(module.partition(".")[0], ()))
    names.update(_requirement_closure(DISTRIBUTION))
    return sorted(names)


@functools.cache
def _top_level_providers() -> Mapping[str, frozenset[str]]:
    """Top-level module name -> the distributions providing it, as
    :func:`importlib.metadata.packages_distributions` gives it, but a distribution whose
    metadata cannot be read is passed over instead of stopping the start. Reading every
    distribution's metadata takes tens of milliseconds: once a process."""
    providers: dict[str, set[str]] = {}
    for dist in importlib.metadata.distributions():
        try:
            name = normalized(dist.metadata["Name"] or "")
            modules = _top_level(dist)
        except (OSError, ValueError):
            continue
        for module in modules:
            providers.setdefault(module, set()).add(name)
    return {module: frozenset(names) for module, names in providers.items()}


def _top_level(dist: importlib.metadata.Distribution) -> set[str]:
    declared = (dist.read_text("top_level.txt") or "").split()
    if declared:
        return set(declared)
    return {
        entry.parts[0] if len(entry.parts) > 1 else entry.name.removesuffix(".py")
        for entry in dist.files or ()
        if entry.suffix == ".py"
    }


_REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@functools.cache
def _requirement_closure(root: str) -> frozenset[str]:
    """``root`` and every installed distribution it requires, directly or not. A requirement
    of an extra is left out; one that is not installed (a marker excluded it) too."""
    seen: set[str] = set()
    pending = [root]
    while pending:
        name = normalized(pending.pop())
        if name in seen:
            continue
        try:
            requirements = importlib.metadata.requires(name) or []
        except (importlib.metadata.PackageNotFoundError, OSError, ValueError):
            continue
        seen.add(name)
        for requirement in requirements:
            spec, _, marker = requirement.partition(";")
            match = _REQUIREMENT_NAME.match(spec)
            if match is not None and "extra" not in marker:
                pending.append(match[1])
    return frozenset(seen)


def _distribution(name: str) -> dict[str, Any]:
    try:
        dist = importlib.metadata.distribution(name)
        metadata = dist.metadata  # parsed once: parsing is most of a manifest's cost
        version = metadata["Version"]
        digest = _record_sha256(dist_info_directory(dist, metadata["Name"] or name, version))
        return {"name": name, "version": version, "record_sha256": digest}
    except (importlib.metadata.PackageNotFoundError, OSError, ValueError):
        # Its metadata went away while the process ran (an upgrade under it), or cannot be
        # read: recorded as unknown, and verify-install says what is there now. A start
        # never fails on it.
        return {"name": name, "version": None, "record_sha256": None}


def _record_sha256(directory: Path | None) -> str | None:
    if directory is None:
        return None
    try:
        return _file_sha256(directory / "RECORD")
    except OSError:
        return None


def dist_info_directory(
    dist: importlib.metadata.Distribution, name: str | None = None, version: str | None = None
) -> Path | None:
    """The ``.dist-info`` directory of ``dist`` (where its RECORD is), found by its name
    and version (read from its metadata unless given) among its neighbours; None for a
    distribution installed without one (an ``.egg-info``). Its RECORD is not read to find
    it: a damaged one must not stop a start."""
    if name is None or version is None:
        metadata = dist.metadata
        name, version = metadata["Name"] or "", metadata["Version"]
    site = Path(str(dist.locate_file("")))
    name = normalized(name)
    named = []
    for candidate in sorted(site.glob("*.dist-info")):
        stem, _, found_version = candidate.name.removesuffix(".dist-info").rpartition("-")
        if normalized(stem) == name:
            named.append(candidate)
            if found_version == version:
                return candidate
    return named[0] if len(named) == 1 else None


@functools.cache
def _software() -> dict[str, Any]:
    # Our files do not change under a running process; hashed once.
    roots = package_roots()
    return {
        "sha256": software_sha256(),
        "packages": {name: tree_sha256([root]) for name, root in roots.items()},
    }


@functools.cache
def _python() -> dict[str, Any]:
    executable = os.path.realpath(sys.executable) if sys.executable else None
    digest = None
    if executable is not None:
        try:
            digest = _file_sha256(Path(executable))
        except OSError:
            digest = None
    return {
        "version": platform.python_version(),
        "implementation": sys.implementation.name,
        "executable": executable,
        "sha256": digest,
    }


def system_file(path: Path) -> dict[str, Any]:
    """One system file's entry: its digest, or that it is absent, or why it is unreadable."""
    entry: dict[str, Any] = {"path": str(path), "present": True, "sha256": None}
    try:
        entry["sha256"] = hashlib.sha256(read_regular(path, _MAX_SYSTEM_FILE)).hexdigest()
    except FileNotFoundError:
        entry["present"] = False
    except NotRegularFile as exc:
        entry["error"] = exc.strerror
    except OSError as exc:
        entry["error"] = exc.strerror or str(exc)
    return entry


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
