"""Assemble and start the API server from the configuration (``shoe-controller run``)."""

from __future__ import annotations

from pathlib import Path

from shoe_controller.api.auth import Authenticator, Sessions
from shoe_controller.api.limits import ClientLimits
from shoe_controller.api.pinchecks import PinChecker
from shoe_controller.api.server import ApiServer, Listen, tls_context
from shoe_controller.api.service import TableService
from shoe_controller.api.users import UsersFile, default_users_path
from shoe_controller.errors import ConfigError
from shoe_controller.service.config import ApiConfig


def serve(
    controller: TableService,
    config: ApiConfig,
    listen: str,
    users: Path | None,
    journal_path: Path,
) -> ApiServer:
    """Start serving the API and the console at ``listen`` for ``controller``: the address
    is bound now, clients are let in once the controller has had news of the shoe.

    A non-loopback address without TLS files, a bad TLS file, a damaged or untrustworthy
    users file, an open-file limit too low or an address in use raise ConfigError (exit
    code 3) before anything is served."""
    where = Listen.parse(listen, "--api" if config.listen != listen else "[api] listen")
    tls = None
    if config.tls_cert is not None or config.tls_key is not None:
        if config.tls_cert is None or config.tls_key is None:
            raise ConfigError("[api] needs both tls_cert and tls_key, or neither")
        tls = tls_context(config.tls_cert, config.tls_key)
    users_file = UsersFile(users or default_users_path(journal_path))
    limits = ClientLimits(
        max_connections=config.max_connections,
        max_per_client=config.max_connections_per_address,
        sign_in_deadline=config.sign_in_deadline,
    )
    authenticator = Authenticator(users_file)  # a refused users file stops here
    server = ApiServer(
        controller,
        authenticator,
        where,
        sessions=Sessions(ttl=config.token_ttl, idle=config.idle_timeout),
        tls=tls,
        limits=limits,
        host_names=config.host_names,
        console_addresses=config.console_addresses,
    )
    authenticator.check = PinChecker()
    try:
        server.start(wait_for_link=True)
    except BaseException:
        authenticator.close()
        raise
    return server
