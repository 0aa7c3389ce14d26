"""Who a client is, for the limits that count per client (connections, sign-in attempts),
and whether it is the table's own console, which keeps room of its own under those limits.

An IPv4 client is its address. An IPv6 client is its /64: one interface is given a whole
/64 and may pick any address in it, so counting single IPv6 addresses would count nothing.
An IPv4 address mapped into IPv6 (``::ffff:192.0.2.7``, a dual-stack listener) is that IPv4
address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Final

from shoe_controller.errors import ConfigError

#: The prefix an IPv6 client is counted by.
IPV6_CLIENT_PREFIX: Final = 64
#: Where the table's console runs unless ``[api] table_console`` says otherwise: the box
#: itself (a kiosk browser beside the shoe).
TABLE_CONSOLE_DEFAULT: Final = ("127.0.0.1", "::1")

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


class TableConsole:
    """The addresses the table's own console connects from (``[api] table_console``). A
    client there keeps room no other client can take: places among the connections and
    the sign-ins waiting, and a lock of its own on a name (docs/api.md, "Threat model").
    Exact addresses, not networks: the room is the table's, not a neighbour's."""

    def __init__(self, addresses: Iterable[str] = TABLE_CONSOLE_DEFAULT) -> None:
        found: set[IpAddress] = set()
        for text in addresses:
            ip = _address(text) if "/" not in text else None
            if ip is None:
                raise ConfigError(
                    f"[api] table_console: {text!r} is not an IP address (e.g. 127.0.0.1)"
                )
            found.add(ip)
        self.addresses = frozenset(found)

    def __contains__(self, address: object) -> bool:
        return isinstance(address, str) and _address(address) in self.addresses
