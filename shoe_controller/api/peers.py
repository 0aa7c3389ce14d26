"""Who a client is, for the limits that count per client (connections, sign-in attempts).

An IPv4 client is its address. An IPv6 client is its /64: one interface is given a whole
/64 and may pick any address in it, so counting single IPv6 addresses would count nothing.
An IPv4 address mapped into IPv6 (``::ffff:192.0.2.7``, a dual-stack listener) is that IPv4
address.
"""

from __future__ import annotations

import ipaddress
from typing import Final

#: The prefix an IPv6 client is counted by.
IPV6_CLIENT_PREFIX: Final = 64


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
