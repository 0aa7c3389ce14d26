"""``shoe-diag audit export``: where the export goes (a device or a FIFO is written, never
replaced; a directory is refused), and what it refuses before writing anything (a round
the journal does not hold, a record this program cannot have written)."""

from __future__ import annotations

import json
import os
import select
import stat
import threading
import tty
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoe_controller.errors import ExitCode
from tests.cli.conftest import Run
from tests.journal.helpers import deal_round, open_journal, tamper

pytestmark = pytest.mark.usefixtures("hermetic")


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    path = tmp_path / "state" / "journal.sqlite3"
    with open_journal(path) as opened:
        deal_round(opened, "r-1", wagered=[2, 5], seed=1)
    return path


class Collector(threading.Thread):
    """Reads a descriptor until it ends (or ``stop``), keeping everything read."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd = fd
        self.data = b""
        self.changed = threading.Condition()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                chunk = b""
            with self.changed:
                if not chunk:
                    self.stop.set()
                self.data += chunk
                self.changed.notify_all()

    def wait_lines(self, count: int) -> list[str]:
        with self.changed:
            assert self.changed.wait_for(
                lambda: self.data.count(b"\n") >= count or self.stop.is_set(), timeout=30
            )
            return self.data.decode().splitlines()


@pytest.fixture
def terminal() -> Iterator[tuple[Path, Collector]]:
    master, slave = os.openpty()
    tty.setraw(slave)  # bytes as written: no newline translation
    collector = Collector(master)
    collector.start()
    try:
        yield Path(os.ttyname(slave)), collector
    finally:
        collector.stop.set()
        collector.join()
        os.close(slave)
        os.close(master)


def test_a_character_device_is_written_not_replaced(
    run: Run, journal: Path, terminal: tuple[Path, Collector]
) -> None:
    device, collector = terminal
    result = run("audit", "export", "--journal", str(journal), "--output", str(device), "--json")
    assert result.code == ExitCode.OK, result.err
    rows = json.loads(result.out)["rows"]
    lines = collector.wait_lines(rows)
    assert len(lines) == rows and json.loads(lines[0])["seq"] == 1
    assert stat.S_ISCHR(os.stat(device).st_mode)


def test_a_fifo_is_written_not_replaced(run: Run, journal: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "export.fifo"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the reader at the other end
    collector = Collector(fd)
    collector.start()
    try:
        result = run("audit", "export", "--journal", str(journal), "--output", str(fifo))
        assert result.code == ExitCode.OK, result.err
        collector.join(timeout=30)
        assert not collector.is_alive()
    finally:
        collector.stop.set()
        os.close(fd)
    assert json.loads(collector.data.decode().splitlines()[0])["seq"] == 1
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_dash_is_standard_output(run: Run, journal: Path) -> None:
    result = run("audit", "export", "--journal", str(journal), "--output", "-")
    assert result.code == ExitCode.OK
    assert json.loads(result.out.splitlines()[0])["seq"] == 1
    assert not Path("-").exists()


def test_a_directory_is_refused(run: Run, journal: Path, tmp_path: Path) -> None:
    result = run("audit", "export", "--journal", str(journal), "--output", str(tmp_path))
    assert result.code == ExitCode.CONFIG
    assert f"--output {tmp_path} is a directory: name a file in it" in result.error_line
    assert list(tmp_path.glob(".*")) == []


def test_a_regular_file_is_replaced_whole(run: Run, journal: Path, tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"
    target.write_text("an older export\n")
    assert run("audit", "export", "--journal", str(journal), "--output", str(target)).code == 0
    assert json.loads(target.read_text().splitlines()[0])["seq"] == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_through_a_link_the_file_is_replaced_not_the_link(
    run: Run, journal: Path, tmp_path: Path
) -> None:
    real = tmp_path / "exports" / "today.jsonl"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(real)
    assert run("audit", "export", "--journal", str(journal), "--output", str(link)).code == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text().splitlines()[0])["seq"] == 1


def test_an_unknown_round_is_refused(run: Run, journal: Path, tmp_path: Path) -> None:
    target = tmp_path / "round.jsonl"
    result = run(
        "audit", "export", "--journal", str(journal), "--round", "r-9", "--output", str(target)
    )
    assert result.code == ExitCode.CONFIG
    assert result.error_line == (
        f"shoe-diag: error: no round r-9 in journal {journal}: list its rounds with "
        "shoe-diag audit export --rounds"
    )
    assert not target.exists()
    assert run("audit", "export", "--journal", str(journal), "--round", "r-1").code == 0


@pytest.mark.parametrize(
    "payload",
    ["not json", "[1,2]", "[" * 100_000 + "]" * 100_000, '{"a":' * 5000 + "1" + "}" * 5000],
)
@pytest.mark.parametrize("view", [[], ["--rounds"], ["--audit"]])
def test_a_record_this_program_never_wrote_is_damage(
    run: Run, journal: Path, payload: str, view: list[str]
) -> None:
    tamper(journal, f"UPDATE records SET payload = '{payload}' WHERE seq = 7")
    result = run("audit", "export", "--journal", str(journal), *view)
    assert result.code == ExitCode.JOURNAL
    assert f"journal {journal} damaged at record 7: " in result.error_line
