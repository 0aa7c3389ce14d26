"""The card path's descriptors: opened before any client can take them, kept whatever the
clients take, and the service's open-file limit raised and budgeted."""

from __future__ import annotations

import configparser
import subprocess
import sys
import textwrap
from pathlib import Path

from shoe_controller.api.limits import FD_RESERVE, SELECT_LIMIT
from shoe_controller.box import installation
from tests.security.conftest import StartService
from tests.security.service import ROOT, child_env

#: In a process of its own: a journal whose checkpoint was reserved, then every descriptor
#: the process may open taken (as a flood of clients would), then more records and a
#: checkpoint stored.
EXHAUSTED = textwrap.dedent(
    """
    import errno, os, sys
    from shoe_controller.journal.checkpoint import read_checkpoint
    from shoe_controller.journal.writer import Journal

    path = sys.argv[1]
    journal = Journal.open(path)
    journal.defer_checkpoints()
    if sys.argv[2] == "reserved":
        journal.reserve_checkpoint()
    taken = []
    try:
        while True:
            taken.append(os.open(os.devnull, os.O_RDONLY))
    except OSError as exc:
        assert exc.errno == errno.EMFILE
    for n in range(3):
        with journal.transaction():
            journal.append("notice", {"code": "test", "reason": f"record {n}"})
        journal.store_checkpoint_later()
        assert journal.settle_checkpoint(10)
    for fd in taken:
        os.close(fd)
    point = read_checkpoint(journal._checkpoint_path, journal._chain, journal.journal_id)
    print(point.seq, journal.last_seq)
    journal.close()
    """
)


def _with_every_descriptor_taken(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", EXHAUSTED, str(tmp_path / "journal.sqlite3"), mode],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_a_reserved_checkpoint_is_stored_with_every_descriptor_taken(tmp_path: Path) -> None:
    done = _with_every_descriptor_taken(tmp_path, "reserved")
    assert done.returncode == 0, done.stderr
    checkpoint, last = map(int, done.stdout.split())
    assert checkpoint == last
    # Nothing left behind by the descriptors held ahead.
    assert not list(tmp_path.glob(".journal.checkpoint.*"))


def test_without_the_reservation_the_same_journal_fails(tmp_path: Path) -> None:
    # What the service met before its descriptors were reserved: the checkpoint cannot be
    # opened, and the next transaction refuses to go on (the service stopped, exit 9).
    done = _with_every_descriptor_taken(tmp_path, "plain")
    assert done.returncode != 0
    assert "cannot write the journal checkpoint" in done.stderr


def test_the_unit_raises_the_open_file_limit_above_what_the_api_may_take() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read_string(installation.render_unit())
    limit = int(unit["Service"]["LimitNOFILE"])
    # systemd's default soft limit is 1024: the API's budget (below descriptor 1024, with
    # the table's reserve) must never be what meets the limit.
    assert limit > SELECT_LIMIT + FD_RESERVE


def test_an_open_file_limit_too_low_for_any_client_stops_the_start(
    start_service: StartService,
) -> None:
    service = start_service(served=False, nofile=64)
    assert service.wait(30) == 3
    service.wait_for(lambda: bool(service.err), 10)
    assert len(service.err) == 1, service.err
    assert "raise it (LimitNOFILE=" in service.err[0]


def test_a_low_open_file_limit_lowers_the_connections_taken(
    start_service: StartService,
) -> None:
    # 200 descriptors: after the table's and the reserve, room for some 60 connections.
    service = start_service(nofile=200)
    service.wait_for(lambda: any("the API takes at most" in line for line in service.err), 10)
    [warning] = [line for line in service.err if "the API takes at most" in line]
    assert warning.startswith("shoe-controller: warning: ")
    assert "connections, not 256" in warning
