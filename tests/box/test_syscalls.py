"""The unit's system call filter, address families and W^X rule admit what the service does.

systemd is not running here, so the unit's sandbox cannot be tried for real. Instead,
service_workload.py does what the service does to the system (journal, serial port,
threads, logging, randomness, libusb) under strace, and every system call, socket family
and memory mapping it makes is checked against what the unit allows.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from shoe_controller.box import installation
from tools.real_parts import program

WORKLOAD = Path(__file__).with_name("service_workload.py")
REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "systemd" / installation.UNIT_NAME

pytestmark = pytest.mark.needs("strace", "systemd")


def _unit_values(key: str) -> list[str]:
    prefix = f"{key}="
    lines = UNIT.read_text(encoding="utf-8").splitlines()
    return [line.removeprefix(prefix) for line in lines if line.startswith(prefix)]


@cache
def _expand(name: str) -> frozenset[str]:
    """A system call, or the calls of a @set, recursively, as systemd knows them."""
    if not name.startswith("@"):
        return frozenset({name})
    listing = subprocess.run(
        [program("systemd-analyze"), "syscall-filter", name],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    calls: set[str] = set()
    for line in listing.splitlines()[1:]:
        item = line.strip()
        if item and not item.startswith("#"):
            calls |= _expand(item)
    return frozenset(calls)


def allowed_calls() -> set[str]:
    # systemd.exec(5): assignments without ~ add to an allow-list, with ~ remove from it.
    allowed: set[str] = set()
    for value in _unit_values("SystemCallFilter"):
        deny = value.startswith("~")
        names = set().union(*(_expand(n) for n in value.removeprefix("~").split()))
        allowed = allowed - names if deny else allowed | names
    return allowed


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("strace") / "trace"
    result = subprocess.run(
        [program("strace"), "-f", "-qq", "-o", str(out), sys.executable, str(WORKLOAD)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if "PTRACE" in result.stderr or "Operation not permitted" in result.stderr:
        pytest.skip(f"strace cannot trace here: {result.stderr.strip().splitlines()[0]}")
    assert result.returncode == 0, result.stderr
    return out.read_text(encoding="utf-8", errors="replace")


def _calls(trace: str) -> set[str]:
    return set(re.findall(r"^\d+\s+([a-z_0-9]+)\(", trace, flags=re.MULTILINE))


def test_filter_is_not_empty() -> None:
    allowed = allowed_calls()
    assert {"read", "write", "openat", "ioctl", "fdatasync"} <= allowed
    assert not {"setuid", "mount", "init_module", "sched_setscheduler"} & allowed


def test_every_system_call_is_allowed(trace: str) -> None:
    refused = _calls(trace) - allowed_calls()
    if os.geteuid() == 0:
        # SQLite hands its WAL files to the database's owner only when run as root; the
        # service never is, and SQLite ignores the result anyway.
        refused.discard("fchown")
    assert refused == set()


def test_only_allowed_socket_families(trace: str) -> None:
    (allowed,) = _unit_values("RestrictAddressFamilies")
    families = set(re.findall(r"\bsocket\((AF_[A-Z0-9]+)", trace))
    assert families <= set(allowed.split())


def test_no_writable_executable_memory(trace: str) -> None:
    # MemoryDenyWriteExecute=yes refuses these; the service must never need them.
    assert not re.search(r"\bmmap\([^)]*PROT_WRITE\|PROT_EXEC", trace)
    assert not re.search(r"\bmmap\([^)]*PROT_EXEC\|PROT_WRITE", trace)
    assert not re.search(r"\b(?:pkey_)?mprotect\([^)]*PROT_EXEC", trace)
