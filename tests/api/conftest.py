"""Fixtures of the API tests: a users file with one user of each role (the cheapest argon2
parameters the users file allows: the cost is not what these tests check), a manual clock,
and a server on a real loopback port."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from argon2 import PasswordHasher

from shoe_controller.api.auth import Authenticator, Sessions
from shoe_controller.api.limits import ClientLimits
from shoe_controller.api.roles import Role
from shoe_controller.api.server import ApiServer, Listen
from shoe_controller.api.service import TableService
from shoe_controller.api.users import FORMAT, HASH_FLOOR, VERSION, UsersFile
from shoe_controller.service.config import LOOPBACK, Network
from tests.api.fakes import FakeTable

#: name -> (role, PIN)
PEOPLE = {
    "dana": (Role.DEALER, "4821"),
    "sam": (Role.SUPERVISOR, "735142"),
    "tec": (Role.TECHNICIAN, "5930"),
    "vic": (Role.VIEWER, "6047"),
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
    """argon2id at the users file's floor (HASH_FLOOR): some 20 ms a hash."""
    return PasswordHasher(
        time_cost=HASH_FLOOR.time_cost,
        memory_cost=HASH_FLOOR.memory_kib,
        parallelism=HASH_FLOOR.parallelism,
    )


def write_users(path: Path, people: Mapping[str, tuple[Role, str]]) -> None:
    """A users file written as by hand, with hashes cheap to check (fast tests) but at the
    floor's parameters; the PINs must pass the PIN policy, which sign-in checks too."""
    hasher = cheap_hasher()
    entries = [
        {"name": name, "role": role.value, "pin": hasher.hash(pin)}
        for name, (role, pin) in people.items()
    ]
    document = {"format": FORMAT, "version": VERSION, "users": entries}
    path.write_text(json.dumps(document), encoding="utf-8")
    os.chmod(path, 0o600)


@pytest.fixture(scope="session")
def people_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PEOPLE's users file, hashed once for the whole run."""
    path = tmp_path_factory.mktemp("people") / "users.json"
    write_users(path, PEOPLE)
    return path


@pytest.fixture
def users_file(tmp_path: Path, people_file: Path) -> UsersFile:
    path = tmp_path / "users.json"
    shutil.copyfile(people_file, path)
    os.chmod(path, 0o600)
    return UsersFile(path, cheap_hasher())


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake() -> FakeTable:
    return FakeTable()


StartServer = Callable[..., ApiServer]


@pytest.fixture
def start_server(users_file: UsersFile, clock: ManualClock) -> Iterator[StartServer]:
    """``start_server(controller)``: an ApiServer on 127.0.0.1, any free port; with
    ``wait_for_link`` it lets clients in at the controller's first news of the shoe; the
    table's console at ``console_addresses`` (loopback by default)."""
    servers: list[ApiServer] = []

    def start(
        controller: TableService,
        *,
        wait_for_link: bool = False,
        limits: ClientLimits | None = None,
        console_addresses: tuple[Network, ...] = LOOPBACK,
        **sessions: float,
    ) -> ApiServer:
        server = ApiServer(
            controller,
            Authenticator(users_file, clock=clock),
            Listen("127.0.0.1", 0),
            sessions=Sessions(clock=clock, **sessions),
            limits=limits,
            console_addresses=console_addresses,
        )
        server.start(wait_for_link=wait_for_link)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def server(start_server: StartServer, fake: FakeTable) -> ApiServer:
    return start_server(fake)
