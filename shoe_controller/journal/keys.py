"""The per-box journal key: 32 random bytes, stored as 64 hex digits in a 0600 file."""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path
from typing import Final

from shoe_controller.errors import JournalError
from shoe_controller.files import FileTooLarge, NotRegularFile, open_regular
from shoe_controller.journal.paths import unusable_location, write_new_file

log = logging.getLogger(__name__)

KEY_SIZE: Final = 32
#: A key file is 64 hex digits and a newline; anything much larger is not a key.
_MAX_KEY_FILE: Final = 4096


def load_key(path: Path) -> bytes:
    """Read the key at ``path``; a missing, unreadable or malformed key is a JournalError."""
    try:
        with open_regular(path, _MAX_KEY_FILE) as handle:
            raw = handle.read(_MAX_KEY_FILE)
            mode = os.fstat(handle.fileno()).st_mode
    except FileNotFoundError:
        raise JournalError(
            f"journal key {path} not found: restore it from its backup or name it with --key"
        ) from None
    except (NotRegularFile, FileTooLarge, IsADirectoryError) as exc:
        raise JournalError(
            f"{path} is not a journal key: {exc.strerror}; name the key file with --key"
        ) from None
    except OSError as exc:
        raise JournalError(
            f"cannot read journal key {path}: {exc.strerror or exc}; run as the user that owns "
            "the journal (the service user) or name a readable copy with --key"
        ) from None
    try:
        text = raw.decode("ascii").strip()
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_SIZE:
        raise JournalError(
            f"{path} is not a journal key (expected {2 * KEY_SIZE} hex digits): "
            "name the right file with --key"
        )
    exposed = _exposure(path, mode)
    if exposed is not None:
        log.warning("%s", exposed)
    return key


def key_exposure(path: Path) -> str | None:
    """Why the key at ``path`` is exposed (its group or other accounts may read it), as one
    line saying what to do; None when it is the owner's only, or is not there."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return _exposure(path, mode)


def _exposure(path: Path, mode: int) -> str | None:
    if not stat.S_IMODE(mode) & 0o077:
        return None
    return (
        f"journal key {path} has mode {stat.S_IMODE(mode):04o}: other accounts can read it, "
        f"and with it read every sealed card and forge the journal; run: chmod 600 {path}"
    )


def create_key(path: Path) -> bytes:
    """Create a new key at ``path``, which must not exist."""
    key = secrets.token_bytes(KEY_SIZE)
    try:
        write_new_file(path, key.hex().encode("ascii") + b"\n")
    except FileExistsError:
        raise JournalError(f"journal key {path} appeared while being created; try again") from None
    except OSError as exc:
        raise unusable_location(path, exc) from None
    log.info("created journal key %s", path)
    return key


def load_or_create_key(path: Path) -> bytes:
    """The key for a new journal: the existing one at ``path``, or a new one."""
    if os.path.lexists(path):
        return load_key(path)
    return create_key(path)
