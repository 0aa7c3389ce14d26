"""Fixtures of the hostile-client suite: services started on demand and always stopped,
and enough descriptors in this process to play the attacker."""

from __future__ import annotations

import resource
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.security.service import Service

#: Descriptors this process may hold: the attacker opens thousands of sockets.
ATTACKER_NOFILE = 8192

StartService = Callable[..., Service]


@pytest.fixture(scope="session", autouse=True)
def attacker_descriptors() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = ATTACKER_NOFILE if hard == resource.RLIM_INFINITY else min(ATTACKER_NOFILE, hard)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


@pytest.fixture
def start_service(tmp_path: Path) -> Iterator[StartService]:
    """``start_service(**options)``: a running :class:`Service` (``served=False``: not
    waited for), stopped at the end whatever happened."""
    services: list[Service] = []

    def start(*, served: bool = True, **options: Any) -> Service:
        directory = tmp_path / f"box{len(services)}"
        directory.mkdir(mode=0o700)
        service = Service(directory, **options)
        services.append(service)
        return service.start(served=served)

    yield start
    for service in services:
        if service.process is not None:
            service.stop()
