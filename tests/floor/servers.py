"""The real servers of the floor's tests (benchmarks/_servers.py), children of the test run
that die with it. A test that uses one is marked ``@pytest.mark.needs("mosquitto")`` or
``("postgresql")``: it is skipped where the part is missing (tests/conftest.py); one that is
not marked fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks._servers import MissingServer, free_port
from benchmarks._servers import Mosquitto as _Mosquitto
from benchmarks._servers import Postgres as _Postgres

__all__ = ["Mosquitto", "Postgres", "free_port"]


class Mosquitto(_Mosquitto):
    def __init__(self, directory: Path, *, persistence: bool = False) -> None:
        try:
            super().__init__(directory, persistence=persistence)
        except MissingServer as exc:
            pytest.fail(str(exc))


class Postgres(_Postgres):
    def __init__(self) -> None:
        try:
            super().__init__()
        except MissingServer as exc:
            pytest.fail(str(exc))
