"""Which host names the box answers to, and which origins may drive it from a browser.

Two attacks from a web page the dealer's browser (or anyone's on the table's network)
happens to open:

- **Cross-site requests.** A page of another site posts to the box, or opens its
  WebSocket. The server refuses any request whose ``Origin`` is not the box's own
  (:meth:`HostNames.origin_allowed`), and takes only ``application/json`` bodies, which no
  page can send to another site without the box's consent (a CORS preflight, which the box
  never grants).
- **DNS rebinding.** A page of ``attacker.example`` has that name resolve to the box: its
  requests are then same-origin in the browser's eyes, but carry ``Host:
  attacker.example``. The server answers only requests whose ``Host`` is one of the names
  it is configured with (:meth:`HostNames.host_allowed`).

The names: ``[api] host_names`` when given, else the listen address itself. A loopback
listen address also answers to the loopback names (``localhost``, ``127.0.0.1``, ``::1``);
a wildcard one (``0.0.0.0``, ``::``) to any IP address written as such. An IP address in
``Host`` cannot be the work of DNS rebinding, which needs a name the attacker controls;
any other name must be listed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def _normal(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class HostNames:
    """The names the API at ``listen_host`` answers to, on ``port``, over ``scheme``."""

    def __init__(
        self,
        listen_host: str,
        *,
        scheme: str,
        port: int,
        configured: Iterable[str] = (),
        loopback: bool = False,
    ) -> None:
        self.scheme = scheme
        self.port = port
        names = {_normal(name) for name in configured}
        listen = _normal(listen_host)
        self.any_ip = not names and listen in WILDCARDS
        if not names and not self.any_ip:
            names.add(listen)
        if loopback:
            names |= LOOPBACK_NAMES
        self.names = frozenset(names)

    def _name_allowed(self, host: str) -> bool:
        return host in self.names or (self.any_ip and _is_ip(host))

    def _port_ok(self, port: int | None, scheme: str) -> bool:
        default = 443 if scheme == "https" else 80
        return (port if port is not None else default) == self.port

    def host_allowed(self, host_header: str | None) -> bool:
        """Whether a request with this ``Host`` header is for this box."""
        if not host_header:
            return False
        try:
            split = urlsplit(f"//{host_header}")
            port = split.port
        except ValueError:
            return False
        host = _normal(split.hostname or "")
        return self._name_allowed(host) and self._port_ok(port, self.scheme)

    def origin_allowed(self, origin: str) -> bool:
        """Whether a browser's ``Origin`` is the box's own page."""
        try:
            split = urlsplit(origin)
            port = split.port
        except ValueError:
            return False
        if split.scheme != self.scheme or split.path not in ("", "/"):
            return False
        host = _normal(split.hostname or "")
        return self._name_allowed(host) and self._port_ok(port, split.scheme)

    def describe(self) -> str:
        """The names, for an error message."""
        shown = sorted(self.names)
        if self.any_ip:
            shown.append("any IP address")
        return ", ".join(shown)
