"""The installation on a table-side box, as data: what is written where, and what is run.

:func:`plan` lists every step; :func:`apply` carries them out through a :class:`Runner`, so
``shoe-diag install --dry-run`` shows exactly what an installation would do, and the tests
install into a throwaway root directory.

The udev rules and the service unit are rendered here rather than shipped as data files:
the rules take the shoe's identity from :mod:`shoe_controller.hal.usb_ids` (the single source
of truth) and the unit takes the path the package was installed at. The copies committed in
``udev/`` and ``systemd/`` are these renderings with the defaults, and a test keeps them
equal.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from shoe_controller.box.accounts import group_in_file, system_group
from shoe_controller.errors import ConfigError, ExitCode, ShoeControllerError
from shoe_controller.files import read_regular
from shoe_controller.hal import usb_ids

log = logging.getLogger(__name__)

#: The service's own account; its primary group is the device group.
SERVICE_USER = "shoe-controller"
#: Where docs/install.md puts the virtual environment, hence the console script.
DEFAULT_EXECUTABLE = Path("/opt/shoe-controller/bin/shoe-controller")
CONFIG_DIR = Path("/etc/shoe-controller")
CONFIG_FILE = CONFIG_DIR / "config.toml"
#: Created by systemd (StateDirectory=) when the service first starts.
STATE_DIR = Path("/var/lib/shoe-controller")
RULES_NAME = "70-electronic-shoe.rules"
UNIT_NAME = "shoe-controller.service"
RULES_FILE = Path("/etc/udev/rules.d") / RULES_NAME
UNIT_FILE = Path("/etc/systemd/system") / UNIT_NAME
SYSUSERS_FILE = Path("/etc/sysusers.d/shoe-controller.conf")
#: Where a distribution package would put the rules instead of /etc.
VENDOR_RULES_FILE = Path("/usr/lib/udev/rules.d") / RULES_NAME
#: Drop-ins that change the unit (``systemctl edit``: the network for the floor, say).
UNIT_DROP_INS = UNIT_FILE.parent / f"{UNIT_NAME}.d"

ROOT = Path("/")


class InstallError(ShoeControllerError):
    """A step of the installation could not be carried out."""

    exit_code = ExitCode.CHECK_FAILED


def system_files(prefix: Path = ROOT) -> tuple[Path, ...]:
    """The system files that make the service what it is on the box under ``prefix``, as
    the software manifest records them: every file :func:`plan` writes but the
    configuration (journaled by its own digest), the rules where a distribution package
    puts them, and the unit's drop-ins present now."""
    fixed = (SYSUSERS_FILE, RULES_FILE, VENDOR_RULES_FILE, UNIT_FILE)
    drop_ins = _on_box(prefix, UNIT_DROP_INS)
    try:
        found = sorted(p for p in drop_ins.iterdir() if p.name.endswith(".conf"))
    except OSError:
        found = []
    return tuple(_on_box(prefix, path) for path in fixed) + tuple(found)


def _udev_symlink_name() -> str:
    if not usb_ids.SYMLINK.startswith("/dev/"):
        raise ValueError(f"usb_ids.SYMLINK must be under /dev/, not {usb_ids.SYMLINK!r}")
    return usb_ids.SYMLINK.removeprefix("/dev/")


def render_udev_rules() -> str:
    """The udev rules for the shoe, from the identity in :mod:`~shoe_controller.hal.usb_ids`."""
    vid = f"{usb_ids.VENDOR_ID:04x}"
    pid = f"{usb_ids.PRODUCT_ID:04x}"
    link = _udev_symlink_name()
    group = usb_ids.DEVICE_GROUP
    return f"""\
# Electronic dealing shoe (USB {vid}:{pid}): a stable name and least-privilege access.
#
# Rendered from shoe_controller/hal/usb_ids.py by shoe_controller.box.installation; change
# the identity there, never here. Install as /etc/udev/rules.d/{RULES_NAME}.
#
# Access is by group "{group}" with mode 0660, never world access: a table-side box is
# headless, so there is no seat to grant access to (and no TAG+="uaccess"). The number 70
# sorts before 73-seat-late.rules all the same.

ACTION!="add|change", GOTO="electronic_shoe_end"

# The serial interface (CDC ACM as ttyACM*, or a USB-serial bridge as ttyUSB*). The
# ATTRS{{}} keys find the USB device above the tty; ModemManager must never probe it, as
# its AT commands would reach the shoe as garbage.
SUBSYSTEM=="tty", KERNEL=="ttyACM[0-9]*|ttyUSB[0-9]*", \\
  ATTRS{{idVendor}}=="{vid}", ATTRS{{idProduct}}=="{pid}", \\
  SYMLINK+="{link}", GROUP="{group}", MODE="0660", ENV{{ID_MM_DEVICE_IGNORE}}="1"

# One more name per shoe, from its USB serial number, for boxes with more than one shoe.
SUBSYSTEM=="tty", KERNEL=="ttyACM[0-9]*|ttyUSB[0-9]*", \\
  ATTRS{{idVendor}}=="{vid}", ATTRS{{idProduct}}=="{pid}", ATTRS{{serial}}=="?*", \\
  SYMLINK+="{link}-$attr{{serial}}"

# The raw USB device, for the usb:// transport (bulk endpoints through libusb).
SUBSYSTEM=="usb", ENV{{DEVTYPE}}=="usb_device", \\
  ATTR{{idVendor}}=="{vid}", ATTR{{idProduct}}=="{pid}", \\
  GROUP="{group}", MODE="0660", ENV{{ID_MM_DEVICE_IGNORE}}="1"

LABEL="electronic_shoe_end"
"""


def render_sysusers() -> str:
    """The sysusers.d(5) entries for the device group and the service account."""
    group = usb_ids.DEVICE_GROUP
    return f"""\
# The group that may open the electronic shoe, and the account the controller runs as.
g {group} -
u {SERVICE_USER} -:{group} "Electronic dealing shoe controller" - -
"""


#: The service's open-file limit (soft and hard).
NOFILE_LIMIT = 4096


def render_unit(executable: Path = DEFAULT_EXECUTABLE) -> str:
    """The systemd service unit, running the console script at ``executable``."""
    if not executable.is_absolute():
        raise ValueError(f"the executable in a unit must be an absolute path, not {executable}")
    exec_start = shlex.join([str(executable), "run", "--wait", "--config", str(CONFIG_FILE)])
    group = usb_ids.DEVICE_GROUP
    return f"""\
# The electronic dealing shoe's controller, as a hardened system service.
# Rendered by shoe_controller.box.installation;
# install as /etc/systemd/system/{UNIT_NAME}.

[Unit]
Description=Electronic dealing shoe controller
# No BindsTo=/After= on a .device unit: the shoe may be absent at boot or unplugged at any
# time, and the controller itself waits for it and reconnects with back-off. Stopping the
# service on unplug would turn every loose cable into a controller restart, which voids the
# open round (rule F3); staying up lets the shoe resend what it holds (rule F2).

# A crash loop stops after 5 starts in 5 minutes and waits for an attendant.
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
Type=exec
User={SERVICE_USER}
Group={group}
ExecStart={exec_start}
Restart=on-failure
RestartSec=5s
# A usage or configuration error does not heal by restarting: fail once, visibly.
RestartPreventExitStatus={int(ExitCode.USAGE)} {int(ExitCode.CONFIG)}
TimeoutStopSec=30s
# Open files: the table's (journal, checkpoint, shoe) are opened before any API client is
# let in, and the API keeps its connections (256 at most by default) below descriptor 1024
# with 64 left for the table (docs/api.md, "Threat model"). The limit is raised above
# systemd's default soft limit (1024) so that nothing else in the service meets it.
LimitNOFILE={NOFILE_LIMIT}
# The audit journal lives in $STATE_DIRECTORY (/var/lib/shoe-controller), the service's own.
StateDirectory=shoe-controller
StateDirectoryMode=0700
# /etc/shoe-controller stays root-owned; the installation makes it 0750 root:{group}.
ConfigurationDirectory=shoe-controller
UMask=0077
StandardOutput=journal
StandardError=journal
SyslogIdentifier=shoe-controller

# Least privilege. systemd-analyze security rates this unit; the tests hold it at 2.0 or
# lower.
NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateMounts=yes
PrivateIPC=yes
RemoveIPC=yes
# No network: publishing events is opt-in through a drop-in (docs/install.md).
PrivateNetwork=yes
IPAddressDeny=any
# Only the shoe's device classes: CDC ACM, USB-serial bridges, raw USB (usbfs).
# PrivateDevices= would hide them all, so it stays off.
DevicePolicy=closed
DeviceAllow=char-ttyACM rw
DeviceAllow=char-ttyUSB rw
DeviceAllow=char-usb_device rw
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
ProcSubset=pid
# AF_UNIX for logging; AF_NETLINK because libusb opens a device-event socket when it starts.
RestrictAddressFamilies=AF_UNIX AF_NETLINK
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
# Save setpriority: the API checks PINs (argon2, memory-hard) in a process of its own at the
# lowest priority, so that a flood of sign-ins never slows a card. Without CAP_SYS_NICE a
# process may only lower a priority, never raise one.
SystemCallFilter=setpriority
SystemCallErrorNumber=EPERM

[Install]
WantedBy=multi-user.target
"""


def _mode(mode: int) -> str:
    return f"{mode:04o}"


@dataclass(frozen=True, slots=True)
class WriteFile:
    """Write ``content`` to ``path`` (atomically), owned by root and ``group``."""

    path: Path
    content: str
    mode: int
    group: str = "root"
    purpose: str = ""

    def action(self) -> str:
        return f"write {self.path}"

    def describe(self) -> str:
        lines = self.content.count("\n")
        return (
            f"{self.action()} (mode {_mode(self.mode)}, owner root:{self.group}, "
            f"{lines} lines): {self.purpose}"
        )


@dataclass(frozen=True, slots=True)
class MakeDirectory:
    """Create ``path`` if missing, and set its mode and group either way."""

    path: Path
    mode: int
    group: str = "root"
    purpose: str = ""

    def action(self) -> str:
        return f"create directory {self.path}"

    def describe(self) -> str:
        return f"{self.action()} (mode {_mode(self.mode)}, owner root:{self.group}): {self.purpose}"


@dataclass(frozen=True, slots=True)
class RunCommand:
    """Run ``argv``; the installation stops if it fails."""

    argv: tuple[str, ...]
    purpose: str = ""

    def action(self) -> str:
        return f"run {shlex.join(self.argv)}"

    def describe(self) -> str:
        return f"{self.action()}: {self.purpose}"


Step = WriteFile | MakeDirectory | RunCommand


def _on_box(prefix: Path, path: Path) -> Path:
    return prefix / path.relative_to(ROOT)


def plan(
    prefix: Path = ROOT,
    *,
    executable: Path = DEFAULT_EXECUTABLE,
    config: Path | None = None,
    start: bool = False,
) -> list[Step]:
    """Every step of the installation into the root directory ``prefix``, in order.

    With ``prefix`` ``/`` the steps act on this box and talk to its running udev and
    systemd. Any other prefix is an image or a throwaway root: files land under it, users
    and the unit's enablement are made offline (``--root``), and nothing running is told.
    ``config`` is a configuration file to install as ``/etc/shoe-controller/config.toml``;
    ``start`` starts the service once enabled (only on a live box, and only with a config
    file in place).
    """
    prefix = prefix.resolve()
    live = prefix == ROOT
    if live and not os.access(executable, os.X_OK):
        raise InstallError(
            f"{executable} is not an installed program: install shoe-controller there first "
            "(a virtual environment with pip install) or name the installed shoe-controller "
            "script with --executable"
        )
    if start and not live:
        raise InstallError(f"cannot start the service in {prefix}: it is not this running box")
    if start and config is None and not CONFIG_FILE.exists():
        raise InstallError(
            f"cannot start the service without {CONFIG_FILE}: write it first (shoe-diag "
            "check --config FILE checks one) or name a configuration file to install"
        )
    group = usb_ids.DEVICE_GROUP
    steps: list[Step] = []

    sysusers = _on_box(prefix, SYSUSERS_FILE)
    steps.append(
        WriteFile(
            sysusers,
            render_sysusers(),
            0o644,
            purpose=f"declare group {group} and user {SERVICE_USER}",
        )
    )
    root_option = () if live else (f"--root={prefix}",)
    steps.append(
        RunCommand(
            ("systemd-sysusers", *root_option, str(sysusers)),
            purpose=f"create group {group} and system user {SERVICE_USER} if missing",
        )
    )

    steps.append(
        WriteFile(
            _on_box(prefix, RULES_FILE),
            render_udev_rules(),
            0o644,
            purpose=f"name the shoe {usb_ids.SYMLINK} and give group {group} access",
        )
    )
    if live:
        steps.append(
            RunCommand(("udevadm", "control", "--reload"), purpose="make udev read the rules")
        )
        steps.append(
            RunCommand(
                (
                    "udevadm",
                    "trigger",
                    "--settle",
                    "--action=change",
                    "--subsystem-match=tty",
                    "--subsystem-match=usb",
                ),
                purpose="apply them to a shoe that is already plugged in",
            )
        )

    steps.append(
        MakeDirectory(
            _on_box(prefix, CONFIG_DIR),
            0o750,
            group,
            purpose="configuration, readable by the service and the technicians",
        )
    )
    if config is not None:
        try:
            text = read_regular(config).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ConfigError(
                f"cannot read configuration file {config}: {reason}; name a readable TOML file"
            ) from None
        steps.append(
            WriteFile(
                _on_box(prefix, CONFIG_FILE),
                text,
                0o640,
                group,
                purpose=f"the configuration, from {config}",
            )
        )

    steps.append(
        WriteFile(
            _on_box(prefix, UNIT_FILE),
            render_unit(executable),
            0o644,
            purpose=f"the service, running {executable}",
        )
    )
    if live:
        steps.append(
            RunCommand(("systemctl", "daemon-reload"), purpose="make systemd read the unit")
        )
    enable = ("systemctl", *root_option, "enable")
    if live and start:
        steps.append(
            RunCommand((*enable, "--now", UNIT_NAME), purpose="start at boot, and start now")
        )
    else:
        steps.append(RunCommand((*enable, UNIT_NAME), purpose="start at boot"))
    return steps


class Runner(Protocol):
    """Carries out the steps of a plan."""

    def write_file(self, step: WriteFile) -> None: ...

    def make_directory(self, step: MakeDirectory) -> None: ...

    def run_command(self, step: RunCommand) -> None: ...


def apply(steps: Sequence[Step], runner: Runner) -> None:
    """Carry out ``steps`` in order; the first failure raises :class:`InstallError`."""
    for step in steps:
        log.info("%s", step.describe())
        try:
            match step:
                case WriteFile():
                    runner.write_file(step)
                case MakeDirectory():
                    runner.make_directory(step)
                case RunCommand():
                    runner.run_command(step)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                advice = "run the installation as root (sudo)"
            elif exc.errno == errno.EROFS:
                advice = "the file system is mounted read-only"
            else:
                advice = "check the path"
            raise InstallError(f"cannot {step.action()}: {exc.strerror}; {advice}") from None


def group_file_lookup(group_file: Path) -> Callable[[str], int]:
    """Resolve group names from an ``/etc/group`` file (an image's, not this box's)."""

    def lookup(name: str) -> int:
        try:
            entry = group_in_file(group_file, name)
        except OSError as exc:
            raise InstallError(f"cannot read {group_file}: {exc.strerror}") from None
        if entry is None:
            raise InstallError(f"group {name} is not in {group_file}: create it first")
        return entry.gid

    return lookup


def _system_gid(name: str) -> int:
    entry = system_group(name)
    if entry is None:
        raise InstallError(f"group {name} does not exist: create it first")
    return entry.gid


def _run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


class SystemRunner:
    """Carries out steps on this machine's file system, with real commands.

    ``gid_of`` resolves a group name (this box's group database by default; an image's
    ``etc/group`` through :func:`group_file_lookup`). With ``set_owner`` false, files keep
    the invoking user as owner, which is how the tests install without root.
    """

    def __init__(
        self,
        *,
        gid_of: Callable[[str], int] = _system_gid,
        set_owner: bool = True,
        run: Callable[[Sequence[str]], subprocess.CompletedProcess[str]] = _run,
    ) -> None:
        self._gid_of = gid_of
        self._set_owner = set_owner
        self._run = run

    @classmethod
    def for_prefix(cls, prefix: Path, *, set_owner: bool = True) -> SystemRunner:
        """A runner for :func:`plan` with the same ``prefix``."""
        if prefix.resolve() == ROOT:
            return cls(set_owner=set_owner)
        return cls(gid_of=group_file_lookup(prefix / "etc" / "group"), set_owner=set_owner)

    def write_file(self, step: WriteFile) -> None:
        self._make_parents(step.path.parent)
        fd, tmp = tempfile.mkstemp(dir=step.path.parent, prefix=f".{step.path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(step.content)
                handle.flush()
                self._own(handle.fileno(), step.group, step.path)
                os.fchmod(handle.fileno(), step.mode)
                os.fsync(handle.fileno())
            os.replace(tmp, step.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def make_directory(self, step: MakeDirectory) -> None:
        self._make_parents(step.path.parent)
        with contextlib.suppress(FileExistsError):
            step.path.mkdir(mode=0o700)
        if not step.path.is_dir():
            raise InstallError(f"{step.path} exists and is not a directory: move it away")
        fd = os.open(step.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            self._own(fd, step.group, step.path)
            os.fchmod(fd, step.mode)
        finally:
            os.close(fd)

    def run_command(self, step: RunCommand) -> None:
        command = shlex.join(step.argv)
        try:
            result = self._run(step.argv)
        except FileNotFoundError:
            raise InstallError(
                f"{step.argv[0]} is not installed, and is needed to {step.purpose}: "
                "install it with the system's package manager and try again"
            ) from None
        except OSError as exc:
            raise InstallError(f"cannot run {step.argv[0]}: {exc.strerror}") from None
        if result.returncode != 0:
            said = (result.stderr or result.stdout).strip().splitlines()
            last = said[-1] if said else "no message"
            raise InstallError(f"{command} failed with exit status {result.returncode}: {last}")

    def _own(self, fd: int, group: str, path: Path) -> None:
        if not self._set_owner:
            return
        # root is 0 everywhere, even in an image whose /etc/group is not written yet.
        gid = 0 if group == "root" else self._gid_of(group)
        try:
            os.fchown(fd, 0, gid)
        except PermissionError:
            raise InstallError(
                f"cannot give {path} to root:{group}: run the installation as root (sudo)"
            ) from None

    @staticmethod
    def _make_parents(directory: Path) -> None:
        missing: list[Path] = []
        while not directory.exists():
            missing.append(directory)
            directory = directory.parent
        for path in reversed(missing):
            path.mkdir()
            # Whatever the installer's umask, system directories are world-readable.
            path.chmod(0o755)
