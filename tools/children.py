"""Child processes that die with the process that started them, and scratch directories
that go with it, however it ends: a return, Ctrl-C, or SIGKILL.

The servers the tests and the benchmarks start (Mosquitto, PostgreSQL, chromium, the
commands under test) are started by :func:`spawn`: each is a direct child with a
parent-death signal (``prctl(PR_SET_PDEATHSIG)``), so the kernel signals it when its parent
ends. Three traps, avoided here:

- The signal is sent when the *thread* that forked the child ends, not the process: every
  child is forked by one thread of this module's that lives as long as the process.
- A change of user clears the setting, and a program such as ``runuser`` forks the
  command as a grandchild: a server that must run as another user (PostgreSQL, as root) is
  switched to it by the child itself (``user=``) *before* the signal is set, and then
  executes the server directly.
- The parent may die between the fork and the ``prctl``: the child checks, and ends.

A directory from :func:`scratch_directory` is removed when the process ends, even by
SIGKILL, by a janitor: a small process of its own (in a session of its own, so that
Ctrl-C does not reach it) that waits for the end of its parent, then for the children it
was told of (so that no server writes into a directory being removed), then removes the
directories it still holds.

Standard library only: the janitor runs this file as a script.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import pwd
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

#: prctl(2)'s option: the signal this process receives when its parent ends.
PR_SET_PDEATHSIG = 1
#: How long the janitor waits for the children it was told of before removing anyway.
JANITOR_WAIT = 30.0

_libc = ctypes.CDLL(None, use_errno=True)
_prctl = _libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_prctl.restype = ctypes.c_int


def _die_with(parent: int, signum: int) -> Callable[[], None]:
    """A ``preexec_fn``: this child receives ``signum`` when ``parent``'s forking thread
    ends. It runs after the switch of user (which would clear it) and before the exec."""

    def preexec() -> None:
        if _prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"prctl(PR_SET_PDEATHSIG): {os.strerror(code)}")
        if os.getppid() != parent:
            # The parent ended before the signal was set: nobody would send it now.
            os.kill(os.getpid(), signum)

    return preexec


class _Forker:
    """The one thread that forks every child, so that a child's parent-death signal comes
    when the process ends, not when the thread that asked for it ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: queue.SimpleQueue[tuple[Callable[[], subprocess.Popen[Any]], Future[Any]]]
        self._requests = queue.SimpleQueue()
        self._owner = 0

    def popen(self, start: Callable[[], subprocess.Popen[Any]]) -> subprocess.Popen[Any]:
        with self._lock:
            if self._owner != os.getpid():
                # First use, or a forked copy of this process: it has no such thread.
                self._requests = queue.SimpleQueue()
                threading.Thread(target=self._serve, name="children", daemon=True).start()
                self._owner = os.getpid()
        done: Future[subprocess.Popen[Any]] = Future()
        self._requests.put((start, done))
        return done.result()

    def _serve(self) -> None:
        requests = self._requests
        while True:
            start, done = requests.get()
            try:
                done.set_result(start())
            except BaseException as exc:
                done.set_exception(exc)


_forker = _Forker()


def spawn(
    argv: Sequence[str],
    *,
    death_signal: int = signal.SIGTERM,
    user: str | None = None,
    **popen: Any,
) -> subprocess.Popen[Any]:
    """Start ``argv`` as :class:`subprocess.Popen` does (``popen`` are its keyword
    arguments), as a child that receives ``death_signal`` when this process ends.

    ``user`` runs it as that account (this process must be root), its primary group and no
    other: the switch happens in the child before the signal is set.
    """
    if "preexec_fn" in popen:
        raise TypeError("spawn() sets the preexec_fn itself")
    if user is not None:
        account = pwd.getpwnam(user)
        popen.update(user=account.pw_uid, group=account.pw_gid, extra_groups=[])
    preexec = _die_with(os.getpid(), death_signal)
    # A preexec_fn may deadlock where another thread holds a lock the child needs: this one
    # takes none (two system calls through ctypes, already resolved, and a comparison).
    process = _forker.popen(
        lambda: subprocess.Popen(argv, preexec_fn=preexec, **popen)  # noqa: PLW1509
    )
    _janitor.wait_for(process.pid)
    return process


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    user: str | None = None,
    **popen: Any,
) -> subprocess.CompletedProcess[str]:
    """:func:`subprocess.run` for a child of :func:`spawn`: its output as text, killed
    when ``timeout`` passes (raising :class:`subprocess.TimeoutExpired`) or this process
    ends."""
    process = spawn(
        argv,
        death_signal=signal.SIGKILL,
        user=user,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )
    with process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def stop(
    process: subprocess.Popen[Any], signum: int = signal.SIGTERM, timeout: float = 30.0
) -> int:
    """Send ``signum`` and wait for the end; SIGKILL when ``timeout`` passes first.
    Returns the exit status."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait()


def scratch_directory(prefix: str, *, owner: str | None = None, under: str | None = None) -> Path:
    """A new directory under ``under`` (by default the system's temporary directory),
    removed when this process ends (however it ends) unless :func:`remove` removed it
    first. ``owner`` gives it to that account (a server that runs as another user, when
    this process is root)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=under))
    _janitor.remove_at_end(path)
    if owner is not None:
        account = pwd.getpwnam(owner)
        os.chown(path, account.pw_uid, account.pw_gid)
    return path


def remove(path: Path) -> None:
    """Remove a scratch directory now; the janitor forgets it."""
    shutil.rmtree(path, ignore_errors=True)
    _janitor.forget(path)


class _Janitor:
    """This process's end of the janitor: a pipe of JSON lines to it, started at first
    use (again in a forked copy of this process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipe: IO[str] | None = None
        self._owner = 0
        #: The janitor's process, for the tests.
        self.process: subprocess.Popen[str] | None = None

    def _say(self, message: dict[str, Any]) -> None:
        with self._lock:
            if self._owner != os.getpid():
                self.process = subprocess.Popen(
                    [sys.executable, "-I", str(Path(__file__).resolve())],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    start_new_session=True,
                )
                self._pipe = self.process.stdin
                self._owner = os.getpid()
            assert self._pipe is not None
            self._pipe.write(json.dumps(message) + "\n")
            self._pipe.flush()

    def remove_at_end(self, path: Path) -> None:
        self._say({"remove": str(path)})

    def forget(self, path: Path) -> None:
        self._say({"forget": str(path)})

    def wait_for(self, pid: int) -> None:
        self._say({"wait_for": pid, "started": _start_time(pid)})


_janitor = _Janitor()


def janitor_process() -> subprocess.Popen[str] | None:
    """This process's janitor, once started."""
    return _janitor.process if _janitor._owner == os.getpid() else None


# --- the janitor's side ---------------------------------------------------------------------


def _start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot), to tell it from a later process that
    reuses its number; None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count after the last ")".
    return int(stat.rpartition(")")[2].split()[19])


def _wait_until_gone(pid: int, started: int | None, deadline: float) -> None:
    if started is None or _start_time(pid) != started:
        return
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError as exc:  # a kernel older than 5.3: look again and again
        if exc.errno != errno.ENOSYS:
            raise
        while _start_time(pid) == started and time.monotonic() < deadline:
            time.sleep(0.05)
        return
    try:
        select.select([handle], [], [], max(0.0, deadline - time.monotonic()))
    finally:
        os.close(handle)


def janitor(messages: IO[str]) -> None:
    """Read what the parent says until it ends, then clean up after it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    directories: dict[str, None] = {}
    children: dict[int, int | None] = {}
    for line in messages:  # ends when every copy of the pipe's other end is closed
        message = json.loads(line)
        if "remove" in message:
            directories[message["remove"]] = None
        elif "forget" in message:
            directories.pop(message["forget"], None)
        elif "wait_for" in message:
            children[int(message["wait_for"])] = message["started"]
    if not directories:
        return
    deadline = time.monotonic() + JANITOR_WAIT
    for pid, started in children.items():
        _wait_until_gone(pid, started, deadline)
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    janitor(sys.stdin)
