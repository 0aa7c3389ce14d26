"""The four ways to reach a simulated shoe, as one parametrised fixture.

Every conformance test runs over each: in-process (``sim://`` through the hal's address
registry), a real pseudo-terminal opened as a serial port, TCP on the loopback
(``socket://``), and pyusb's real code paths over the simulator's USB backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shoe_controller.hal.addresses import open_transport
from shoe_controller.hal.base import Transport
from shoe_controller.hal.usb_transport import UsbTransport
from shoe_controller.simulator import SimOptions
from shoe_controller.simulator.pty_frontend import PtyFrontEnd
from shoe_controller.simulator.tcp_frontend import TcpFrontEnd
from shoe_controller.simulator.transport import SimTransport, switch_off
from tests.conformance.host import TestHost
from tests.conformance.paths import ShoeUnderTest

PATHS = ("in_process", "pty", "tcp", "usb")


Connect = Callable[[str], ShoeUnderTest]


@pytest.fixture(params=PATHS)
def connect(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Connect]:
    """``connect("seed=7&faults=...")`` starts a shoe with those options and returns it
    with a host attached over this test's path."""
    path: str = request.param
    cleanups: list[Callable[[], None]] = []

    def start(query: str) -> ShoeUnderTest:
        address = f"sim://?{query}" if query else "sim://"
        options = SimOptions.from_address(address)
        reopen: Callable[[], Transport]
        if path == "in_process":
            # A shoe lives on in the registry while it waits for its host: forget it.
            cleanups.append(lambda: switch_off(address))

            def reopen() -> Transport:
                transport = open_transport(address)
                transport.open()
                return transport

            transport = reopen()
            assert isinstance(transport, SimTransport)
            runner = transport.runner
        elif path in ("pty", "tcp"):
            front_end = (
                PtyFrontEnd(options, link_path=str(tmp_path / "shoe"))
                if path == "pty"
                else TcpFrontEnd(options)
            )
            front_end.start()
            cleanups.append(front_end.stop)
            runner = front_end.runner

            def reopen() -> Transport:
                transport = open_transport(front_end.address)
                transport.open()
                return transport

            transport = reopen()
        else:
            from shoe_controller.simulator.usb_backend import SimUsbBackend

            backend = SimUsbBackend(options)
            runner = backend.runner

            def reopen() -> Transport:
                transport = UsbTransport(serial_number=options.serial_number, backend=backend)
                transport.open()
                return transport

            transport = reopen()
        host = TestHost(transport)

        def close_host() -> None:
            host.transport.close()  # the transport reconnect() opened last

        cleanups.append(close_host)
        return ShoeUnderTest(path, host, runner, reopen)

    yield start
    for cleanup in reversed(cleanups):
        cleanup()
