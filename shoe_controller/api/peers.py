"""Who a client is, for the limits that count per client (connections, sign-in attempts),
and whether it connects from the table's console's addresses, which keep room of their own
under those limits.

An IPv4 client is its address. An IPv6 client is its /64: one interface is given a whole
/64 and may pick any address in it, so counting single IPv6 addresses would count nothing.
An IPv4 address mapped into IPv6 (``::ffff:192.0.2.7``, a dual-stack listener) is that IPv4
address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Final

from shoe_controller.service.config import LOOPBACK, Network

#: The prefix an IPv6 client is counted by.
IPV6_CLIENT_PREFIX: Final = 64
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def client_key(address: str) -> str:
    """The key ``address`` (as the socket layer gives it) is counted under."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address  # not an IP address (a Unix socket's path): itself
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        network = ipaddress.IPv6Network((ip, IPV6_CLIENT_PREFIX), strict=False)
        return str(network)
    return str(ip)


def _address(text: str) -> IpAddress | None:
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


class ConsoleAddresses:
    """Where the table's console connects from (``[api] console_addresses``: addresses or
    networks, loopback by default). The same addresses serve two ends: a WebSocket from one
    of them that declares itself the table's console is the one the shoe's buttons act for
    (E4), and every client there keeps room no other client can take: places among the
    connections and the sign-ins waiting, and a lock of its own on a name (docs/api.md,
    "The table's console and the shoe's buttons", "Threat model")."""

    def __init__(self, networks: Iterable[Network] = LOOPBACK) -> None:
        self.networks = tuple(networks)

    def __contains__(self, address: object) -> bool:
        if not isinstance(address, str):
            return False
        ip = _address(address)
        return ip is not None and any(ip in network for network in self.networks)
