"""A test run killed part-way leaves nothing behind: no server (by process and by port), no
scratch directory. The servers are children of the run with a parent-death signal, and a
janitor removes the directories (tools/children.py)."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tools import children

ROOT = Path(__file__).resolve().parents[1]
#: Longest wait for the held run to start its servers (initdb and a browser, on a busy
#: machine) and for everything to be gone after the kill.
START_TIMEOUT = 180.0
GONE_TIMEOUT = 60.0


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start time, name) of ``pid``, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text.rpartition(")")[2].split()
    return int(fields[1]), int(fields[19]), name


def descendants(root: int) -> dict[int, tuple[int, str]]:
    """Every process below ``root``: {pid: (start time, name)}."""
    parents: dict[int, list[int]] = {}
    info: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents.setdefault(stat[0], []).append(int(entry.name))
            info[int(entry.name)] = (stat[1], stat[2])
    found: dict[int, tuple[int, str]] = {}
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child in info and child not in found:
                found[child] = info[child]
                todo.append(child)
    return found


def naming(paths: list[str]) -> dict[int, tuple[int, str]]:
    """Every process whose command line names one of ``paths`` (or a file under one): a
    server's files, a browser's profile, also when the process left the run's tree (the
    browser's crash reporter starts a session of its own)."""
    found: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if any(path in command for path in paths) and (stat := _stat(int(entry.name))):
            found[int(entry.name)] = (stat[1], stat[2])
    return found


def wait_until_gone(processes: dict[int, tuple[int, str]], timeout: float) -> list[str]:
    """Wait (on each process's pidfd, no polling) until every one of ``processes`` has
    ended, at most ``timeout`` in all; returns those still running."""
    deadline = time.monotonic() + timeout
    left: list[str] = []
    for pid, (started, name) in processes.items():
        stat = _stat(pid)
        if stat is None or stat[1] != started:
            continue
        try:
            handle = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            readable, _, _ = select.select([handle], [], [], max(0, deadline - time.monotonic()))
        finally:
            os.close(handle)
        if not readable:
            left.append(f"{name} (pid {pid})")
    return left


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def started_run(*args: str) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """A test run of ``args`` in a child process; what it printed, as it printed it."""
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    said: list[str] = []
    try:
        yield run, said
    finally:
        if run.poll() is None:
            run.kill()
        run.wait()
        assert run.stdin is not None and run.stdout is not None
        run.stdin.close()
        run.stdout.close()


def read_until(run: subprocess.Popen[str], said: list[str], prefix: str) -> str:
    """The first line ``run`` prints that starts with ``prefix``."""
    assert run.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT
    while (wait := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([run.stdout], [], [], wait)
        line = run.stdout.readline() if ready else ""
        if not line:
            break
        said.append(line)
        if line.startswith(prefix):
            return line.removeprefix(prefix)
    raise AssertionError(f"the run never said {prefix!r}: {''.join(said[-40:])}")


@pytest.mark.needs("mosquitto", "postgresql", "chromium")
def test_a_run_killed_with_sigkill_leaves_no_server_and_no_directory(tmp_path: Path) -> None:
    with started_run(
        f"--basetemp={tmp_path / 'held'}", "--timeout=0", "tests/floor/held_servers.py"
    ) as (run, said):
        held: dict[str, Any] = json.loads(read_until(run, said, "HELD "))
        places = [*held["directories"], str(tmp_path / "held")]
        below = descendants(run.pid) | naming(places)
        servers = held["servers"]
        # Every server is a child of the run (in the foreground: no daemon, no runuser).
        for name, pid in servers.items():
            assert pid in below, (name, pid, below)
            assert _stat(pid) is not None and _stat(pid)[0] == run.pid, name  # type: ignore[index]
        for name, port in held["ports"].items():
            assert listening(port), name
        for directory in held["directories"]:
            assert Path(directory).is_dir()

        run.send_signal(signal.SIGKILL)
        run.wait()

        # Everything the run started ends: the servers, their own children, the browser's
        # driver, the janitor once it has cleaned up.
        assert wait_until_gone(below, GONE_TIMEOUT) == []
        assert naming(places) == {}
    for name, port in held["ports"].items():
        assert not listening(port), f"{name} still listens on {port}"
    for directory in held["directories"]:
        assert not Path(directory).exists(), directory


# --- the helpers themselves ----------------------------------------------------------------


def test_a_child_outlives_the_thread_that_started_it() -> None:
    # The parent-death signal follows the thread that forked: spawn() forks from a thread
    # that lives as long as the process.
    started: list[subprocess.Popen[bytes]] = []
    thread = threading.Thread(target=lambda: started.append(children.spawn(["sleep", "600"])))
    thread.start()
    thread.join()
    [child] = started
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(0.5)  # the thread is gone, the child is still running
    finally:
        assert children.stop(child) == -signal.SIGTERM


HOLDER = """
import sys
from tools import children
child = children.spawn(["sleep", "600"], user=sys.argv[1] or None)
directory = children.scratch_directory("shoe-held-")
(directory / "file").write_text("x")
print(child.pid, directory, flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize(
    "user",
    [
        "",
        pytest.param(
            "nobody",
            marks=pytest.mark.skipif(os.geteuid() != 0, reason="only root runs as another user"),
        ),
    ],
)
def test_a_killed_process_takes_its_children_and_its_directories_along(user: str) -> None:
    # As another user too: the switch of user would clear the signal, had it been set first.
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, user],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        pid_text, directory = holder.stdout.readline().split(maxsplit=1)
        child = int(pid_text)
        stat = _stat(child)
        assert stat is not None and stat[0] == holder.pid
        if user:
            assert Path(f"/proc/{child}").stat().st_uid != 0
        below = descendants(holder.pid)
        assert child in below
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        assert wait_until_gone(below, GONE_TIMEOUT) == []
        assert not Path(directory.strip()).exists()
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait()
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.stdout.close()


def test_run_kills_what_outlasts_its_timeout() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        children.run(["sleep", "600"], timeout=0.2)
    done = children.run([sys.executable, "-c", "print('out'); import sys; sys.exit(3)"], timeout=60)
    assert (done.returncode, done.stdout) == (3, "out\n")
