"""What ran: the payload of the ``service_started`` record the service journals at every
start, so that an auditor sees exactly which software, configuration and rules dealt, on a
clock in what state.

- ``software_sha256``: SHA-256 over the installed files of every import package our
  distribution ships (``firmware_protocol``, ``floor_protocol``, ``shoe_controller``,
  ``shoe_floor``: :func:`software_sha256` says exactly how, so that a laboratory can
  recompute it from a release);
- ``manifest_sha256``: the digest of the software manifest journaled beside it
  (:mod:`.manifest`: our packages, the installed distributions, the interpreter, the
  system files);
- ``config_sha256``: SHA-256 of the configuration file's bytes as they were parsed (null
  without a file);
- ``profile`` {name, version}, ``rules`` and ``evidence``: the rules profile, the
  effective table rules after the configuration's adjustments, and its rules of the record
  (the stub sealed or committed, the external generator's signature optional or required);
- ``external_rng`` {device, algorithm}: the external generator that signs its numbers
  (``[external_rng]``), or null where none is configured;
- ``bench``: a test bench run (``run --bench``, the demo, the in-process simulator), not a
  table;
- ``clock`` {synchronized, source}: whether the kernel's clock is synchronised (NTP), read
  with ``adjtimex(2)``; ``synchronized`` is null where that cannot be read.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import hashlib
import importlib.metadata
import importlib.util
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from shoe_controller import __version__
from shoe_controller.service.config import Config

#: Our distribution, whose metadata names the import packages it ships.
DISTRIBUTION: Final = "shoe-controller"
#: The import packages it ships, for a run from a source tree with no metadata installed.
PACKAGES: Final = ("firmware_protocol", "floor_protocol", "shoe_controller", "shoe_floor")

# adjtimex(2): the clock state it returns, and the status bit NTP daemons clear once in sync.
TIME_ERROR: Final = 5
STA_UNSYNC: Final = 0x0040


def software_sha256(packages: Iterable[str] | None = None) -> str:
    """SHA-256 (hex) of the installed files of the import packages ``packages`` (default:
    every package our distribution ships), as :func:`tree_sha256` computes it over each
    package's directory."""
    names = shipped_packages() if packages is None else tuple(sorted(packages))
    return _installed_sha256(names)


@functools.cache
def _installed_sha256(packages: tuple[str, ...]) -> str:
    # The installed files do not change while the process runs: computed once.
    return tree_sha256(package_roots(packages).values())


@functools.cache
def shipped_packages() -> tuple[str, ...]:
    """The top-level import packages our distribution ships, sorted: its ``top_level.txt``,
    else the packages among the files it lists, else :data:`PACKAGES`."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return PACKAGES
    listed = (dist.read_text("top_level.txt") or "").split()
    if not listed:
        listed = [
            str(entry.parts[0])
            for entry in dist.files or ()
            if len(entry.parts) == 2 and entry.name == "__init__.py"
        ]
    return tuple(sorted(set(listed))) or PACKAGES


def package_roots(packages: Iterable[str] | None = None) -> dict[str, Path]:
    """Each import package's directory, found without importing it (by name, sorted)."""
    roots = {}
    for package in sorted(shipped_packages() if packages is None else packages):
        spec = importlib.util.find_spec(package)
        locations = None if spec is None else spec.submodule_search_locations
        if not locations:
            raise RuntimeError(f"package {package} has no location on disk")
        roots[package] = Path(next(iter(locations))).resolve()
    return roots


def tree_sha256(roots: Iterable[Path]) -> str:
    """SHA-256 (hex) over every file under the directories ``roots``.

    Each file except those in ``__pycache__`` directories is named by its path relative to
    the directory holding its root (``shoe_controller/cli/diag.py``, with ``/``); the
    digest is over the lines ``name NUL sha256-hex-of-content LF``, one per file, sorted by
    name. A laboratory recomputes it from a release's installed files with any SHA-256 tool.
    """
    entries: list[tuple[str, Path]] = []
    for root in roots:
        for directory, subdirectories, files in os.walk(root):
            subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
            for name in files:
                path = Path(directory) / name
                entries.append((path.relative_to(root.parent).as_posix(), path))
    outer = hashlib.sha256()
    for name, path in sorted(entries):
        content = hashlib.sha256(path.read_bytes()).hexdigest()
        outer.update(f"{name}\0{content}\n".encode())
    return outer.hexdigest()


@dataclass(frozen=True, slots=True)
class ClockState:
    """Whether the system clock is synchronised: True, False, or None when unknown."""

    synchronized: bool | None
    #: How it was read ("adjtimex"), or why it could not be.
    source: str

    def plain(self) -> dict[str, Any]:
        return {"synchronized": self.synchronized, "source": self.source}


class _Timex(ctypes.Structure):
    """``struct timex`` of <sys/timex.h> (Linux), with room to spare at the end."""

    _fields_ = [
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("esterror", ctypes.c_long),
        ("status", ctypes.c_int),
        ("constant", ctypes.c_long),
        ("precision", ctypes.c_long),
        ("tolerance", ctypes.c_long),
        ("time_sec", ctypes.c_long),
        ("time_usec", ctypes.c_long),
        ("tick", ctypes.c_long),
        ("ppsfreq", ctypes.c_long),
        ("jitter", ctypes.c_long),
        ("shift", ctypes.c_int),
        ("stabil", ctypes.c_long),
        ("jitcnt", ctypes.c_long),
        ("calcnt", ctypes.c_long),
        ("errcnt", ctypes.c_long),
        ("stbcnt", ctypes.c_long),
        ("tai", ctypes.c_int),
        ("reserved", ctypes.c_int * 11),
        ("spare", ctypes.c_byte * 64),
    ]


def read_kernel_clock() -> tuple[int, int]:
    """The kernel's clock state and status word, from ``adjtimex`` with no change asked
    (modes 0: any user may read it). Raises OSError when it cannot be read."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        adjtimex = libc.adjtimex
    except (OSError, AttributeError) as exc:
        raise OSError(f"no adjtimex in the C library ({exc})") from None
    timex = _Timex()
    state = adjtimex(ctypes.byref(timex))
    if state < 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    return int(state), int(timex.status)


def clock_state(read: Callable[[], tuple[int, int]] = read_kernel_clock) -> ClockState:
    """Whether the kernel considers its clock synchronised (an NTP daemon keeps it so)."""
    try:
        state, status = read()
    except OSError as exc:
        return ClockState(None, f"unavailable: {exc}")
    return ClockState(state != TIME_ERROR and not status & STA_UNSYNC, "adjtimex")


def service_started(
    config: Config,
    *,
    bench: bool,
    clock: ClockState | None = None,
    software: str | None = None,
    pid: int | None = None,
    manifest_sha256: str | None = None,
) -> dict[str, Any]:
    """The payload of the ``service_started`` record for a start with ``config``, whose
    software manifest has the digest ``manifest_sha256``."""
    return {
        "version": __version__,
        "pid": os.getpid() if pid is None else pid,
        "software_sha256": software_sha256() if software is None else software,
        "manifest_sha256": manifest_sha256,
        "config_sha256": config.source_sha256,
        "profile": {"name": config.profile.name, "version": config.profile.version},
        "rules": config.table.plain(),
        "evidence": config.evidence.plain(),
        "external_rng": (
            None
            if config.external_rng is None
            else {"device": config.external_rng.device, "algorithm": config.external_rng.algorithm}
        ),
        "bench": bench,
        "clock": (clock_state() if clock is None else clock).plain(),
    }
