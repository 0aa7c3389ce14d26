"""A simulated shoe under test, with a test host attached over one of the four paths."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from shoe_controller.errors import TransportError
from shoe_controller.hal.base import Transport
from shoe_controller.simulator.runner import ShoeRunner
from tests.conformance.host import TestHost

REOPEN_WAIT = 5.0


@dataclass
class ShoeUnderTest:
    path: str
    host: TestHost
    runner: ShoeRunner
    reopen: Callable[[], Transport]

    def reconnect(self) -> None:
        """Close the host's transport and open a new one to the same shoe."""
        self.host.transport.close()
        give_up = time.monotonic() + REOPEN_WAIT
        while True:
            try:
                transport = self.reopen()
                break
            except TransportError:
                # A pty front end may still be re-pointing its link at the new terminal.
                if time.monotonic() > give_up:
                    raise
        self.host.transport = transport
        self.host.link_lost = False
        self.host.decoder = type(self.host.decoder)()
