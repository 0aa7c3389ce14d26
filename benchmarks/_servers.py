"""Real servers for the floor's benchmarks and tests: a Mosquitto broker and a throwaway
PostgreSQL cluster.

Both are Debian's packages (``mosquitto``, ``postgresql``), which ``.ci/run`` installs; a
missing one raises :class:`MissingServer` (tools/real_parts.py looks them up). Each runs on
a free loopback port with files in a directory of its own, in the foreground as a child
that dies with the process that started it (tools/children.py), and is stopped (or
killed) by whoever started it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from tools import children, real_parts

READY_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class MissingServer(RuntimeError):
    """The server's package is not installed."""


def _program(name: str) -> str:
    try:
        return real_parts.program(name)
    except real_parts.MissingPart as exc:
        raise MissingServer(f"{exc} (.ci/run does)") from None


def _watch(
    process: subprocess.Popen[str], log: list[str], is_ready: Callable[[str], bool]
) -> threading.Event:
    """Keep what ``process`` says in ``log``; the event is set at the line ``is_ready``
    accepts, or when the process ends."""
    ready = threading.Event()

    def watch() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            log.append(line)
            if is_ready(line):
                ready.set()
        ready.set()

    threading.Thread(target=watch, daemon=True).start()
    return ready


class Mosquitto:
    """A broker of the test's own: ``start()``, ``kill()`` (SIGKILL), ``start()`` again on
    the same port, ``stop()``."""

    def __init__(self, directory: Path, *, persistence: bool = False) -> None:
        self.binary = _program("mosquitto")
        self.port = free_port()
        self.url = f"mqtt://127.0.0.1:{self.port}"
        self.directory = directory
        self.config = directory / "mosquitto.conf"
        lines = [
            f"listener {self.port} 127.0.0.1",
            "allow_anonymous true",
            # The floor's settings (docs/floor.md): nothing queued for an absent collector is
            # dropped, and a collector may hold many records before acknowledging them.
            "max_queued_messages 0",
            "max_inflight_messages 0",
            "log_dest stderr",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_type information",
        ]
        if persistence:
            lines += [
                "persistence true",
                f"persistence_location {directory}/",
                "autosave_interval 1",
            ]
        else:
            lines.append("persistence false")
        if os.geteuid() == 0:
            # Started as root, mosquitto switches to an account of its own, and a change of
            # user clears the parent-death signal that ends it with the run.
            lines.append("user root")
        self.config.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.process: subprocess.Popen[str] | None = None
        #: What the broker logged (errors, warnings, connections), for a failing test.
        self.log: list[str] = []

    def start(self) -> None:
        process = children.spawn(
            [self.binary, "-c", str(self.config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.process = process
        ready = _watch(process, self.log, lambda line: " running" in line)
        if not ready.wait(READY_TIMEOUT) or process.poll() is not None:
            self.kill()
            raise RuntimeError(f"mosquitto did not start: {''.join(self.log)}")

    def kill(self) -> None:
        if self.process is not None:
            children.stop(self.process, signal.SIGKILL, READY_TIMEOUT)
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            children.stop(self.process, signal.SIGTERM, READY_TIMEOUT)
            self.process = None


class Postgres:
    """A throwaway PostgreSQL cluster on a free port, its socket and its files in a scratch
    directory. The server runs in the foreground (``postgres -D``, never ``pg_ctl start``,
    which would leave it running after a killed run), as the ``postgres`` user when this
    process is root (PostgreSQL refuses to run as root)."""

    #: What the server says once it accepts connections.
    READY = "database system is ready to accept connections"

    def __init__(self) -> None:
        initdb = _program("initdb")
        self.bin = Path(initdb).parent
        if not (self.bin / "postgres").exists():
            raise MissingServer(f"{self.bin} has initdb but no postgres: reinstall postgresql")
        self.port = free_port()
        self.user = "postgres" if os.geteuid() == 0 else None
        self.root = children.scratch_directory("shoe-floor-pg-", owner=self.user)
        self.data = self.root / "data"
        self.url = f"postgresql://floor@127.0.0.1:{self.port}/postgres"
        self.process: subprocess.Popen[str] | None = None
        #: What the server logged, for a failing test.
        self.log: list[str] = []

    def start(self) -> None:
        initdb = children.run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "floor",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            user=self.user,
            cwd=self.root,
            timeout=120,
        )
        if initdb.returncode != 0:
            raise AssertionError(f"initdb failed: {initdb.stdout}{initdb.stderr}")
        # SIGQUIT is PostgreSQL's immediate shutdown: the server ends its backends and
        # removes its shared memory, its socket and its lock file.
        process = children.spawn(
            [
                str(self.bin / "postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-k",
                str(self.root),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            death_signal=signal.SIGQUIT,
            user=self.user,
            cwd=self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.process = process
        ready = _watch(process, self.log, lambda line: self.READY in line)
        if not ready.wait(READY_TIMEOUT) or process.poll() is not None:
            self.stop()
            raise RuntimeError(f"postgres did not start: {''.join(self.log)}")

    def new_database(self, name: str) -> str:
        import psycopg  # noqa: PLC0415 (the [floor] extra)

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://floor@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            if self.process is not None:
                children.stop(self.process, signal.SIGQUIT, READY_TIMEOUT)
                self.process = None
        finally:
            children.remove(self.root)
