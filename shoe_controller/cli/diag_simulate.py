"""``shoe-diag simulate``: a simulated shoe on a pseudo-terminal or a TCP port.

The first line of standard output is the address to open, alone (scripts read it): the
pty's path, or ``socket://127.0.0.1:PORT``; with ``--json``, ``{"address": ...}``. Over a
pty without ``--link``, a ``disconnect`` fault moves the shoe to a new pty, whose path is
printed as a further line. It serves until SIGINT or SIGTERM, then exits 0.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from urllib.parse import parse_qsl, urlencode

from shoe_controller.cli.diag import SIM_OPTIONS
from shoe_controller.cli.diag_common import Context
from shoe_controller.errors import ConfigError, ExitCode
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.serve import serve


def simulate(ctx: Context) -> int:
    options = sim_options(ctx.option("options", ""), _flags(ctx))
    link: str | None = ctx.option("link")
    tcp: int | None = ctx.option("tcp")
    if link is not None and tcp is not None:
        raise ConfigError("--link names a pty's link: use it with --pty, not --tcp")
    out = ctx.out

    def ready(address: str) -> None:
        if ctx.json:
            out.json({"address": address})
        else:
            out.line(address)

    stop = threading.Event()
    with _stop_on_signals(stop):
        serve(
            options,
            "tcp" if tcp is not None else "pty",
            tcp or 0,
            ready,
            stop,
            link_path=link,
        )
    return int(ExitCode.OK)


def sim_options(query: str, flags: list[tuple[str, str]]) -> SimOptions:
    """Options from a sim:// query and from flags, validated by the simulator itself (an
    option given both ways is an error)."""
    query = query.strip().removeprefix("sim://").removeprefix("?")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ConfigError(
            f'--options {query!r} is not NAME=VALUE&NAME=VALUE, e.g. "seed=7&deck=short"'
        ) from None
    return SimOptions.from_address("sim://?" + urlencode(pairs + flags))


def _flags(ctx: Context) -> list[tuple[str, str]]:
    pairs = []
    for name, _, _ in SIM_OPTIONS:
        value = ctx.option(f"sim_{name}")
        if value is not None:
            pairs.append((name, str(value)))
    return pairs


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` (only the main thread can take signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
