"""shoe-diag check and install, on root directories built by the tests."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shoe_controller.box import installation
from shoe_controller.errors import ConfigError, ExitCode
from shoe_controller.hal import usb_ids
from shoe_controller.service.config import load_config
from shoe_controller.service.controller import TableController
from tests.cli.conftest import Run
from tests.service.rng_device import Device

pytestmark = pytest.mark.usefixtures("hermetic")

CHECKS = [
    "configuration",
    "udev rules",
    "group",
    "device",
    "device access",
    "ModemManager",
    "journal directory",
    "journal key",
]


@pytest.fixture
def ready_box(tmp_path: Path) -> Iterator[Path]:
    """A root directory where every check passes: the shoe is a pseudo-terminal this test
    owns, in the group the image calls "shoe" (this process's own group)."""
    root = tmp_path / "root"
    master, slave = os.openpty()
    node = os.ttyname(slave)
    os.chown(node, -1, os.getegid())
    os.chmod(node, 0o660)
    etc = root / "etc"
    (etc / "udev" / "rules.d").mkdir(parents=True)
    (etc / "udev" / "rules.d" / installation.RULES_NAME).write_text(
        installation.render_udev_rules(), encoding="utf-8"
    )
    (etc / "group").write_text(f"{usb_ids.DEVICE_GROUP}:x:{os.getegid()}:\n", encoding="utf-8")
    (etc / "passwd").write_text(
        f"{installation.SERVICE_USER}:x:{os.getuid()}:{os.getegid()}::/:/usr/sbin/nologin\n",
        encoding="utf-8",
    )
    config = root / "etc" / "shoe-controller" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'[device]\naddress = "{usb_ids.SYMLINK}"\n', encoding="utf-8")
    state = root / installation.STATE_DIR.relative_to("/")
    state.mkdir(parents=True, mode=0o700)
    state.chmod(0o700)
    (state / "journal.key").write_text("00" * 32 + "\n")
    (state / "journal.key").chmod(0o600)
    (root / "dev").mkdir()
    (root / usb_ids.SYMLINK.removeprefix("/")).symlink_to(node)
    (root / "proc").mkdir()
    try:
        yield root
    finally:
        os.close(slave)
        os.close(master)


def test_check_a_ready_box(run: Run, ready_box: Path) -> None:
    result = run("check", "--root", str(ready_box))
    assert result.code == ExitCode.OK, result.out + result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["CHECK", "RESULT", "DETAIL"]
    assert [line[:19].rstrip() for line in lines[1:-1]] == CHECKS
    assert all(line[19:23] == "ok  " for line in lines[1:-1])
    assert lines[-1] == "box ready: 8 checks passed"
    assert result.err == ""


def test_check_json_is_one_object_per_check(run: Run, ready_box: Path) -> None:
    result = run("check", "--root", str(ready_box), "--json")
    assert result.code == ExitCode.OK
    checks = [json.loads(line) for line in result.out.splitlines()]
    assert [c["check"] for c in checks] == CHECKS
    assert all(set(c) == {"check", "ok", "detail", "fix"} and c["ok"] is True for c in checks)


def test_check_says_what_to_fix(run: Run, ready_box: Path) -> None:
    (ready_box / "etc" / "udev" / "rules.d" / installation.RULES_NAME).unlink()
    (ready_box / usb_ids.SYMLINK.removeprefix("/")).unlink()
    result = run("check", "--root", str(ready_box))
    assert result.code == ExitCode.CHECK_FAILED
    lines = result.out.splitlines()
    rules = lines.index(next(line for line in lines if line.startswith("udev rules")))
    assert "FAIL" in lines[rules]
    assert lines[rules + 1].lstrip().startswith("fix: install the udev rules")
    assert "device access      n/a" in result.out
    assert "2 of 8 checks failed (udev rules, device)" in result.error_line


def test_check_fails_on_a_key_others_can_read(run: Run, ready_box: Path) -> None:
    key = ready_box / installation.STATE_DIR.relative_to("/") / "journal.key"
    key.chmod(0o644)
    result = run("check", "--root", str(ready_box))
    assert result.code == ExitCode.CHECK_FAILED
    row = next(line for line in result.out.splitlines() if line.startswith("journal key"))
    assert "FAIL" in row and "mode 0644: other accounts can read the journal's key" in row
    assert "fix: sudo chmod 600 /var/lib/shoe-controller/journal.key" in result.out
    assert "1 of 8 checks failed (journal key)" in result.error_line


def test_check_reports_a_bad_configuration_as_a_check(run: Run, ready_box: Path) -> None:
    config = ready_box / "etc" / "shoe-controller" / "config.toml"
    config.write_text("[device]\naddress = 7\n", encoding="utf-8")
    result = run("check", "--root", str(ready_box), "--json")
    assert result.code == ExitCode.CHECK_FAILED
    first = json.loads(result.out.splitlines()[0])
    assert (first["check"], first["ok"]) == ("configuration", False)
    assert "device.address must be a non-empty string" in first["detail"]


def test_check_takes_the_device_given(run: Run, ready_box: Path, tmp_path: Path) -> None:
    result = run("check", "--root", str(ready_box), "--device", "/dev/ttyACM7", "--json")
    device = [json.loads(line) for line in result.out.splitlines()][3]
    assert device == {
        "check": "device",
        "ok": False,
        "detail": "no device at /dev/ttyACM7",
        "fix": device["fix"],
    }
    assert result.code == ExitCode.CHECK_FAILED


# -- install ---------------------------------------------------------------------------


def test_install_dry_run_changes_nothing(run: Run, tmp_path: Path) -> None:
    root = tmp_path / "image"
    root.mkdir()
    config = tmp_path / "table.toml"
    config.write_text('[device]\naddress = "auto"\n', encoding="utf-8")
    result = run("install", "--dry-run", "--prefix", str(root), "--config", str(config))
    assert result.code == ExitCode.OK, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith(f" 1. write {root}/etc/sysusers.d/shoe-controller.conf")
    assert any(f"write {root}/etc/shoe-controller/config.toml" in line for line in lines)
    assert lines[-1] == "dry run: 7 steps, nothing changed"
    assert list(root.iterdir()) == []
    steps = [
        json.loads(line)
        for line in run("install", "--dry-run", "--root", str(root), "--json").out.splitlines()
    ]
    assert [s["step"] for s in steps] == list(range(1, 7))
    assert all(set(s) == {"step", "action", "description", "done"} for s in steps)
    assert steps[-1]["action"] == f"run systemctl --root={root} enable shoe-controller.service"
    assert not any(s["done"] for s in steps)


def test_install_cannot_start_an_image(run: Run, tmp_path: Path) -> None:
    result = run("install", "--prefix", str(tmp_path), "--start")
    assert result.code == ExitCode.CHECK_FAILED
    assert "cannot start the service in" in result.error_line


def test_install_on_this_box_needs_the_installed_program(run: Run, tmp_path: Path) -> None:
    result = run("install", "--dry-run", "--executable", str(tmp_path / "shoe-controller"))
    assert result.code == ExitCode.CHECK_FAILED
    assert "is not an installed program" in result.error_line


@pytest.mark.needs("systemd")
@pytest.mark.skipif(os.geteuid() != 0, reason="installing an image sets root ownership")
def test_install_into_an_image_then_check_it(run: Run, tmp_path: Path) -> None:
    root = tmp_path / "image"
    result = run("install", "--prefix", str(root))
    assert result.code == ExitCode.OK, result.err
    assert result.out.splitlines()[-1] == "installed: 6 steps done; now run shoe-diag check"
    assert (root / "etc" / "udev" / "rules.d" / installation.RULES_NAME).read_text() == (
        installation.render_udev_rules()
    )
    checks = [
        json.loads(line) for line in run("check", "--root", str(root), "--json").out.splitlines()
    ]
    verdicts = {c["check"]: c["ok"] for c in checks}
    assert verdicts["udev rules"] is True
    assert verdicts["configuration"] is False  # not installed: written by hand, step 4


# -- the external generator's key ---------------------------------------------------------


def _with_generator(root: Path, device: Device) -> Path:
    """The ready box's configuration naming ``device``, its key file beside it (a path
    relative to the configuration, which the service and the check resolve alike)."""
    config = root / "etc" / "shoe-controller" / "config.toml"
    key = device.key_file(config.parent)
    config.write_text(
        f'[device]\naddress = "{usb_ids.SYMLINK}"\n\n[external_rng]\ndevice = "{device.name}"\n'
        f'algorithm = "{device.algorithm}"\nkey = "{key.name}"\n',
        encoding="utf-8",
    )
    return key


def _refusal_at_start(config: Path, tmp_path: Path) -> str:
    """What the service says when it will not start with ``config``."""
    controller = TableController(
        load_config(config), journal_path=tmp_path / "journal.sqlite3", device="sim://?pace=0"
    )
    with pytest.raises(ConfigError) as caught:
        controller.start()
    return str(caught.value)


@pytest.mark.rule("B1")
@pytest.mark.parametrize("algorithm", ["ed25519", "hmac-sha256"])
def test_check_reads_the_generators_key_as_the_service_does(
    run: Run, ready_box: Path, algorithm: str
) -> None:
    key = _with_generator(ready_box, Device(algorithm=algorithm))
    result = run("check", "--root", str(ready_box), "--json")
    assert result.code == ExitCode.OK, result.out + result.err
    rows = [json.loads(line) for line in result.out.splitlines()]
    assert [row["check"] for row in rows] == [*CHECKS, "external rng key"]
    kind = (
        "the key it shares with RNG-0042"
        if algorithm == "hmac-sha256"
        else ("RNG-0042's public key")
    )
    mode = "0600" if algorithm == "hmac-sha256" else f"{key.stat().st_mode & 0o777:04o}"
    assert rows[-1] == {
        "check": "external rng key",
        "ok": True,
        "detail": f"{key}: {kind} ({algorithm}), mode {mode}",
        "fix": "",
    }


@dataclass(frozen=True)
class Spoiled:
    """A generator's key file gone wrong: how, what the service says of it, and the fix."""

    algorithm: str
    spoil: Callable[[Path], object]
    says: str
    fix: str


SPOILED = {
    "missing": Spoiled(
        "ed25519",
        lambda key: key.unlink(),
        "external_rng.key {key} does not exist: install the generator's key file there",
        "install RNG-0042's public key at {key} (or correct external_rng.key), then check again",
    ),
    "directory": Spoiled(
        "ed25519",
        lambda key: (key.unlink(), key.mkdir()),
        "external_rng.key {key} is not a key file: it is a directory",
        "install RNG-0042's public key at {key} (or correct external_rng.key), then check again",
    ),
    "fifo": Spoiled(
        "hmac-sha256",
        lambda key: (key.unlink(), os.mkfifo(key)),
        "external_rng.key {key} is not a key file: it is a FIFO (named pipe), not a regular file",
        "install the key it shares with RNG-0042 at {key} (or correct external_rng.key), "
        "then check again",
    ),
    "not-ed25519": Spoiled(
        "ed25519",
        lambda key: key.write_text("00" * 31 + "\n"),
        "external_rng.key {key} is not an Ed25519 public key: expected a PEM public key "
        "(-----BEGIN PUBLIC KEY-----) or 64 hex digits",
        "put RNG-0042's public key in {key}, or correct external_rng.algorithm (ed25519), "
        "then check again",
    ),
    "short-hmac": Spoiled(
        "hmac-sha256",
        lambda key: key.write_text("ab" * 16 + "\n"),
        "external_rng.key {key} is not an HMAC key: expected 64 or more hex digits",
        "put the key it shares with RNG-0042 in {key}, or correct external_rng.algorithm "
        "(hmac-sha256), then check again",
    ),
    "hmac-others-read": Spoiled(
        "hmac-sha256",
        lambda key: key.chmod(0o640),
        "external_rng.key {key} has mode 0640: other accounts can read the key shared with "
        "the generator, and with it sign numbers; make it the service user's only: chown "
        "shoe-controller {key} && chmod 600 {key}",
        "sudo chown shoe-controller {key} && sudo chmod 600 {key}",
    ),
}


@pytest.mark.rule("B1")
@pytest.mark.parametrize("case", SPOILED.values(), ids=SPOILED.keys())
def test_check_refuses_the_generators_key_in_the_services_words(
    run: Run, ready_box: Path, tmp_path: Path, case: Spoiled
) -> None:
    key = _with_generator(ready_box, Device(algorithm=case.algorithm))
    case.spoil(key)
    result = run("check", "--root", str(ready_box), "--json")
    assert result.code == ExitCode.CHECK_FAILED
    row = json.loads(result.out.splitlines()[-1])
    assert row == {
        "check": "external rng key",
        "ok": False,
        "detail": case.says.format(key=key),
        "fix": case.fix.format(key=key),
    }
    assert "1 of 9 checks failed (external rng key)" in result.error_line
    # Word for word what the service says when it refuses to start with this configuration.
    assert _refusal_at_start(key.parent / "config.toml", tmp_path) == row["detail"]


@pytest.mark.rule("B1")
def test_check_fails_a_shared_key_the_services_user_cannot_read(run: Run, ready_box: Path) -> None:
    key = _with_generator(ready_box, Device(algorithm="hmac-sha256"))
    # The image's service user is another account than the key's owner.
    passwd = ready_box / "etc" / "passwd"
    passwd.write_text(
        f"{installation.SERVICE_USER}:x:{os.getuid() + 4321}:{os.getegid()}::/:/usr/sbin/nologin\n",
        encoding="utf-8",
    )
    result = run("check", "--root", str(ready_box))
    assert result.code == ExitCode.CHECK_FAILED
    lines = result.out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("external rng key"))
    assert lines[row].split(None, 4)[3:] == [
        "FAIL",
        f"cannot read external_rng.key {key}: Permission denied; make it readable by the "
        "service's user",
    ]
    assert lines[row + 1].strip() == (
        f"fix: sudo chown shoe-controller {key} && sudo chmod 600 {key}"
    )
    # With the key the service's, the check passes (this test's own account is that user).
    passwd.write_text(
        f"{installation.SERVICE_USER}:x:{os.getuid()}:{os.getegid()}::/:/usr/sbin/nologin\n",
        encoding="utf-8",
    )
    assert run("check", "--root", str(ready_box)).code == ExitCode.OK


def test_no_generator_configured_no_row(run: Run, ready_box: Path) -> None:
    rows = [
        json.loads(line)
        for line in run("check", "--root", str(ready_box), "--json").out.splitlines()
    ]
    assert "external rng key" not in [row["check"] for row in rows]


def test_check_finds_a_journal_the_configuration_names_relatively(
    run: Run, ready_box: Path
) -> None:
    config = ready_box / "etc" / "shoe-controller" / "config.toml"
    state = config.parent / "state"
    state.mkdir(mode=0o700)
    (state / "my.key").write_text("00" * 32 + "\n")
    (state / "my.key").chmod(0o644)
    config.write_text(
        f'[device]\naddress = "{usb_ids.SYMLINK}"\n\n'
        '[journal]\npath = "state/journal.sqlite3"\nkey = "state/my.key"\n',
        encoding="utf-8",
    )
    rows = {
        row["check"]: row
        for row in map(
            json.loads, run("check", "--root", str(ready_box), "--json").out.splitlines()
        )
    }
    assert rows["journal directory"]["ok"] is True, rows["journal directory"]
    assert rows["journal key"]["detail"] == (
        f"{state / 'my.key'} has mode 0644: other accounts can read the journal's key"
    )
