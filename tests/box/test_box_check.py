"""shoe-diag check's findings, on boxes built in a temporary directory."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from shoe_controller.box import checks, installation
from shoe_controller.box.accounts import GroupEntry
from shoe_controller.box.checks import Box, CheckResult
from shoe_controller.errors import ConfigError
from shoe_controller.hal import usb_ids

SHOE_GID = 4242


def _groups(*entries: GroupEntry) -> Callable[[str], GroupEntry | None]:
    table = {e.name: e for e in entries}
    return table.get


@pytest.fixture
def box(tmp_path: Path) -> Box:
    (tmp_path / "dev").mkdir()
    return Box(
        root=tmp_path,
        group=_groups(GroupEntry(usb_ids.DEVICE_GROUP, SHOE_GID, ("croupier-tech",))),
        user_id={"shoe-controller": os.getuid()}.get,
        user_name=lambda: "tech",
        euid=lambda: 1000,
        groups=lambda: [1000],
        processes=lambda: ["systemd", "sshd"],
        udev_properties=lambda _node: None,
    )


@pytest.fixture
def pty_slave() -> Iterator[Path]:
    """A real character device this test owns and may chmod: a pseudo-terminal."""
    master, slave = os.openpty()
    try:
        yield Path(os.ttyname(slave))
    finally:
        os.close(slave)
        os.close(master)


def _install_rules(
    box: Box, where: Path = installation.RULES_FILE, text: str | None = None
) -> None:
    path = box.path(where)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(installation.render_udev_rules() if text is None else text, encoding="utf-8")


# The device node


def test_no_device(box: Box) -> None:
    node, result = checks.device_node(box, "auto")
    assert node is None
    assert result.ok is False
    assert result.detail == f"no device at {usb_ids.SYMLINK}"
    assert "plug the shoe in" in result.fix


def test_dangling_symlink(box: Box) -> None:
    box.path(usb_ids.SYMLINK).symlink_to("ttyACM0")
    node, result = checks.device_node(box, "auto")
    assert (node, result.ok) == (None, False)
    assert "points to ttyACM0, which does not exist" in result.detail


def test_symlink_resolved_to_the_character_device(box: Box, pty_slave: Path) -> None:
    box.path(usb_ids.SYMLINK).symlink_to(pty_slave)
    node, result = checks.device_node(box, "auto")
    assert node == pty_slave
    assert result.ok is True
    assert result.detail == f"{usb_ids.SYMLINK} -> {pty_slave}"


def test_a_plain_file_is_not_a_device(box: Box) -> None:
    box.path("/dev/ttyACM0").write_text("", encoding="utf-8")
    node, result = checks.device_node(box, "/dev/ttyACM0")
    assert (node, result.ok) == (None, False)
    assert "not a character device" in result.detail


@pytest.mark.parametrize("address", ["sim://", "socket://localhost:7000", "loop://"])
def test_addresses_without_a_device_node_do_not_apply(box: Box, address: str) -> None:
    node, result = checks.device_node(box, address)
    assert (node, result.ok) == (None, None)
    assert checks.device_access(box, node).ok is None


def _usb_device(box: Box, serial: str = "ES7-0042", vid: str = "1209") -> Path:
    sysfs = box.path("/sys/bus/usb/devices/1-1")
    sysfs.mkdir(parents=True)
    for name, value in {
        "idVendor": vid,
        "idProduct": "0001",
        "serial": serial,
        "busnum": "1",
        "devnum": "4",
    }.items():
        (sysfs / name).write_text(value + "\n", encoding="utf-8")
    return box.path("/dev/bus/usb/001/004")


def test_usb_address_found_through_sysfs(box: Box) -> None:
    node = _usb_device(box)
    node.parent.mkdir(parents=True)
    node.write_text("", encoding="utf-8")
    for address in ("usb://", "usb://1209:0001", "usb://1209:0001?serial=ES7-0042"):
        found, result = checks.device_node(box, address)
        assert (found, result.ok) == (node, True), address


def test_usb_address_not_found(box: Box) -> None:
    node = _usb_device(box, vid="abcd")
    node.parent.mkdir(parents=True)
    node.write_text("", encoding="utf-8")
    assert checks.device_node(box, "usb://")[1].ok is False
    assert checks.device_node(box, "usb://abcd:0001?serial=other")[1].ok is False
    for address in ("usb://zz", "usb://1209", "usb://1209:"):
        result = checks.device_node(box, address)[1]
        assert result.ok is False
        assert result.detail == (
            f"{address!r}: expected usb://VID:PID with hexadecimal IDs, e.g. usb://1209:0001"
        )
    # What the service refuses, the check refuses in the same words.
    for address, says in (
        ("usb://?bogus=1", "unknown option 'bogus'; usb:// accepts only ?serial=SERIAL_NUMBER"),
        ("usb://?serial=", "serial= needs the shoe's serial number"),
    ):
        result = checks.device_node(box, address)[1]
        assert (result.ok, result.detail) == (False, f"{address!r}: {says}")
        assert result.fix == "correct the device address"


def test_usb_device_without_node_points_at_the_rules(box: Box) -> None:
    _usb_device(box)
    result = checks.device_node(box, "usb://")[1]
    assert result.ok is False
    assert "udev" in result.fix


# Its access rights


def _as_shoe_group(box: Box, node: Path) -> Box:
    return replace(box, group=_groups(GroupEntry(usb_ids.DEVICE_GROUP, node.stat().st_gid)))


def test_group_shoe_mode_0660_passes(box: Box, pty_slave: Path) -> None:
    pty_slave.chmod(0o660)
    result = checks.device_access(_as_shoe_group(box, pty_slave), pty_slave)
    assert result.ok is True
    assert result.detail == f"{pty_slave}: group {usb_ids.DEVICE_GROUP}, mode 0660"


def test_world_access_fails(box: Box, pty_slave: Path) -> None:
    pty_slave.chmod(0o666)
    result = checks.device_access(_as_shoe_group(box, pty_slave), pty_slave)
    assert result.ok is False
    assert "mode 0666" in result.detail


def test_wrong_group_fails(box: Box, pty_slave: Path) -> None:
    pty_slave.chmod(0o660)
    result = checks.device_access(box, pty_slave)  # group shoe is SHOE_GID, not the pty's
    assert result.ok is False
    assert f"not {usb_ids.DEVICE_GROUP}" in result.detail


def test_group_without_read_write_fails(box: Box, pty_slave: Path) -> None:
    pty_slave.chmod(0o620)
    result = checks.device_access(_as_shoe_group(box, pty_slave), pty_slave)
    assert result.ok is False
    assert "cannot read and write" in result.detail


# This session's group


def test_group_missing(box: Box) -> None:
    result = checks.group_membership(replace(box, group=_groups()))
    assert (result.ok, result.detail) == (False, f"group {usb_ids.DEVICE_GROUP} does not exist")
    assert "systemd-sysusers" in result.fix


def test_root_may_open_anything(box: Box) -> None:
    assert checks.group_membership(replace(box, euid=lambda: 0)).ok is True


def test_member_in_this_session(box: Box) -> None:
    result = checks.group_membership(replace(box, groups=lambda: [1000, SHOE_GID]))
    assert result.ok is True


def test_member_added_after_login(box: Box) -> None:
    result = checks.group_membership(replace(box, user_name=lambda: "croupier-tech"))
    assert result.ok is False
    assert "after this session began" in result.detail
    assert "newgrp" in result.fix


def test_not_a_member(box: Box) -> None:
    result = checks.group_membership(box)
    assert result.ok is False
    assert result.fix == f"sudo usermod -aG {usb_ids.DEVICE_GROUP} tech, then log out and in again"


# The udev rules


def test_rules_missing(box: Box) -> None:
    result = checks.udev_rules(box)
    assert result.ok is False
    assert installation.RULES_NAME in result.detail


@pytest.mark.parametrize("where", [installation.RULES_FILE, installation.VENDOR_RULES_FILE])
def test_rules_installed(box: Box, where: Path) -> None:
    _install_rules(box, where)
    assert checks.udev_rules(box) == CheckResult("udev rules", True, str(where))


def test_stale_rules_in_etc_override_good_ones(box: Box) -> None:
    _install_rules(box, installation.VENDOR_RULES_FILE)
    _install_rules(box, installation.RULES_FILE, text='SUBSYSTEM=="tty", MODE="0666"\n')
    result = checks.udev_rules(box)
    assert result.ok is False
    assert "differs" in result.detail


# ModemManager


def test_modem_manager_not_running_read_from_proc(box: Box) -> None:
    proc = box.path("/proc/1")
    proc.mkdir(parents=True)
    (proc / "comm").write_text("systemd\n", encoding="utf-8")
    real_proc = replace(box, processes=None)
    assert checks.modem_manager(real_proc, None).detail == "not running"
    (box.path("/proc/812")).mkdir()
    (box.path("/proc/812") / "comm").write_text("ModemManager\n", encoding="utf-8")
    assert checks.modem_manager(real_proc, None).ok is False


def _properties(values: Mapping[str, str]) -> Callable[[Path], Mapping[str, str]]:
    return lambda _node: values


def test_modem_manager_told_by_udev(box: Box) -> None:
    running = replace(box, processes=lambda: ["ModemManager"])
    node = Path("/dev/ttyACM0")
    told = replace(running, udev_properties=_properties({"ID_MM_DEVICE_IGNORE": "1"}))
    assert checks.modem_manager(told, node).ok is True
    untold = replace(running, udev_properties=_properties({"ID_VENDOR_ID": "1209"}))
    result = checks.modem_manager(untold, node)
    assert result.ok is False
    assert "ID_MM_DEVICE_IGNORE" in result.detail


def test_modem_manager_judged_by_the_rules_without_udevadm(box: Box) -> None:
    running = replace(box, processes=lambda: ["ModemManager"])
    assert checks.modem_manager(running, None).ok is False
    _install_rules(box)
    result = checks.modem_manager(running, None)
    assert result.ok is True
    assert str(installation.RULES_FILE) in result.detail


# The journal's directory


def test_service_state_directory_not_created_yet(box: Box) -> None:
    result = checks.journal_directory(box, installation.STATE_DIR, "shoe-controller")
    assert result.ok is None


def test_missing_journal_directory(box: Box) -> None:
    result = checks.journal_directory(box, Path("/srv/journal"))
    assert (result.ok, result.fix) == (False, "mkdir -p /srv/journal")


def test_journal_path_is_a_file(box: Box) -> None:
    box.path("/srv").mkdir()
    box.path("/srv/journal").write_text("", encoding="utf-8")
    result = checks.journal_directory(box, Path("/srv/journal"))
    assert (result.ok, result.detail, result.fix) == (
        False,
        "/srv/journal is not a directory",
        "check the path",
    )
    # The check only looks: the file a person made is still there, as it was.
    assert box.path("/srv/journal").read_text(encoding="utf-8") == ""


def test_journal_directory_writable_by_this_session(box: Box) -> None:
    box.path("/srv").mkdir()
    assert checks.journal_directory(box, Path("/srv")).ok is True


@pytest.mark.rule("E1")
@pytest.mark.parametrize(("mode", "ok"), [(0o700, True), (0o750, False), (0o500, False)])
def test_service_journal_directory_private_and_writable(box: Box, mode: int, ok: bool) -> None:
    state = box.path(installation.STATE_DIR)
    state.mkdir(parents=True)
    state.chmod(mode)
    result = checks.journal_directory(box, installation.STATE_DIR, "shoe-controller")
    assert result.ok is ok, result.detail
    assert stat.S_IMODE(state.stat().st_mode) == mode


def test_service_journal_directory_of_another_user(box: Box) -> None:
    box.path(installation.STATE_DIR).mkdir(parents=True, mode=0o700)
    other = replace(box, user_id=lambda _name: os.getuid() + 1)
    result = checks.journal_directory(other, installation.STATE_DIR, "shoe-controller")
    assert result.ok is False
    assert result.fix.startswith("sudo chown -R shoe-controller ")
    nobody = replace(box, user_id=lambda _name: None)
    assert (
        "does not exist"
        in checks.journal_directory(nobody, installation.STATE_DIR, "shoe-controller").detail
    )


# The configuration, and everything together


def _reject(path: Path) -> object:
    raise ConfigError(f"configuration file {path}: [table] positions must be 7")


def test_configuration() -> None:
    path = Path("/etc/shoe-controller/config.toml")
    assert checks.configuration(path, lambda p: p).ok is True
    result = checks.configuration(path, _reject)
    assert result == CheckResult(
        "configuration",
        False,
        f"configuration file {path}: [table] positions must be 7",
        f"correct {path} and run the check again",
    )


def test_ready_box_passes_everything(box: Box, pty_slave: Path) -> None:
    _install_rules(box)
    pty_slave.chmod(0o660)
    ready = replace(
        _as_shoe_group(box, pty_slave),
        groups=lambda: [pty_slave.stat().st_gid],
        processes=lambda: ["ModemManager"],
        udev_properties=_properties({"ID_MM_DEVICE_IGNORE": "1"}),
    )
    box.path(usb_ids.SYMLINK).symlink_to(pty_slave)
    state = box.path(installation.STATE_DIR)
    state.mkdir(parents=True, mode=0o700)
    results = checks.run_checks(
        ready,
        address="auto",
        config=Path("/etc/shoe-controller/config.toml"),
        load_config=lambda p: p,
        journal=installation.STATE_DIR,
        journal_owner="shoe-controller",
    )
    assert [r.name for r in results] == [
        "configuration",
        "udev rules",
        "group",
        "device",
        "device access",
        "ModemManager",
        "journal directory",
    ]
    assert [r for r in results if r.ok is not True] == []
    assert checks.all_passed(results)


def test_fresh_box_fails_with_a_fix_for_each_failure(box: Box) -> None:
    results = checks.run_checks(
        box,
        address="auto",
        config=Path("/etc/shoe-controller/config.toml"),
        load_config=_reject,
        journal=installation.STATE_DIR,
        journal_owner="shoe-controller",
    )
    assert not checks.all_passed(results)
    failed = [r for r in results if r.ok is False]
    assert {r.name for r in failed} == {"configuration", "udev rules", "group", "device"}
    assert all(r.fix for r in failed)
    assert all("\n" not in r.detail + r.fix for r in results)


def test_real_box_process_list() -> None:
    # The default reads this machine's /proc; this test process is in it.
    assert Box().process_names()


def test_box_for_an_image_reads_its_own_users(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "group").write_text("root:x:0:\nshoe:x:990:tech,ana\n", encoding="utf-8")
    (etc / "passwd").write_text(
        "shoe-controller:x:991:990::/:/usr/sbin/nologin\n", encoding="utf-8"
    )
    image = Box.for_root(tmp_path)
    assert image.group("shoe") == GroupEntry("shoe", 990, ("tech", "ana"))
    assert image.group("wheel") is None
    assert (image.user_id("shoe-controller"), image.user_id("nobody")) == (991, None)
    assert Box.for_root(tmp_path / "empty").group("shoe") is None
    assert Box.for_root(Path("/")) == Box()


# The external generator's key (what the service reads at start is checked through its own
# reading, in tests/cli/test_diag_box.py; here, what the check decides around it)


def _never_read(path: Path) -> object:
    raise AssertionError(f"{path} was read")


def test_a_key_this_session_cannot_read_is_left_to_root(box: Box) -> None:
    key = box.path("/etc/shoe-controller/rng.key")
    key.parent.mkdir(parents=True)
    key.write_text("ab" * 32 + "\n")
    external = checks.ExternalKey(
        "RNG-1", "hmac-sha256", Path("/etc/shoe-controller/rng.key"), _never_read
    )
    result = checks.external_rng_key(replace(box, readable=lambda _path: False), external)
    assert result == CheckResult(
        "external rng key",
        None,
        f"{key} cannot be read by tech: run the check as root",
    )


def test_the_key_is_read_in_the_image_and_judged_by_its_reader(box: Box) -> None:
    key = box.path("/etc/shoe-controller/rng.pub")
    key.parent.mkdir(parents=True)
    key.write_text("public\n")
    read: list[Path] = []
    external = checks.ExternalKey(
        "RNG-1", "ed25519", Path("/etc/shoe-controller/rng.pub"), read.append
    )
    # Readable by all: any reader.
    key.chmod(0o644)
    assert checks.external_rng_key(box, external, "nobody-known").ok is True
    # The service's group (shoe) may read it, others not.
    key.chmod(0o640)
    os.chown(key, -1, SHOE_GID)
    assert checks.external_rng_key(box, external, "nobody-known").ok is True
    os.chown(key, -1, 0)
    assert checks.external_rng_key(box, external, "nobody-known").ok is False
    # Its owner, when the owner is the service's user.
    key.chmod(0o600)
    assert checks.external_rng_key(box, external, "shoe-controller").ok is True
    assert read == [key] * 4


def test_a_configurations_paths_are_found_in_the_image(tmp_path: Path) -> None:
    image = Box(root=tmp_path)
    assert image.located(Path("/var/lib/x")) == tmp_path / "var/lib/x"
    # Resolved against a configuration read from the image: there already.
    assert image.located(tmp_path / "etc/x/key") == tmp_path / "etc/x/key"
    assert Box().located(Path("/var/lib/x")) == Path("/var/lib/x")
