"""The installation plan, and the guide followed in a throwaway root directory."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from shoe_controller.box import checks, installation
from shoe_controller.box.accounts import GroupEntry
from shoe_controller.box.installation import (
    InstallError,
    MakeDirectory,
    RunCommand,
    Step,
    SystemRunner,
    WriteFile,
)
from shoe_controller.errors import ConfigError, ShoeControllerError
from shoe_controller.hal import usb_ids
from tools.real_parts import program

IS_ROOT = os.geteuid() == 0


class Recorder:
    def __init__(self) -> None:
        self.done: list[Step] = []

    def write_file(self, step: WriteFile) -> None:
        self.done.append(step)

    def make_directory(self, step: MakeDirectory) -> None:
        self.done.append(step)

    def run_command(self, step: RunCommand) -> None:
        self.done.append(step)


@pytest.fixture
def strict_umask() -> Iterator[None]:
    # An installer with umask 077 must still produce world-readable rules and unit.
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)


def _commands(steps: Sequence[Step]) -> list[tuple[str, ...]]:
    return [s.argv for s in steps if isinstance(s, RunCommand)]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_live_plan_in_order() -> None:
    executable = Path(sys.executable)
    steps = installation.plan(installation.ROOT, executable=executable)
    assert [type(s).__name__ for s in steps] == [
        "WriteFile",
        "RunCommand",
        "WriteFile",
        "RunCommand",
        "RunCommand",
        "MakeDirectory",
        "WriteFile",
        "RunCommand",
        "RunCommand",
    ]
    assert _commands(steps) == [
        ("systemd-sysusers", str(installation.SYSUSERS_FILE)),
        ("udevadm", "control", "--reload"),
        (
            "udevadm",
            "trigger",
            "--settle",
            "--action=change",
            "--subsystem-match=tty",
            "--subsystem-match=usb",
        ),
        ("systemctl", "daemon-reload"),
        ("systemctl", "enable", installation.UNIT_NAME),
    ]
    files = {s.path: s for s in steps if isinstance(s, WriteFile)}
    assert files[installation.RULES_FILE].content == installation.render_udev_rules()
    assert files[installation.UNIT_FILE].content == installation.render_unit(executable)
    assert f"ExecStart={executable} run --wait --config" in files[installation.UNIT_FILE].content
    assert {p: s.mode for p, s in files.items()} == {
        installation.SYSUSERS_FILE: 0o644,
        installation.RULES_FILE: 0o644,
        installation.UNIT_FILE: 0o644,
    }


def test_live_plan_can_start_the_service(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    executable = Path(sys.executable)
    steps = installation.plan(installation.ROOT, executable=executable, config=config, start=True)
    assert _commands(steps)[-1] == ("systemctl", "enable", "--now", installation.UNIT_NAME)


def test_start_needs_a_live_box_and_a_configuration(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="it is not this running box"):
        installation.plan(tmp_path, start=True)
    if installation.CONFIG_FILE.exists():
        pytest.skip(f"this machine has {installation.CONFIG_FILE}")
    with pytest.raises(InstallError, match="cannot start the service without"):
        installation.plan(installation.ROOT, executable=Path(sys.executable), start=True)


def test_live_plan_refuses_a_missing_executable(tmp_path: Path) -> None:
    missing = tmp_path / "bin" / "shoe-controller"
    with pytest.raises(
        InstallError, match=r"not an installed program: install shoe-controller there first"
    ):
        installation.plan(installation.ROOT, executable=missing)
    missing.parent.mkdir()
    missing.write_text("#!/bin/sh\n", encoding="utf-8")
    with pytest.raises(InstallError, match=r"not an installed program"):
        installation.plan(installation.ROOT, executable=missing)


def test_relative_executable_is_refused() -> None:
    with pytest.raises(ValueError, match="absolute"):
        installation.render_unit(Path("bin/shoe-controller"))


def test_plan_for_a_root_directory_runs_nothing_live(tmp_path: Path) -> None:
    steps = installation.plan(tmp_path)
    written = [step for step in steps if isinstance(step, WriteFile | MakeDirectory)]
    assert len(written) == 4  # sysusers, rules, the configuration's directory, the unit
    for step in written:
        assert step.path.is_relative_to(tmp_path), step
    assert _commands(steps) == [
        (
            "systemd-sysusers",
            f"--root={tmp_path}",
            str(tmp_path / "etc/sysusers.d/shoe-controller.conf"),
        ),
        ("systemctl", f"--root={tmp_path}", "enable", installation.UNIT_NAME),
    ]


def test_plan_installs_a_given_configuration(tmp_path: Path) -> None:
    source = tmp_path / "table-3.toml"
    source.write_text('[device]\naddress = "auto"\n', encoding="utf-8")
    steps = installation.plan(tmp_path / "root", config=source)
    (config,) = [s for s in steps if isinstance(s, WriteFile) and s.path.name == "config.toml"]
    assert config.content == source.read_text(encoding="utf-8")
    assert (config.mode, config.group) == (0o640, usb_ids.DEVICE_GROUP)
    with pytest.raises(ConfigError, match="cannot read configuration file"):
        installation.plan(tmp_path / "root", config=tmp_path / "missing.toml")


def test_descriptions_for_the_dry_run(tmp_path: Path) -> None:
    lines = [s.describe() for s in installation.plan(tmp_path)]
    assert lines[0] == (
        f"write {tmp_path}/etc/sysusers.d/shoe-controller.conf (mode 0644, owner root:root, "
        f"3 lines): declare group shoe and user shoe-controller"
    )
    assert lines[-1] == (
        f"run systemctl --root={tmp_path} enable shoe-controller.service: start at boot"
    )
    assert all("\n" not in line for line in lines)


def test_apply_follows_the_plan_in_order(tmp_path: Path) -> None:
    steps = installation.plan(tmp_path)
    recorder = Recorder()
    installation.apply(steps, recorder)
    assert recorder.done == steps


def test_sysusers_declares_group_then_user() -> None:
    lines = [
        line
        for line in installation.render_sysusers().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines == [
        f"g {usb_ids.DEVICE_GROUP} -",
        f'u {installation.SERVICE_USER} -:{usb_ids.DEVICE_GROUP} "Electronic dealing shoe '
        f'controller" - -',
    ]


def test_files_land_with_exact_modes_whatever_the_umask(tmp_path: Path, strict_umask: None) -> None:
    runner = SystemRunner(set_owner=False)
    target = tmp_path / "etc" / "udev" / "rules.d" / "70-x.rules"
    runner.write_file(WriteFile(target, "x\n", 0o644))
    assert target.read_text(encoding="utf-8") == "x\n"
    assert _mode(target) == 0o644
    assert _mode(target.parent) == _mode(target.parent.parent) == 0o755
    assert [p.name for p in target.parent.iterdir()] == ["70-x.rules"]  # no temporary left
    runner.write_file(WriteFile(target, "y\n", 0o600))
    assert (target.read_text(encoding="utf-8"), _mode(target)) == ("y\n", 0o600)
    directory = tmp_path / "etc" / "shoe-controller"
    runner.make_directory(MakeDirectory(directory, 0o750))
    runner.make_directory(MakeDirectory(directory, 0o750))
    assert _mode(directory) == 0o750


def test_file_system_failures_are_one_line_install_errors(tmp_path: Path) -> None:
    (tmp_path / "etc").write_text("not a directory", encoding="utf-8")
    runner = SystemRunner(set_owner=False)
    with pytest.raises(InstallError, match=r"cannot write \S+: Not a directory; check") as caught:
        installation.apply([WriteFile(tmp_path / "etc" / "a.rules", "", 0o644)], runner)
    assert "\n" not in str(caught.value)
    with pytest.raises(InstallError, match="exists and is not a directory"):
        installation.apply([MakeDirectory(tmp_path / "etc", 0o750)], runner)


def test_command_failures_are_install_errors() -> None:
    def fails(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 1, "", "warning\nFailed to connect to bus\n")

    runner = SystemRunner(set_owner=False, run=fails)
    with pytest.raises(InstallError) as caught:
        runner.run_command(RunCommand(("systemctl", "daemon-reload"), "reload"))
    assert str(caught.value) == (
        "systemctl daemon-reload failed with exit status 1: Failed to connect to bus"
    )
    assert isinstance(caught.value, ShoeControllerError)


def test_missing_tool_is_an_install_error(tmp_path: Path) -> None:
    runner = SystemRunner(set_owner=False)
    step = RunCommand((str(tmp_path / "udevadm"), "--help"), "make udev read the rules")
    with pytest.raises(InstallError, match="not installed, and is needed to make udev read"):
        runner.run_command(step)
    (tmp_path / "udevadm").write_text("#!/bin/sh\n", encoding="utf-8")
    (tmp_path / "udevadm").chmod(0o644)
    with pytest.raises(InstallError, match=r"cannot run .*udevadm: Permission denied"):
        runner.run_command(step)


def test_group_file_lookup(tmp_path: Path) -> None:
    group = tmp_path / "group"
    group.write_text("root:x:0:\nshoe:x:995:tech\n", encoding="utf-8")
    lookup = installation.group_file_lookup(group)
    assert lookup("shoe") == 995
    with pytest.raises(InstallError, match="group dealer is not in"):
        lookup("dealer")


@pytest.mark.skipif(IS_ROOT, reason="root may give files to any group")
def test_giving_files_away_needs_root(tmp_path: Path) -> None:
    runner = SystemRunner(gid_of=lambda _name: 0)
    with pytest.raises(InstallError, match=r"run the installation as root \(sudo\)"):
        runner.write_file(WriteFile(tmp_path / "f", "", 0o640, "shoe"))


@pytest.mark.needs("systemd")
def test_guide_followed_in_a_throwaway_root(tmp_path: Path, strict_umask: None) -> None:
    """docs/install.md steps 2, 3, 5 and 6, into an empty root, twice (it is idempotent)."""
    root = tmp_path / "box"
    root.mkdir()
    config = tmp_path / "config.toml"
    config.write_text('[device]\naddress = "auto"\n', encoding="utf-8")
    steps = installation.plan(root, config=config)
    for _ in range(2):
        installation.apply(steps, SystemRunner.for_prefix(root, set_owner=IS_ROOT))

    def on_box(path: Path | str) -> Path:
        return root / Path(path).relative_to("/")

    # Step 2: the group and the service account, in the image's own databases.
    groups = {
        f[0]: int(f[2])
        for f in (line.split(":") for line in on_box("/etc/group").read_text().splitlines())
    }
    users = {
        f[0]: f
        for f in (line.split(":") for line in on_box("/etc/passwd").read_text().splitlines())
    }
    shoe_gid = groups[usb_ids.DEVICE_GROUP]
    account = users[installation.SERVICE_USER]
    assert int(account[3]) == shoe_gid
    assert account[6] in {"/usr/sbin/nologin", "/sbin/nologin"}
    assert len(users) == 1, "running it twice must not add a second account"

    # The files, with their modes, and their group when we may set it.
    expected = {
        installation.SYSUSERS_FILE: (0o644, 0),
        installation.RULES_FILE: (0o644, 0),
        installation.CONFIG_DIR: (0o750, shoe_gid),
        installation.CONFIG_FILE: (0o640, shoe_gid),
        installation.UNIT_FILE: (0o644, 0),
    }
    for path, (mode, gid) in expected.items():
        info = on_box(path).lstat()
        assert stat.S_IMODE(info.st_mode) == mode, path
        if IS_ROOT:
            assert (info.st_uid, info.st_gid) == (0, gid), path
    for parent in (Path("/etc/udev"), Path("/etc/udev/rules.d"), Path("/etc/systemd/system")):
        assert _mode(on_box(parent)) == 0o755, parent
    assert on_box(installation.CONFIG_FILE).read_text() == config.read_text()

    # Step 6: the unit is enabled for boot.
    wants = on_box("/etc/systemd/system/multi-user.target.wants") / installation.UNIT_NAME
    assert os.readlink(wants) == str(installation.UNIT_FILE)
    enabled = subprocess.run(
        ["systemctl", f"--root={root}", "is-enabled", installation.UNIT_NAME],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert enabled.stdout.strip() == "enabled"

    # Step 7, as far as a root directory allows: what shoe-diag check says of this box.
    image = checks.Box.for_root(root)
    assert image.group(usb_ids.DEVICE_GROUP) == GroupEntry("shoe", shoe_gid)
    assert image.user_id(installation.SERVICE_USER) == int(account[2])
    box = replace(image, euid=lambda: 1000, groups=lambda: [shoe_gid], processes=list)
    assert checks.group_membership(box).ok is True
    assert checks.udev_rules(box).ok is True
    assert checks.modem_manager(box, None).ok is True
    state = checks.journal_directory(box, installation.STATE_DIR, installation.SERVICE_USER)
    assert state.ok is None  # systemd creates it on first start


@pytest.mark.needs("systemd")
def test_installed_unit_rated_in_the_root(tmp_path: Path) -> None:
    installation.apply(
        installation.plan(tmp_path), SystemRunner.for_prefix(tmp_path, set_owner=IS_ROOT)
    )
    result = subprocess.run(
        [
            program("systemd-analyze"),
            "security",
            "--offline=true",
            f"--root={tmp_path}",
            installation.UNIT_NAME,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Overall exposure level for shoe-controller.service: 0." in result.stdout
