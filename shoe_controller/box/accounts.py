"""The box's groups and users: from the running system, or from the ``etc/group`` and
``etc/passwd`` files of an image (a root directory that is not running). One reader of
those files serves the installation and the checks alike."""

from __future__ import annotations

import grp
import pwd
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class GroupEntry:
    name: str
    gid: int
    members: tuple[str, ...] = ()


def _entries(path: Path) -> Iterator[list[str]]:
    """The fields of each entry of a group(5) or passwd(5) file; raises OSError when the
    file cannot be read."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            yield line.split(":")


def group_in_file(path: Path, name: str) -> GroupEntry | None:
    """The group ``name`` of the group(5) file ``path`` (``name:password:GID:members``),
    or None; an entry whose GID is not a number is passed over, as the C library does."""
    for fields in _entries(path):
        if len(fields) >= 3 and fields[0] == name and fields[2].isdigit():
            members = fields[3] if len(fields) > 3 else ""
            return GroupEntry(name, int(fields[2]), tuple(m for m in members.split(",") if m))
    return None


def user_id_in_file(path: Path, name: str) -> int | None:
    """The UID of ``name`` in the passwd(5) file ``path``, or None."""
    for fields in _entries(path):
        if len(fields) >= 3 and fields[0] == name and fields[2].isdigit():
            return int(fields[2])
    return None


def system_group(name: str) -> GroupEntry | None:
    """The group ``name`` of this running box, or None."""
    try:
        entry = grp.getgrnam(name)
    except KeyError:
        return None
    return GroupEntry(entry.gr_name, entry.gr_gid, tuple(entry.gr_mem))


def system_user_id(name: str) -> int | None:
    """The UID of ``name`` on this running box, or None."""
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None
