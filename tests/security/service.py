"""The box as an attacker meets it: ``shoe-controller run --bench --api 127.0.0.1:0`` in a
child process of its own, on the in-process simulated shoe, with a users file of four
people, read only through its sockets, its output and its journal."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from shoe_controller.api.roles import Role
from tests.api.conftest import write_users
from tests.api.records import access

ROOT = Path(__file__).resolve().parents[2]
#: name -> (role, PIN): PINs the policy accepts.
PEOPLE = {
    "dana": (Role.DEALER, "4821"),
    "marta": (Role.SUPERVISOR, "735142"),
    "tec": (Role.TECHNICIAN, "5930"),
    "vic": (Role.VIEWER, "6047"),
}
#: The table's console in this suite: the box's own 127.0.0.1 only (the default is all of
#: loopback), so that the attackers' addresses (127.0.1.1 upward: ``attacker.source``) are
#: other machines, never the table's.
CONSOLE_ADDRESSES = 'console_addresses = ["127.0.0.1"]'
URL_LINE = re.compile(r"Dealer console and API: (http://127\.0\.0\.1:(\d+)/)")
START_S = 30.0


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def users_file(directory: Path) -> Path:
    path = directory / "users.json"
    write_users(path, PEOPLE)
    return path


def diag(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``shoe-diag ARGS`` as a technician runs it, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "shoe_controller.cli.diag", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=child_env(),
        cwd="/",
        timeout=60,
        check=False,
    )


class Service:
    """One run of the service. ``api`` is the ``[api]`` section's extra lines (the table's
    console at :data:`CONSOLE_ADDRESSES` unless they say otherwise); ``script``
    the scripted croupier's options (none: nobody deals, the table waits for the console);
    ``nofile`` the open-file limit the child runs under (``ulimit -n``)."""

    def __init__(
        self,
        directory: Path,
        *,
        api: str = "",
        script: Sequence[str] = (),
        nofile: int | None = None,
        users: Path | None = None,
    ) -> None:
        self.directory = directory
        self.journal = directory / "journal.sqlite3"
        self.users = users or users_file(directory)
        self.config = directory / "config.toml"
        if "console_addresses" not in api:
            api = f"{CONSOLE_ADDRESSES}\n{api}"
        self.config.write_text(f"[api]\n{api}\n", encoding="utf-8")
        self.argv = [
            sys.executable,
            "-m",
            "shoe_controller",
            "run",
            "--bench",
            "--device",
            "sim://?pace=0",
            "--journal",
            str(self.journal),
            "--users",
            str(self.users),
            "--config",
            str(self.config),
            "--api",
            "127.0.0.1:0",
            *script,
        ]
        self.nofile = nofile
        self.out: list[str] = []
        self.err: list[str] = []
        self.url = ""
        self.port = 0
        self._changed = threading.Condition()
        self.process: subprocess.Popen[str] | None = None

    # --- life cycle --------------------------------------------------------------------

    def start(self, *, served: bool = True) -> Service:
        """Start the service; with ``served``, wait until it says where the API is."""
        nofile = self.nofile

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.process = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
            cwd=self.directory,
            preexec_fn=limit,  # noqa: PLW1509 (only setrlimit, as ulimit -n does)
        )
        assert self.process.stdout is not None and self.process.stderr is not None
        for stream, lines in ((self.process.stdout, self.out), (self.process.stderr, self.err)):
            threading.Thread(target=self._read, args=(stream, lines), daemon=True).start()
        if not served:
            return self
        self.wait_for(lambda: any(URL_LINE.search(line) for line in self.out), START_S)
        for line in self.out:
            found = URL_LINE.search(line)
            if found:
                self.url, self.port = found.group(1), int(found.group(2))
        return self

    def _read(self, stream: object, lines: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            with self._changed:
                lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> None:
        """Wait until ``condition`` holds (checked at each line of output)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0 or (self.process is not None and self.process.poll() is not None):
                    if condition():
                        return
                    raise AssertionError(
                        "the service did not get there; its output:\n"
                        + "\n".join(self.out[-20:] + self.err[-20:])
                    )
                self._changed.wait(min(left, 0.1))

    def wait(self, timeout: float = 60.0) -> int:
        """Wait for the service to end by itself; its exit status."""
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> int:
        """Stop it as systemd does (SIGTERM); its exit status."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(10)

    # --- what it says --------------------------------------------------------------------

    def rounds_closed(self) -> int:
        return sum(1 for line in self.out if re.match(r"Round \S+ closed:", line))

    def access(self) -> list[tuple[str, str, bool]]:
        """(action, user, accepted) of every access record journaled so far."""
        return access(self.journal)

    def access_details(self) -> list[tuple[str, str, str]]:
        """(action, user, detail) of every access record journaled so far."""
        return [(a, u, d) for a, u, d in _access_details(self.journal)]


def _access_details(journal: Path) -> Iterator[tuple[str, str, str]]:
    import json
    import sqlite3

    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT payload FROM records WHERE kind = 'access' ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    for (payload,) in rows:
        p = json.loads(payload)
        yield str(p["action"]), str(p["user"]), str(p.get("detail", ""))
