"""The simulated shoe on a TCP port of 127.0.0.1, reachable as ``socket://127.0.0.1:PORT``
(pyserial's socket URL), like a serial device server.

One host at a time: a new connection takes the link over and the previous one is closed,
so that a host reconnecting after a network hiccup is never locked out by its own stale
connection. A ``disconnect`` fault closes the host's connection; the port stays open for
it to reconnect to the same shoe.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import time

from shoe_controller.simulator.frontend_base import ThreadedFrontEnd
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.runner import Clock
from shoe_controller.simulator.shoe import SimulatedShoe

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
_READ_SIZE = 4096
#: A host that takes no data for this long is disconnected rather than block the shoe.
_SEND_TIMEOUT = 5.0


class TcpFrontEnd(ThreadedFrontEnd):
    def __init__(
        self,
        options: SimOptions | None = None,
        *,
        port: int = 0,
        shoe: SimulatedShoe | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        super().__init__(options, shoe=shoe, clock=clock)
        self._requested_port = port
        self._server: socket.socket | None = None
        self._client: socket.socket | None = None
        self.port = 0
        #: Connections accepted so far.
        self.connections = 0

    @property
    def address(self) -> str:
        return f"socket://{LOOPBACK}:{self.port}"

    @property
    def connected(self) -> bool:
        return self._client is not None

    def _open(self) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind((LOOPBACK, self._requested_port))
            server.listen(1)
            server.setblocking(False)
        except BaseException:
            server.close()
            raise
        self._server = server
        self.port = server.getsockname()[1]
        if self._selector is not None:
            self._selector.register(server, selectors.EVENT_READ)
        log.info("simulated shoe on %s", self.address)

    def _close(self) -> None:
        self._disconnect()
        if self._server is not None:
            if self._selector is not None:
                self._selector.unregister(self._server)
            self._server.close()
            self._server = None

    def _on_ready(self, key: selectors.SelectorKey) -> None:
        if key.fileobj is self._server:
            self._accept()
        elif key.fileobj is self._client:
            self._receive()

    def _accept(self) -> None:
        server = self._server
        if server is None:
            return
        try:
            client, peer = server.accept()
        except BlockingIOError:
            return
        if self._client is not None:
            log.info("a new connection from %s:%s takes the link over", *peer)
            self._disconnect()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.settimeout(_SEND_TIMEOUT)
        self._client = client
        self.connections += 1
        if self._selector is not None:
            self._selector.register(client, selectors.EVENT_READ)

    def _receive(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            data = client.recv(_READ_SIZE)
        except OSError as exc:
            log.info("host connection failed: %s", exc)
            data = b""
        if data:
            self.runner.feed(data)
        else:
            self._disconnect()

    def _send(self, data: bytes) -> None:
        client = self._client
        if client is None:
            return  # nobody listens: the bytes are lost
        try:
            client.sendall(data)
        except OSError as exc:
            log.info("host connection failed: %s", exc)
            self._disconnect()

    def _disconnect(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        if self._selector is not None:
            self._selector.unregister(client)
        with contextlib.suppress(OSError):  # the host may be gone already
            client.shutdown(socket.SHUT_RDWR)
        client.close()

    def _drop_link(self) -> None:
        log.info("simulated shoe link dropped: host connection closed")
        self._disconnect()
