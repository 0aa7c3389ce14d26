"""Fixtures of the API tests: a users file with one user of each role (cheap argon2
parameters: the cost is not what these tests check), a manual clock, and a server on a
real loopback port."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher

from shoe_controller.api.auth import Authenticator, Sessions
from shoe_controller.api.roles import Role
from shoe_controller.api.server import ApiServer, Listen
from shoe_controller.api.service import TableService
from shoe_controller.api.users import UsersFile
from tests.api.fakes import FakeTable

#: name -> (role, PIN)
PEOPLE = {
    "dana": (Role.DEALER, "1111"),
    "sam": (Role.SUPERVISOR, "2222"),
    "tec": (Role.TECHNICIAN, "3333"),
    "vic": (Role.VIEWER, "4444"),
}


class ManualClock:
    """Seconds that pass only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def cheap_hasher() -> PasswordHasher:
    return PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


@pytest.fixture
def users_file(tmp_path: Path) -> UsersFile:
    users = UsersFile(tmp_path / "users.json", cheap_hasher())
    for name, (role, pin) in PEOPLE.items():
        users.add(name, role, pin)
    return users


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake() -> FakeTable:
    return FakeTable()


StartServer = Callable[..., ApiServer]


@pytest.fixture
def start_server(users_file: UsersFile, clock: ManualClock) -> Iterator[StartServer]:
    """``start_server(controller)``: an ApiServer on 127.0.0.1, any free port."""
    servers: list[ApiServer] = []

    def start(controller: TableService, **sessions: float) -> ApiServer:
        server = ApiServer(
            controller,
            Authenticator(users_file, clock=clock),
            Listen("127.0.0.1", 0),
            sessions=Sessions(clock=clock, **sessions),
        )
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def server(start_server: StartServer, fake: FakeTable) -> ApiServer:
    return start_server(fake)
