"""2,000 hostile connections and a lockout attack while the table deals at pace 0.

The service runs as on a box (``shoe-controller run --bench --api``, its own process,
``ulimit -n 1024``: systemd's default soft limit), on a simulated shoe in a process of its
own behind a real pseudo-terminal at pace 0 (``_timed_shoe``: every card timed from its
wire to its acknowledgement, in the shoe's process). A dealer signed in at the console
(this process, over the API's WebSocket) answers every prompt at once. Twice: quiet, then
flooded by ``_attacker`` (its own process at niceness 10: on a floor the attacker is
another machine): ``--connections`` sockets from 100 machines that send nothing, send
headers that never end, open WebSockets that never sign in or that send JSON nested
30,000 deep, each coming back a second after the box lets it go; and 20 machines guessing
PINs, the supervisor's and the dealer's names two times in three. Once the flood is up,
the dealer signs in at the table's console (127.0.0.1: ``[api] console_addresses``), whose
name the guessers keep locked for every other address and whose room among the connections
and the sign-ins waiting no other client may take, and deals, so that every card measured
is dealt under the flood.

Quiet and flooded runs alternate (``--repeat`` pairs), so that the machine's other work
weighs on both alike.

- ``value``: card-to-ack p99 (ms) flooded, the median over the runs; ``baseline_value``:
  the same, quiet; ``ratio``: flooded over quiet (aim: at most 2);
- ``rounds_dealt`` of ``rounds`` while flooded (aim: every one), the exit statuses;
- ``dealer_sign_in_ms``: how long the dealer's sign-in took under the flood (the median),
  and ``quiet_dealer_sign_in_ms`` without it;
- ``refused``: connections the box refused the moment they came (past its limits),
  ``let_go``: connections it took and later ended (no request, no sign-in in time);
  ``sign_ins``: the guessers' answers by status;
- ``service_cpu_s``: the service's CPU time in a run, flooded and quiet (the box's own cost
  of the flood), and ``attacker_cpu_s``, the attacker's, on the same cores here.

    python benchmarks/hostile.py [--quick] [--rounds N] [--connections N] [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
from _common import emit, result
from _timed_shoe import ShoeProcess
from argon2 import PasswordHasher

from shoe_controller.simulator import firmware

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: The service's open-file limit, systemd's default soft limit.
NOFILE = 1024
URL = re.compile(r"Dealer console and API: http://127\.0\.0\.1:(\d+)/")
TOTALS = re.compile(r"Rounds: (\d+) \((\d+) dealt\)")
DEALER, DEALER_PIN = "dana", "4821"
#: What the dealer answers to each prompt: (method, params) in turn.
ANSWERS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "confirm_shuffle": [("table.confirm_shuffle", {})],
    "no_more_bets": [("table.set_wagers", {"positions": [2, 4, 5]}), ("table.no_more_bets", {})],
    "start_position": [("table.start_by_dice", {"dice": [6, 6, 6]})],
    "wager_settled": [("table.wager_settled", {})],
    "stub_count": [("table.stub_counted", {"count": 4})],
    "close_round": [("table.close_round", {})],
}


def _config(path: Path) -> None:
    # The table's console at 127.0.0.1 only (the default is all of loopback): the
    # attacker's machines, 127.0.1.1 upward, are other machines.
    path.write_text(
        "[api]\n"
        'console_addresses = ["127.0.0.1"]\n\n'
        "[[approved_shoes]]\n"
        f'model = "{firmware.MODEL}"\n'
        f'firmware_version = "{firmware.FIRMWARE_VERSION}"\n'
        f'firmware_digest = "{firmware.DIGEST.hex()}"\n',
        encoding="utf-8",
    )


def _users(path: Path) -> None:
    # The cheapest hash the users file allows: the guessers' cost is the box's to bear.
    hasher = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)
    users = [
        {"name": "marta", "role": "supervisor", "pin": hasher.hash("735142")},
        {"name": "dana", "role": "dealer", "pin": hasher.hash("4821")},
    ]
    path.write_text(json.dumps({"format": "shoe-controller-users", "version": 1, "users": users}))
    path.chmod(0o600)


class _Lines:
    """A child's output, read on a thread; ``wait_for`` a line that matches."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()

    def wait_for(self, pattern: re.Pattern[str], timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines:
                    found = pattern.search(line)
                    if found:
                        return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"no line matching {pattern.pattern!r}: {self.lines[-5:]}")
                self._cond.wait(left)

    def count(self, pattern: re.Pattern[str]) -> int:
        with self._cond:
            return sum(1 for line in self.lines if pattern.search(line))


class _Dealer:
    """A dealer at the console, on a thread of its own: signs in at once (``sign_in_s``:
    how long it took), deals ``rounds`` rounds once :meth:`deal` is called (every prompt
    answered as it comes)."""

    def __init__(self, port: int, rounds: int) -> None:
        self.url = f"http://127.0.0.1:{port}/api/v1/ws"
        self.rounds = rounds
        self.signed_in = threading.Event()
        self.sign_in_s = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._go: asyncio.Event | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self.signed_in.wait(60) and self.error is None:
            raise RuntimeError("the dealer could not sign in")
        if self.error is not None:
            raise RuntimeError(f"the dealer could not sign in: {self.error}")

    def deal(self) -> None:
        loop, go = self._loop, self._go
        assert loop is not None and go is not None
        loop.call_soon_threadsafe(go.set)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)
        if self.error is not None:
            raise RuntimeError(f"the dealer failed: {self.error!r}")

    def _run(self) -> None:
        try:
            asyncio.run(self._session())
        except BaseException as exc:
            self.error = exc
            self.signed_in.set()

    async def _session(self) -> None:
        self._loop, self._go = asyncio.get_running_loop(), asyncio.Event()
        ids = iter(range(1, 10**9))
        async with aiohttp.ClientSession() as http, http.ws_connect(self.url) as ws:
            notes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}

            async def read() -> None:
                async for message in ws:
                    data = json.loads(message.data)
                    if data.get("id") in waiting:
                        waiting.pop(data["id"]).set_result(data)
                    else:
                        await notes.put(data)
                await notes.put({"closed": True})

            async def call(method: str, params: dict[str, Any]) -> Any:
                ident = next(ids)
                waiting[ident] = asyncio.get_running_loop().create_future()
                request = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
                await ws.send_json(request)
                reply = await asyncio.wait_for(waiting[ident], 60)
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']['message']}")
                return reply["result"]

            reader = asyncio.create_task(read())
            began = time.perf_counter()
            await call("session.login", {"user": DEALER, "pin": DEALER_PIN})
            self.sign_in_s = time.perf_counter() - began
            self.signed_in.set()
            await self._go.wait()
            answered: set[tuple[Any, str]] = set()
            state = await call("table.state", {})
            pending = [(state["round"], state["prompt"]["need"])] if state["prompt"] else []
            closed = 0
            while closed < self.rounds:
                for key in pending:
                    if key not in answered:
                        answered.add(key)
                        for method, params in ANSWERS.get(key[1], []):
                            await call(method, params)
                note = await asyncio.wait_for(notes.get(), 120)
                if note.get("closed"):
                    raise RuntimeError(f"the service closed the console after {closed} rounds")
                [event] = note["params"] if note.get("method") == "notify_event" else [{}]
                pending = []
                if event.get("event") == "prompt":
                    pending = [(event["round"], event["need"])]
                elif event.get("event") == "round_closed":
                    closed += 1
            reader.cancel()


def _children_cpu() -> float:
    """CPU seconds of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _stop(attacker: subprocess.Popen[str] | None) -> dict[str, Any]:
    """Stop the attacker; what it counted."""
    if attacker is None:
        return {}
    assert attacker.stdin is not None and attacker.stdout is not None
    if not attacker.stdin.closed:
        attacker.stdin.write("stop\n")
        attacker.stdin.close()
    line = attacker.stdout.readline()
    attacker.wait(60)
    return json.loads(line) if line else {}


def run(directory: Path, rounds: int, connections: int, flooded: bool) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    config, users = directory / "config.toml", directory / "users.json"
    _config(config)
    _users(users)
    with ShoeProcess(seed=1) as shoe:
        service = subprocess.Popen(
            # ulimit -n in the child, as systemd's default soft limit leaves it.
            ["sh", "-c", f'ulimit -n {NOFILE} && exec "$@"', "sh",
             sys.executable, "-m", "shoe_controller", "run", "--bench",
             "--config", str(config), "--device", shoe.path,
             "--journal", str(directory / "journal.sqlite3"), "--users", str(users),
             "--api", "127.0.0.1:0", "--rounds", str(rounds)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            cwd=directory,
        )  # fmt: skip
        out, err = _Lines(service.stdout), _Lines(service.stderr)
        attacker = None
        try:
            port = int(out.wait_for(URL, 60).group(1))
            if flooded:
                attacker = subprocess.Popen(
                    ["nice", "-n", "10", sys.executable, str(HERE / "_attacker.py"),
                     "--port", str(port), "--connections", str(connections)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                )  # fmt: skip
                assert attacker.stdout is not None
                if attacker.stdout.readline().strip() != "up":
                    raise RuntimeError("the attacker did not get its flood up")
            # Under the flood, when there is one: the table's console keeps its room.
            dealer = _Dealer(port, rounds)
            # The measured window: every card of every round, all dealt under the flood.
            shoe.mark()
            dealer.deal()
            dealer.join(600)
            before = _children_cpu()
            attack = _stop(attacker)
            reaped = _children_cpu()
            status = service.wait(timeout=600)
            service_cpu = _children_cpu() - reaped
            attack["cpu_s"] = reaped - before
            figures = shoe.figures()
        finally:
            if service.poll() is None:
                service.kill()
                service.wait()
            if attacker is not None and attacker.poll() is None:
                attacker.kill()
                attacker.wait()
    totals = out.wait_for(TOTALS, 10)
    tracebacks = sum("Traceback" in line for line in err.lines)
    if tracebacks:
        first = next(n for n, line in enumerate(err.lines) if "Traceback" in line)
        print("\n".join(err.lines[max(0, first - 2) : first + 45]), file=sys.stderr)
    return {
        "status": status,
        "rounds": int(totals.group(1)),
        "dealt": int(totals.group(2)),
        "tracebacks": tracebacks,
        "attack": attack,
        "service_cpu_s": service_cpu,
        "dealer_sign_in_ms": dealer.sign_in_s * 1000,
        **figures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run, for CI")
    parser.add_argument("--rounds", type=int, help="rounds dealt in each run (default 60)")
    parser.add_argument("--connections", type=int, help="hostile sockets (default 2,000)")
    parser.add_argument(
        "--repeat", type=int, help="pairs of runs, quiet then flooded (default 3, quick 1)"
    )
    parser.add_argument("--dir", type=Path, help="where the journals go (default: a temp dir)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (4 if args.quick else 60)
    connections = args.connections or (200 if args.quick else 2000)
    repeat = args.repeat or (1 if args.quick else 3)
    quiet: list[dict[str, Any]] = []
    flooded: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-hostile-", dir=args.dir) as tmp:
        # Quiet and flooded in turn: the machine's other work weighs on both alike.
        for n in range(repeat):
            for runs, flood in ((quiet, False), (flooded, True)):
                directory = Path(tmp) / f"{'flooded' if flood else 'quiet'}-{n}"
                directory.mkdir()
                runs.append(run(directory, rounds, connections, flood))

    def median_of(runs: list[dict[str, Any]], key: str) -> float:
        return statistics.median(float(r[key]) for r in runs)

    def total(key: str) -> int:
        return sum(int(r["attack"].get(key, 0)) for r in flooded)

    sign_ins: Counter[str] = Counter()
    for r in flooded:
        sign_ins.update(r["attack"].get("sign_ins", {}))
    emit(
        result(
            "hostile",
            # Rounded as the line shows them, so that the ratio is theirs.
            round(median_of(flooded, "latency_p99_ms"), 1),
            "ms",
            "card to ack p99, the same runs without the flood",
            max(round(median_of(quiet, "latency_p99_ms"), 1), 0.1),
            rounds=rounds * repeat,
            rounds_dealt=sum(r["dealt"] for r in flooded),
            exit_statuses=sorted({r["status"] for r in flooded + quiet}),
            connections=connections,
            runs=repeat,
            refused=total("refused"),
            let_go=total("let_go"),
            attempts=total("attempts"),
            websockets=total("websockets"),
            sign_ins=dict(sign_ins),
            latency_p50_ms=round(median_of(flooded, "latency_p50_ms"), 2),
            latency_p99_ms=round(median_of(flooded, "latency_p99_ms"), 2),
            quiet_p50_ms=round(median_of(quiet, "latency_p50_ms"), 2),
            quiet_p99_ms=round(median_of(quiet, "latency_p99_ms"), 2),
            p99_ratios=[
                round(float(f["latency_p99_ms"]) / float(q["latency_p99_ms"]), 2)
                for q, f in zip(quiet, flooded, strict=True)
            ],
            cards_measured=sum(int(r["cards_acknowledged"]) for r in flooded),
            dealer_sign_in_ms=round(median_of(flooded, "dealer_sign_in_ms"), 1),
            quiet_dealer_sign_in_ms=round(median_of(quiet, "dealer_sign_in_ms"), 1),
            service_cpu_s=round(median_of(flooded, "service_cpu_s"), 2),
            quiet_service_cpu_s=round(median_of(quiet, "service_cpu_s"), 2),
            attacker_cpu_s=round(statistics.median(r["attack"]["cpu_s"] for r in flooded), 2),
            tracebacks=sum(r["tracebacks"] for r in flooded + quiet),
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
