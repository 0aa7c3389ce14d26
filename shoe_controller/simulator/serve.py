"""Serve a simulated shoe to other programs until told to stop (``shoe-diag simulate``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Literal

from shoe_controller.errors import ConfigError, TransportError
from shoe_controller.simulator.frontend_base import ThreadedFrontEnd
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.pty_frontend import PtyFrontEnd
from shoe_controller.simulator.tcp_frontend import TcpFrontEnd

FrontEndName = Literal["pty", "tcp"]

#: How often serve() checks that its front end still runs while it waits for ``stop``.
_CHECK_EVERY = 0.5


def serve(
    options: SimOptions,
    front_end: FrontEndName,
    port: int,
    on_ready: Callable[[str], None],
    stop: threading.Event,
    *,
    link_path: str | None = None,
) -> None:
    """Run a simulated shoe behind ``front_end`` until ``stop`` is set.

    ``on_ready`` gets the address a host opens: the pseudo-terminal's path (or
    ``link_path``, a symbolic link to it that survives ``disconnect`` faults), or
    ``socket://127.0.0.1:PORT``. Without ``link_path``, a ``disconnect`` fault over a pty
    calls ``on_ready`` again with the new path. ``port`` is for "tcp" (0: any free port).
    """
    server: ThreadedFrontEnd
    if front_end == "pty":
        server = PtyFrontEnd(options, link_path=link_path, on_new_path=on_ready)
    elif front_end == "tcp":
        if not 0 <= port <= 65535:
            raise ConfigError(f"TCP port {port} is out of range: use 1..65535, or 0 for any")
        server = TcpFrontEnd(options, port=port)
    else:
        raise ConfigError(f"unknown simulator front end {front_end!r}: use pty or tcp")
    try:
        address = server.start()
    except OSError as exc:
        raise TransportError(f"cannot start the simulated shoe on {front_end}: {exc}") from exc
    try:
        on_ready(address)
        while not stop.wait(_CHECK_EVERY):
            if not server.running:
                raise TransportError(
                    f"the simulated shoe on {address} stopped: {server.error}"
                ) from server.error
    finally:
        server.stop()
