"""The hostile clients of ``hostile``, in a process of their own.

``--connections`` slots, spread over ``--machines`` source addresses of 127.0.0.0/8 (each
stands for another machine on the table's network), each behaving one of four ways, again
and again: a connection that sends nothing, one that sends its headers a line a second and
never ends them, a WebSocket that never signs in, and a WebSocket that sends JSON nested
30,000 deep every second. Each slot connects again a second after the box ended its
connection. Beside them, ``--guessers`` clients (machines of their own) try PINs: the
supervisor's name a third of the time, the dealer's a third (both locked for every address
but the table's console), made-up names otherwise.

It speaks on its standard streams: stdout, first line ``up`` once every slot has knocked
(connected, or been refused); stdin ``stop`` (or its end): one JSON line of what
happened, then exit.

    python benchmarks/_attacker.py --port PORT [--connections N] [--machines N]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import random
import resource
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import aiohttp

#: Under this long, a connection ended without an answer was refused, not let go.
REFUSED_WITHIN_S = 0.25
RETRY_S = 1.0
DEEP = "[" * 30_000 + "]" * 30_000


def _nothing() -> None:
    pass


def source(n: int) -> str:
    return f"127.0.{1 + n // 250}.{1 + n % 250}"


def ws_frame(payload: bytes) -> bytes:
    """One masked text frame, as a client sends it."""
    mask = os.urandom(4)
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x81, 0x80 | size)
    elif size < 65536:
        head = struct.pack("!BBH", 0x81, 0x80 | 126, size)
    else:
        head = struct.pack("!BBQ", 0x81, 0x80 | 127, size)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + masked


def upgrade(port: int) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET /api/v1/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()


class Attack:
    def __init__(self, port: int, connections: int, machines: int, guessers: int) -> None:
        self.port = port
        self.connections = connections
        self.machines = machines
        self.guessers = guessers
        self.counts: Counter[str] = Counter()
        self.sign_ins: Counter[str] = Counter()
        self.stopping = asyncio.Event()
        self._first = 0
        self.up = asyncio.Event()
        if not connections:
            self.up.set()
        self._deep = ws_frame(DEEP.encode())

    def _knocked(self) -> None:
        self._first += 1
        if self._first == self.connections:
            self.up.set()

    async def slot(self, n: int) -> None:
        knocked = self._knocked
        while not self.stopping.is_set():
            try:
                await self._connect_once(n, knocked)
            except Exception:  # a slip of the attacker's own must not end its slot
                self.counts["attacker_errors"] += 1
            knocked = _nothing
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), RETRY_S)

    async def _connect_once(self, n: int, knocked: Callable[[], None]) -> None:
        kind = n % 4
        self.counts["attempts"] += 1
        began = time.monotonic()
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    "127.0.0.1", self.port, local_addr=(source(n % self.machines), 0)
                ),
                10,
            )
        except ConnectionResetError:
            knocked()
            self.counts["refused"] += 1  # reset before the connection was even set up
            return
        except (OSError, TimeoutError):
            knocked()
            self.counts["unreachable"] += 1
            return
        knocked()
        answered = False
        try:
            if kind >= 2:
                writer.write(upgrade(self.port))
                await writer.drain()
                answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                answered = answer.startswith(b"HTTP/1.1 101")
                self.counts["websockets" if answered else "answered_otherwise"] += 1
            elif kind == 1:
                writer.write(b"GET / HTTP/1.1\r\n")
                await writer.drain()
            await self._hold(kind, reader, writer)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()
        lasted = time.monotonic() - began
        if not answered and lasted < REFUSED_WITHIN_S:
            self.counts["refused"] += 1
        elif not self.stopping.is_set():
            self.counts["let_go"] += 1  # taken, then ended by the box

    async def _hold(
        self, kind: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Keep the connection, behaving as ``kind`` says, until the box ends it."""
        while not self.stopping.is_set():
            try:
                data = await asyncio.wait_for(reader.read(65536), 1.0)
            except TimeoutError:
                if kind == 1:
                    writer.write(b"X-Slow: 1\r\n")
                elif kind == 3:
                    writer.write(self._deep)
                await writer.drain()
                continue
            if not data:
                return

    async def guesser(self, n: int) -> None:
        rng = random.Random(n)
        connector = aiohttp.TCPConnector(local_addr=(source(self.machines + n), 0))
        async with aiohttp.ClientSession(connector=connector) as http:
            while not self.stopping.is_set():
                name = rng.choice(("marta", "dana", f"user{rng.randrange(10**6)}"))
                body = {"user": name, "pin": f"{rng.randrange(10**6):06d}"}
                try:
                    async with http.post(
                        f"http://127.0.0.1:{self.port}/api/v1/login", json=body
                    ) as response:
                        await response.read()
                        self.sign_ins[str(response.status)] += 1
                except (aiohttp.ClientError, OSError):
                    self.sign_ins["failed"] += 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), 0.05)

    def figures(self) -> dict[str, Any]:
        return {**self.counts, "sign_ins": dict(self.sign_ins)}


async def attack(args: argparse.Namespace) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    attack = Attack(args.port, args.connections, args.machines, args.guessers)

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        loop.call_soon_threadsafe(attack.stopping.set)

    threading.Thread(target=watch_stdin, daemon=True).start()
    tasks = [asyncio.create_task(attack.slot(n)) for n in range(args.connections)]
    tasks += [asyncio.create_task(attack.guesser(n)) for n in range(args.guessers)]
    up = asyncio.create_task(attack.up.wait())
    await asyncio.wait(
        [up, asyncio.create_task(attack.stopping.wait())], return_when="FIRST_COMPLETED"
    )
    print("up", flush=True)
    await attack.stopping.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return attack.figures()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--machines", type=int, default=100)
    parser.add_argument("--guessers", type=int, default=20)
    args = parser.parse_args(argv)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.connections * 2 + 256), hard))
    print(json.dumps(asyncio.run(attack(args))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
