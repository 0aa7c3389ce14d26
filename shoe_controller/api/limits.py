"""How many clients the API holds, and what happens to the one that would be too many.

The API lives in the same process as the table's card path, and every connection costs a
file descriptor. Left unbounded, a thousand idle sockets used to take the descriptors the
journal's checkpoint needed, and the service stopped in the middle of a round. So:

- at most ``max_connections`` connections in all and ``max_per_client`` from one client
  (its address, an IPv6 client by its /64: :mod:`.peers`); a connection past either limit
  is refused the moment it arrives (accepted and reset), never queued, and never at the
  expense of one already served;
- of ``max_connections``, the table's console's addresses (``[api] console_addresses``:
  :class:`~.peers.ConsoleAddresses`) keep ``max_per_client`` (at most half) for
  themselves: the other clients together hold at most the rest, so that no flood from
  elsewhere leaves the table's console without room;
- ``max_connections`` is lowered at start, if need be, so that the API's descriptors
  (:data:`FDS_PER_CONNECTION` each, at most) leave :data:`FD_RESERVE` descriptors for the
  card path under the process's open-file limit, and never reach :data:`SELECT_LIMIT`:
  pyserial waits on the shoe's port with select(), which cannot watch a descriptor
  numbered 1024 or above, and the port is opened again after every reconnection;
- a connection that has no request under way for ``sign_in_deadline`` seconds (one that
  sends nothing, or only part of its headers, or sits idle between requests) is shut
  down; a WebSocket that is not signed in within that time is closed by the server.

The counting happens in :meth:`Listener.accept`, below asyncio and TLS: a connection is
counted from the moment it is accepted to the moment its socket is closed, handshake
included.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import resource
import socket
import struct
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from shoe_controller.api.peers import ConsoleAddresses, client_key
from shoe_controller.errors import ConfigError

log = logging.getLogger(__name__)

#: Descriptors kept free for the card path: the journal's checkpoint, SQLite's files, the
#: shoe's port (reopened at every reconnection), the floor link, logging.
FD_RESERVE: Final = 64
#: Descriptors one connection may hold: its socket, and a console file being sent.
FDS_PER_CONNECTION: Final = 2
#: select()'s FD_SETSIZE: no descriptor the card path opens may be numbered this or more.
SELECT_LIMIT: Final = 1024
#: Connections refused in one call of accept() at most, so that a flood cannot hold the
#: API's loop: asyncio calls again while more wait.
REFUSALS_PER_CALL: Final = 64


@dataclass(frozen=True)
class ClientLimits:
    """The limits on the API's clients (``[api]`` in the configuration)."""

    max_connections: int = 256
    max_per_client: int = 16
    #: Seconds a connection may go without a request, and a WebSocket without a sign-in.
    sign_in_deadline: float = 5.0


def open_descriptors() -> int:
    """How many descriptors this process holds now."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # listdir's own
    except OSError:
        return 0


def connection_budget(wanted: int) -> int:
    """``wanted`` connections, or fewer if the open-file limit leaves less room (see the
    module's description); ConfigError when it leaves room for none."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    usable = SELECT_LIMIT if soft == resource.RLIM_INFINITY else min(soft, SELECT_LIMIT)
    room = (usable - open_descriptors() - FD_RESERVE) // FDS_PER_CONNECTION
    if room < 1:
        raise ConfigError(
            f"the open-file limit of {soft} descriptors leaves none for the API's clients "
            f"once the table's are kept: raise it (LimitNOFILE= in the service's unit)"
        )
    if room < wanted:
        log.warning(
            "the API takes %d connections, not %d: the open-file limit (%d) leaves no more "
            "once %d descriptors are kept for the table",
            room,
            wanted,
            soft,
            FD_RESERVE,
        )
    return min(wanted, room)


class Admission:
    """Counts the open connections, in all, per client, and those not from the table's
    console (which keeps :attr:`reserved` places of its own). Thread-safe."""

    def __init__(
        self, total: int, per_client: int, console_addresses: ConsoleAddresses | None = None
    ) -> None:
        self.total = total
        self.per_client = per_client
        self.console_addresses = console_addresses or ConsoleAddresses()
        #: Places only the table's console may take.
        self.reserved = min(per_client, total // 2)
        self.refused = 0
        self._open = 0
        self._elsewhere = 0
        self._by_client: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def open(self) -> int:
        return self._open

    def admit(self, client: str, *, at_table: bool = False) -> bool:
        """Take a place for a connection of ``client`` (``at_table``: from the table's
        console), or refuse it."""
        with self._lock:
            held = self._by_client.get(client, 0)
            if (
                self._open >= self.total
                or held >= self.per_client
                or (not at_table and self._elsewhere >= self.total - self.reserved)
            ):
                self.refused += 1
                return False
            self._open += 1
            self._elsewhere += not at_table
            self._by_client[client] = held + 1
            return True

    def release(self, client: str, *, at_table: bool = False) -> None:
        with self._lock:
            self._open -= 1
            self._elsewhere -= not at_table
            held = self._by_client[client] - 1
            if held:
                self._by_client[client] = held
            else:
                del self._by_client[client]


class Connection(socket.socket):
    """An admitted connection's socket: releases its place when it is closed, and knows
    whether a request is under way (see :class:`Listener`)."""

    client: str
    peer: Any
    #: Requests under way on it now; a WebSocket counts as one for its whole life.
    busy: int
    idle_timer: Any

    def admitted(self, admission: Admission, client: str, peer: Any, *, at_table: bool) -> None:
        self.client = client
        self.peer = peer
        self.busy = 0
        self.idle_timer = None
        # Released exactly once: at close, at detach, or when the object is collected.
        self._release = weakref.finalize(self, admission.release, client, at_table=at_table)

    def close(self) -> None:
        super().close()
        self._release()

    def detach(self) -> int:
        fd = super().detach()
        self._release()
        return fd

    def cut(self) -> None:
        """End the connection from below: whoever reads it sees its end and closes it."""
        with contextlib.suppress(OSError):
            self.shutdown(socket.SHUT_RDWR)


class Listener(socket.socket):
    """A listening socket whose accept() returns only the connections ``admission``
    admits, each as a :class:`Connection` handed to ``on_admitted`` first; the others are
    reset at once."""

    admission: Admission
    on_admitted: Callable[[Connection], None]

    def accept(self) -> tuple[socket.socket, Any]:
        for _ in range(REFUSALS_PER_CALL):
            plain, peer = super().accept()  # BlockingIOError when none waits
            client = client_key(peer[0]) if isinstance(peer, tuple) else str(peer)
            at_table = isinstance(peer, tuple) and peer[0] in self.admission.console_addresses
            if not self.admission.admit(client, at_table=at_table):
                _reset(plain)
                continue
            try:
                conn = Connection(plain.family, plain.type, plain.proto, fileno=plain.detach())
            except BaseException:
                self.admission.release(client, at_table=at_table)
                raise
            conn.admitted(self.admission, client, peer, at_table=at_table)
            self.on_admitted(conn)
            return conn, peer
        raise BlockingIOError(errno.EAGAIN, "connections refused; more may be waiting")


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with a reset: the client learns at once that it was refused, and no
    descriptor lingers in a closing state."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def listeners(host: str, port: int, backlog: int) -> list[Listener]:
    """Bound, listening :class:`Listener` sockets for ``host`` (every address it names)
    and ``port`` (0: a free one, the same for all). OSError when one cannot be bound."""
    infos = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE | socket.AI_ADDRCONFIG
    )
    made: list[Listener] = []
    try:
        for family, kind, proto, _, found in dict.fromkeys(infos):
            address = found
            sock = Listener(family, kind, proto)
            made.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(made) > 1:
                address = (found[0], made[0].getsockname()[1], *found[2:])
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
    except BaseException:
        for sock in made:
            sock.close()
        raise
    return made
