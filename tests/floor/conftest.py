"""Fixtures of the floor's tests: a real broker per test, a real PostgreSQL per session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoe_controller.simulator.transport import live_addresses, switch_off
from tests.floor.servers import Mosquitto, Postgres


@pytest.fixture(autouse=True)
def no_shoe_left_on() -> Iterator[None]:
    """Every simulated shoe a test switched on is off after it."""
    yield
    for address in live_addresses():
        switch_off(address)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Mosquitto]:
    """A Mosquitto broker of this test's own, running."""
    directory = tmp_path / "broker"
    directory.mkdir()
    server = Mosquitto(directory)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One throwaway PostgreSQL cluster for the session's tests."""
    server = Postgres()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(postgres: Postgres) -> str:
    """A new, empty database of that cluster."""
    return postgres.new_database(f"floor_{uuid.uuid4().hex[:12]}")
