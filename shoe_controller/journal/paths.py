"""Where the journal and its companion files live, and how they are created safely."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Final

from shoe_controller.errors import JournalError

APP_DIR: Final = "shoe-controller"
JOURNAL_NAME: Final = "journal.sqlite3"
SERVICE_STATE_DIR: Final = Path("/var/lib") / APP_DIR

#: Owner only: the journal, its key and its checkpoint.
FILE_MODE: Final = 0o600
#: Owner only, for a directory we create ourselves.
DIR_MODE: Final = 0o700


def default_journal_path(service: bool) -> Path:
    """The journal's path when none is configured.

    As the service: ``$STATE_DIRECTORY`` (set by systemd's ``StateDirectory=``; the first of
    a colon-separated list) or ``/var/lib/shoe-controller``. Otherwise the user's data
    directory: ``$XDG_DATA_HOME`` (when absolute) or ``~/.local/share``, then
    ``shoe-controller``.
    """
    if service:
        state = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
        base = Path(state) if state else SERVICE_STATE_DIR
        return base / JOURNAL_NAME
    xdg = os.environ.get("XDG_DATA_HOME", "")
    data = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return data / APP_DIR / JOURNAL_NAME


def default_key_path(journal: Path) -> Path:
    """The key beside its journal: ``journal.sqlite3`` -> ``journal.key``."""
    return journal.with_suffix(".key")


def checkpoint_path(journal: Path) -> Path:
    return journal.with_suffix(".checkpoint")


def lock_path(journal: Path) -> Path:
    return journal.with_suffix(".lock")


def verified_path(journal: Path) -> Path:
    """The verified prefix: how far the service last verified the whole chain."""
    return journal.with_suffix(".verified")


def ensure_directory(directory: Path) -> None:
    """Create ``directory`` (mode 0700) and missing parents; leave an existing one as it is."""
    if directory.is_dir():
        return
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        directory.mkdir(mode=DIR_MODE)
        # mkdir's mode passes through the umask, which could leave us without write access.
        os.chmod(directory, DIR_MODE)
    except FileExistsError:
        if not directory.is_dir():
            raise unusable_location(directory, OSError(errno.ENOTDIR, "not a directory")) from None
    except OSError as exc:
        raise unusable_location(directory, exc) from None


def unusable_location(path: Path, exc: OSError) -> JournalError:
    """The one-line error for a journal location we cannot create or write."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, PermissionError) or exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        fix = (
            "give the service user write access to it (the systemd unit's StateDirectory= "
            "does this) or choose another place with --journal"
        )
    else:
        fix = "choose another place with --journal"
    return JournalError(f"cannot use journal location {path}: {reason}; {fix}")


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new name in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (mode 0600), which must not exist, atomically and durably.

    The data goes to a temporary name first and is linked into place, so a crash leaves
    either no file or the whole file, and an existing file is never replaced.
    """
    temp = path.with_name(f".{path.name}.new")
    temp.unlink(missing_ok=True)
    _write_synced(temp, data, os.O_EXCL)
    try:
        os.link(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    fsync_directory(path.parent)


def replace_file(path: Path, data: bytes) -> None:
    """Atomically replace ``path`` with ``data`` (mode 0600): temp, fsync, rename, fsync dir."""
    temp = path.with_name(f".{path.name}.new")
    _write_synced(temp, data, os.O_TRUNC)
    os.replace(temp, path)
    fsync_directory(path.parent)


def _write_synced(path: Path, data: bytes, flag: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | flag, FILE_MODE)
    try:
        # The creation mode passes through the umask; fchmod does not.
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
