"""Real servers for the floor's benchmarks and tests: a Mosquitto broker and a throwaway
PostgreSQL cluster.

Both are Debian's packages (``mosquitto``, ``postgresql``), which ``.ci/run`` installs; a
missing one raises :class:`MissingServer`. Each runs on a free loopback port with files in
a directory of its own, and is stopped (or killed) by whoever started it.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

READY_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class MissingServer(RuntimeError):
    """The server's package is not installed."""


def _program(name: str, *candidates: str) -> str:
    found = shutil.which(name) or next((c for c in candidates if os.access(c, os.X_OK)), None)
    if found is None:
        raise MissingServer(f"{name} is not installed: apt-get install {name} (.ci/run does)")
    return found


class Mosquitto:
    """A broker of the test's own: ``start()``, ``kill()`` (SIGKILL), ``start()`` again on
    the same port, ``stop()``."""

    def __init__(self, directory: Path, *, persistence: bool = False) -> None:
        self.binary = _program("mosquitto", "/usr/sbin/mosquitto")
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
        self.config.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.process: subprocess.Popen[str] | None = None
        #: What the broker logged (errors, warnings, connections), for a failing test.
        self.log: list[str] = []

    def start(self) -> None:
        process = subprocess.Popen(
            [self.binary, "-c", str(self.config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.process = process
        ready = threading.Event()
        log = self.log

        def watch() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                log.append(line)
                if " running" in line:
                    ready.set()
            ready.set()

        threading.Thread(target=watch, daemon=True).start()
        if not ready.wait(READY_TIMEOUT) or process.poll() is not None:
            self.kill()
            raise RuntimeError(f"mosquitto did not start: {''.join(log)}")

    def kill(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(READY_TIMEOUT)
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(READY_TIMEOUT)
            self.process = None


class Postgres:
    """A throwaway PostgreSQL cluster: ``initdb`` and ``pg_ctl`` run as the ``postgres``
    user when this process is root (PostgreSQL refuses to run as root), in a directory that
    user owns, on a free port, its socket in that directory."""

    def __init__(self) -> None:
        versions = sorted(
            glob.glob("/usr/lib/postgresql/*/bin/initdb"),
            key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
        )
        if not versions:
            raise MissingServer(
                "PostgreSQL is not installed: apt-get install postgresql (.ci/run does)"
            )
        self.bin = Path(versions[-1]).parent
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="shoe-floor-pg-"))
        self.data = self.root / "data"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.url = f"postgresql://floor@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            [*self.as_user, *command], capture_output=True, text=True, check=False, timeout=120
        )
        if done.returncode != 0:
            raise AssertionError(f"{command[0]} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "floor",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        )
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off"
        )
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "log"),
            "-w",
            "start",
        )

    def new_database(self, name: str) -> str:
        import psycopg  # noqa: PLC0415 (the [floor] extra)

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://floor@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
