"""Is this box ready for the shoe? The checks behind ``shoe-diag check``.

Each check returns :class:`CheckResult` values and prints nothing. Everything they look at
comes through :class:`Box` (a root directory, the group database, the process list, udev's
view of a device), so the tests build a box in a temporary directory.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from shoe_controller.box import installation
from shoe_controller.box.accounts import (
    GroupEntry,
    group_in_file,
    system_group,
    system_user_id,
    user_id_in_file,
)
from shoe_controller.errors import ConfigError
from shoe_controller.hal import usb_ids
from shoe_controller.hal.addresses import parse_address

MODEM_MANAGER = "ModemManager"
_INSTALL_RULES = (
    "install the udev rules (shoe-diag install, then udevadm control --reload and "
    "udevadm trigger) and replug the shoe"
)


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    #: True passed, False failed, None not applicable here.
    ok: bool | None
    detail: str
    #: What to do about a failure, as a command where there is one.
    fix: str = ""
    #: Passed, but worth saying: what the service journals as a notice at every start.
    notice: bool = False


def _current_user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def _group_file_lookup(path: Path) -> Callable[[str], GroupEntry | None]:
    """An image's groups; a file that cannot be read holds none (the checks say so)."""

    def lookup(name: str) -> GroupEntry | None:
        try:
            return group_in_file(path, name)
        except OSError:
            return None

    return lookup


def _passwd_file_lookup(path: Path) -> Callable[[str], int | None]:
    def lookup(name: str) -> int | None:
        try:
            return user_id_in_file(path, name)
        except OSError:
            return None

    return lookup


def _readable(path: Path) -> bool:
    return os.access(path, os.R_OK)


def _udev_properties(device: Path) -> Mapping[str, str] | None:
    udevadm = shutil.which("udevadm")
    if udevadm is None:
        return None
    try:
        result = subprocess.run(
            [udevadm, "info", "--query=property", f"--name={device}"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    pairs = (line.partition("=") for line in result.stdout.splitlines())
    return {key: value for key, sep, value in pairs if sep}


@dataclass(frozen=True)
class Box:
    """This machine as the checks see it; every part can be replaced in tests."""

    root: Path = Path("/")
    group: Callable[[str], GroupEntry | None] = system_group
    user_id: Callable[[str], int | None] = system_user_id
    user_name: Callable[[], str] = _current_user
    euid: Callable[[], int] = os.geteuid
    groups: Callable[[], Iterable[int]] = field(default=lambda: [os.getegid(), *os.getgroups()])
    #: The names (comm) of the running processes; None reads them from <root>/proc.
    processes: Callable[[], Iterable[str]] | None = None
    #: udev's properties of a device node, or None when udev cannot be asked.
    udev_properties: Callable[[Path], Mapping[str, str] | None] = _udev_properties
    #: Whether this session may read a file.
    readable: Callable[[Path], bool] = _readable

    @classmethod
    def for_root(cls, root: Path) -> Box:
        """This box, or a root directory that is not running (an image), with its own users."""
        if root.resolve() == Path("/"):
            return cls()
        return cls(
            root=root,
            group=_group_file_lookup(root / "etc" / "group"),
            user_id=_passwd_file_lookup(root / "etc" / "passwd"),
        )

    def path(self, absolute: Path | str) -> Path:
        return self.root / Path(absolute).relative_to("/")

    def located(self, path: Path) -> Path:
        """A path the configuration names, on this box: an absolute one is in its root,
        unless it is there already (a relative path in a configuration read from the root
        is resolved against the configuration's own directory)."""
        if not path.is_absolute() or path.is_relative_to(self.root):
            return path
        return self.path(path)

    def process_names(self) -> set[str]:
        if self.processes is not None:
            return set(self.processes())
        names = set()
        for comm in self.path("/proc").glob("[0-9]*/comm"):
            try:
                names.add(comm.read_text(encoding="utf-8", errors="replace").strip())
            except OSError:
                continue  # the process ended while we looked
        return names


def _find_usb_node(box: Box, address: str) -> tuple[Path | None, str]:
    """The /dev/bus/usb node of the USB device a ``usb://`` address names, from sysfs; a
    malformed address raises ConfigError, as it does for the service."""
    parsed = parse_address(address)
    vid, pid, serial = parsed.vid, parsed.pid, parsed.serial_number
    assert vid is not None and pid is not None  # a usb:// address always has them
    wanted = f"USB {vid:04x}:{pid:04x}" + (f" with serial {serial}" if serial else "")
    for device in sorted(box.path("/sys/bus/usb/devices").glob("*")):
        try:
            if int((device / "idVendor").read_text(), 16) != vid:
                continue
            if int((device / "idProduct").read_text(), 16) != pid:
                continue
            if serial is not None and (device / "serial").read_text().strip() != serial:
                continue
            bus = int((device / "busnum").read_text())
            number = int((device / "devnum").read_text())
        except (OSError, ValueError):
            continue
        return box.path(f"/dev/bus/usb/{bus:03d}/{number:03d}"), wanted
    return None, wanted


def device_node(box: Box, address: str) -> tuple[Path | None, CheckResult]:
    """Where the shoe's device node is for ``address``, and whether it is there."""
    name = "device"
    if address == "auto" or address.startswith("/"):
        path = box.path(usb_ids.SYMLINK if address == "auto" else address)
        shown = usb_ids.SYMLINK if address == "auto" else address
        if not path.exists():
            if path.is_symlink():
                detail = f"{shown} points to {os.readlink(path)}, which does not exist"
            else:
                detail = f"no device at {shown}"
            return None, CheckResult(
                name,
                False,
                detail,
                "plug the shoe in; if it is plugged in, see the udev rules check and replug it",
            )
        resolved = path.resolve()
        if not stat.S_ISCHR(resolved.stat().st_mode):
            return None, CheckResult(
                name, False, f"{shown} is not a character device", "check the address"
            )
        target = f" -> {resolved}" if resolved != path else ""
        return resolved, CheckResult(name, True, f"{shown}{target}")
    if address.startswith("usb://"):
        try:
            node, wanted = _find_usb_node(box, address)
        except ConfigError as exc:
            return None, CheckResult(name, False, str(exc), "correct the device address")
        if node is None:
            return None, CheckResult(
                name, False, f"no {wanted} on this box's USB buses", "plug the shoe in"
            )
        if not node.exists():
            return None, CheckResult(
                name, False, f"{wanted} is connected but {node} is missing", _INSTALL_RULES
            )
        return node, CheckResult(name, True, f"{wanted} at {node}")
    return None, CheckResult(name, None, f"{address!r} is not a device on this box")


def device_access(box: Box, node: Path | None) -> CheckResult:
    """The node is group ``shoe``, mode 0660: the service and technicians, nobody else."""
    name = "device access"
    if node is None:
        return CheckResult(name, None, "no device node to look at")
    group = box.group(usb_ids.DEVICE_GROUP)
    info = node.stat()
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o007:
        return CheckResult(
            name,
            False,
            f"{node} has mode {mode:04o}: every account on this box can drive the shoe",
            _INSTALL_RULES,
        )
    if group is None or info.st_gid != group.gid:
        return CheckResult(
            name,
            False,
            f"{node} belongs to group id {info.st_gid}, not {usb_ids.DEVICE_GROUP}",
            _INSTALL_RULES,
        )
    if mode & 0o060 != 0o060:
        return CheckResult(
            name,
            False,
            f"{node} has mode {mode:04o}: group {usb_ids.DEVICE_GROUP} cannot read and write",
            _INSTALL_RULES,
        )
    return CheckResult(name, True, f"{node}: group {usb_ids.DEVICE_GROUP}, mode {mode:04o}")


def group_membership(box: Box) -> CheckResult:
    """Whether this session may open the shoe: a member of its group, or root."""
    name = "group"
    wanted = usb_ids.DEVICE_GROUP
    group = box.group(wanted)
    if group is None:
        return CheckResult(
            name,
            False,
            f"group {wanted} does not exist",
            f"sudo systemd-sysusers {installation.SYSUSERS_FILE} (shoe-diag install writes it)",
        )
    user = box.user_name()
    if box.euid() == 0:
        return CheckResult(name, True, f"running as root ({user})")
    if group.gid in set(box.groups()):
        return CheckResult(name, True, f"{user} is in group {wanted}")
    if user in group.members:
        return CheckResult(
            name,
            False,
            f"{user} was added to group {wanted} after this session began",
            f"log out and in again, or run: newgrp {wanted}",
        )
    return CheckResult(
        name,
        False,
        f"{user} is not in group {wanted}",
        f"sudo usermod -aG {wanted} {user}, then log out and in again",
    )


def _installed_rules(box: Box) -> Path | None:
    # A file in /etc overrides one of the same name in /usr/lib.
    for candidate in (installation.RULES_FILE, installation.VENDOR_RULES_FILE):
        if box.path(candidate).is_file():
            return candidate
    return None


def udev_rules(box: Box) -> CheckResult:
    """Our rules are installed, and are this version's."""
    name = "udev rules"
    installed = _installed_rules(box)
    if installed is None:
        return CheckResult(
            name, False, f"{installation.RULES_NAME} is not installed", _INSTALL_RULES
        )
    try:
        text = box.path(installed).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return CheckResult(name, False, f"cannot read {installed}: {exc}", _INSTALL_RULES)
    if text != installation.render_udev_rules():
        return CheckResult(
            name, False, f"{installed} differs from this version's rules", _INSTALL_RULES
        )
    return CheckResult(name, True, f"{installed}")


def modem_manager(box: Box, node: Path | None) -> CheckResult:
    """ModemManager, if it runs, leaves the shoe alone (ID_MM_DEVICE_IGNORE)."""
    name = "ModemManager"
    if MODEM_MANAGER not in box.process_names():
        return CheckResult(name, True, "not running")
    properties = box.udev_properties(node) if node is not None else None
    fix = f"{_INSTALL_RULES}; or, if no modem is used: sudo systemctl disable --now ModemManager"
    if properties is not None:
        if properties.get("ID_MM_DEVICE_IGNORE") == "1":
            return CheckResult(name, True, f"running, and udev tells it to ignore {node}")
        return CheckResult(
            name,
            False,
            f"running, and may probe {node}: udev does not set ID_MM_DEVICE_IGNORE on it",
            fix,
        )
    installed = _installed_rules(box)
    try:
        rules = box.path(installed).read_text(encoding="utf-8") if installed else ""
    except (OSError, UnicodeDecodeError):
        rules = ""
    if 'ENV{ID_MM_DEVICE_IGNORE}="1"' in rules:
        return CheckResult(name, True, f"running; {installed} tells it to ignore the shoe")
    return CheckResult(name, False, "running, and nothing tells it to leave the shoe alone", fix)


def journal_directory(box: Box, directory: Path, owner: str | None = None) -> CheckResult:
    """The journal's directory can be written by ``owner`` (this session when None).

    For the service's directory, pass ``owner="shoe-controller"``: it is 0700 and the
    technician checking it is rightly not able to write there.
    """
    name = "journal directory"
    path = box.located(directory)
    if not path.exists():
        if directory == installation.STATE_DIR:
            return CheckResult(
                name, None, f"{directory} is created by systemd when the service first starts"
            )
        return CheckResult(name, False, f"{directory} does not exist", f"mkdir -p {directory}")
    if not path.is_dir():
        return CheckResult(name, False, f"{directory} is not a directory", "check the path")
    if owner is None:
        if os.access(path, os.W_OK | os.X_OK):
            return CheckResult(name, True, f"{directory} is writable")
        return CheckResult(
            name,
            False,
            f"{directory} is not writable by {box.user_name()}",
            "run as the journal's owner, or check the path",
        )
    uid = box.user_id(owner)
    info = path.stat()
    mode = stat.S_IMODE(info.st_mode)
    if uid is None:
        return CheckResult(
            name,
            False,
            f"user {owner} does not exist",
            f"sudo systemd-sysusers {installation.SYSUSERS_FILE} (shoe-diag install writes it)",
        )
    if info.st_uid != uid or mode & 0o300 != 0o300:
        return CheckResult(
            name,
            False,
            f"{directory} (owner id {info.st_uid}, mode {mode:04o}) is not writable by {owner}",
            f"sudo chown -R {owner} {directory} && sudo chmod 0700 {directory}",
        )
    if mode & 0o077:
        # The journal holds identities no one may see (rule E1): the service's alone.
        return CheckResult(
            name,
            False,
            f"{directory} has mode {mode:04o}: others can reach the audit journal",
            f"sudo chmod 0700 {directory}",
        )
    return CheckResult(name, True, f"{directory}: {owner}, mode {mode:04o}")


def journal_key(box: Box, key: Path) -> CheckResult:
    """The journal's key, once it exists, is readable by its owner only: whoever reads it
    can read every sealed card through an audit export and forge records."""
    name = "journal key"
    path = box.located(key)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return CheckResult(name, None, f"{key} is created with the journal")
    except OSError as exc:
        return CheckResult(name, None, f"{key} cannot be looked at here ({exc.strerror})")
    if mode & 0o077:
        return CheckResult(
            name,
            False,
            f"{key} has mode {mode:04o}: other accounts can read the journal's key",
            f"sudo chmod 600 {key}",
        )
    return CheckResult(name, True, f"{key}: mode {mode:04o}")


@dataclass(frozen=True)
class ExternalKey:
    """The external generator of the configuration's ``[external_rng]``: its name, its
    algorithm, its key file, and the service's own reading of that file (``load`` raises
    ConfigError with the words the service stops with at start)."""

    device: str
    algorithm: str
    path: Path
    load: Callable[[Path], object]

    @property
    def shared(self) -> bool:
        """A key shared with the generator (HMAC), not its public key."""
        return self.algorithm.startswith("hmac")


def external_rng_key(box: Box, key: ExternalKey, reader: str | None = None) -> CheckResult:
    """The external generator's key file is one the service takes at start: it exists, is a
    regular file, holds the key its algorithm names (an Ed25519 public key, or a shared HMAC
    key) and, when the key is shared, no other account can read it. With ``reader`` (the
    service's user), that user can read it too."""
    name = "external rng key"
    path = box.located(key.path)
    kind = f"the key it shares with {key.device}" if key.shared else f"{key.device}'s public key"
    unreadable = CheckResult(
        name, None, f"{path} cannot be read by {box.user_name()}: run the check as root"
    )
    try:
        info: os.stat_result | None = path.stat()
    except FileNotFoundError:
        info = None  # the service's reading says so, in its words
    except OSError:
        return unreadable  # a directory on the way this session may not enter
    if info is not None and stat.S_ISREG(info.st_mode) and not box.readable(path):
        return unreadable
    try:
        key.load(path)
    except ConfigError as exc:
        if info is None or not stat.S_ISREG(info.st_mode):
            fix = f"install {kind} at {path} (or correct external_rng.key), then check again"
        elif key.shared and stat.S_IMODE(info.st_mode) & 0o077:
            owner = reader or installation.SERVICE_USER
            fix = f"sudo chown {owner} {path} && sudo chmod 600 {path}"
        else:
            fix = (
                f"put {kind} in {path}, or correct external_rng.algorithm ({key.algorithm}), "
                "then check again"
            )
        return CheckResult(name, False, str(exc), fix)
    info = path.stat()  # the service's reading just found a regular file there
    mode = stat.S_IMODE(info.st_mode)
    if reader is not None and not _may_read(box, reader, info):
        # The service's own words when it cannot open the file at start.
        return CheckResult(
            name,
            False,
            f"cannot read external_rng.key {path}: Permission denied; make it readable by the "
            "service's user",
            f"sudo chown {reader} {path}" + (f" && sudo chmod 600 {path}" if key.shared else ""),
        )
    return CheckResult(name, True, f"{path}: {kind} ({key.algorithm}), mode {mode:04o}")


def _may_read(box: Box, user: str, info: os.stat_result) -> bool:
    """Whether ``user``, in the shoe's group as the service's unit runs it, may read a file
    of ``info`` (an account the box does not know reads only what all may read)."""
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o004:
        return True
    uid = box.user_id(user)
    if uid is not None and info.st_uid == uid and mode & 0o400:
        return True
    group = box.group(usb_ids.DEVICE_GROUP)
    return group is not None and info.st_gid == group.gid and bool(mode & 0o040)


def configuration(path: Path, load: Callable[[Path], object]) -> CheckResult:
    """``load`` accepts the configuration file (it raises ConfigError when it does not)."""
    name = "configuration"
    try:
        load(path)
    except ConfigError as exc:
        return CheckResult(name, False, str(exc), f"correct {path} and run the check again")
    return CheckResult(name, True, f"{path} is valid")


def clock(synchronized: bool | None, source: str, *, required: bool) -> CheckResult:
    """The system clock is synchronised (the journal's times): not synchronised is a notice
    the service journals at every start, and a failure where the rules profile wants a
    synchronised clock before the first round."""
    name = "clock"
    if synchronized:
        return CheckResult(name, True, f"synchronised ({source})")
    how = (
        "not synchronised" if synchronized is False else f"not known to be synchronised ({source})"
    )
    fix = "enable a time service: sudo timedatectl set-ntp true (or configure chrony)"
    if required:
        return CheckResult(
            name,
            False,
            f"{how}: the rules profile wants it synchronised before the first round",
            fix,
        )
    return CheckResult(name, True, f"{how}: every start journals a notice; {fix}", fix, notice=True)


def run_checks(
    box: Box,
    *,
    address: str,
    config: Path,
    load_config: Callable[[Path], object],
    journal: Path,
    journal_owner: str | None = None,
    key: Path | None = None,
    external_rng: ExternalKey | None = None,
) -> list[CheckResult]:
    """Every check, in the order a technician would fix them (the journal key's only when
    ``key`` is given, the external generator's key's only when one is configured)."""
    node, found = device_node(box, address)
    results = [
        configuration(config, load_config),
        udev_rules(box),
        group_membership(box),
        found,
        device_access(box, node),
        modem_manager(box, node),
        journal_directory(box, journal, journal_owner),
    ]
    if key is not None:
        results.append(journal_key(box, key))
    if external_rng is not None:
        results.append(external_rng_key(box, external_rng, journal_owner))
    return results


def all_passed(results: Iterable[CheckResult]) -> bool:
    """No check failed (checks that do not apply do not count)."""
    return all(result.ok is not False for result in results)
