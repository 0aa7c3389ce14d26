"""The box's floor keys: its own Ed25519 signing key, and the floor's public key.

The signing key is made at install (``shoe-diag floor enroll``) beside the journal's key:
``journal.sqlite3`` has it in ``journal.floor-key`` (PEM, PKCS #8, mode 0600). It is made
once and never replaced: a file already there is used as it is, or refused when it is no
key. Its public key is what the floor enrols (``shoe-floor enroll``).

The floor's public key (``floor_key`` in ``[floor]``) verifies the replay requests; a box
without it answers none.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Final

from floor_protocol import BadKey, SigningKey, VerifyKey
from shoe_controller.errors import ConfigError
from shoe_controller.files import FileTooLarge, NotRegularFile, read_regular
from shoe_controller.journal.paths import write_new_file

log = logging.getLogger(__name__)

SUFFIX: Final = ".floor-key"
_MAX_KEY_FILE: Final = 16 * 1024


def signing_key_path(journal: Path) -> Path:
    """Beside ``journal``: ``journal.sqlite3`` -> ``journal.floor-key``."""
    return journal.with_suffix(SUFFIX)


def _read(path: Path, what: str, hint: str) -> bytes:
    try:
        return read_regular(path, _MAX_KEY_FILE)
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist: {hint}") from None
    except (NotRegularFile, FileTooLarge, IsADirectoryError):
        raise ConfigError(f"{path} is not a {what}: name the right file") from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read {what} {path}: {exc.strerror or exc}; run as the service's user"
        ) from None


def load_signing_key(path: Path) -> SigningKey:
    """The box's signing key at ``path``; ConfigError when it is missing or no key."""
    data = _read(path, "floor signing key", "run shoe-diag floor enroll to make it")
    try:
        key = SigningKey.from_pem(data)
    except BadKey as exc:
        raise ConfigError(f"{path} is not a floor signing key ({exc})") from None
    mode = path.stat().st_mode
    if stat.S_IMODE(mode) & 0o077:
        log.warning(
            "floor signing key %s may be read by other accounts (mode %o): chmod 600 it",
            path,
            stat.S_IMODE(mode),
        )
    return key


def make_signing_key(path: Path) -> tuple[SigningKey, bool]:
    """The key at ``path``, made now (0600) when there is none; (key, made)."""
    if os.path.lexists(path):
        return load_signing_key(path), False
    key = SigningKey.generate()
    try:
        write_new_file(path, key.to_pem())
    except FileExistsError:
        # Another process made it meanwhile: use that one, never replace it.
        return load_signing_key(path), False
    except FileNotFoundError:
        raise ConfigError(
            f"cannot write the floor signing key {path}: its directory {path.parent} does not "
            "exist; give the journal's path with --journal (the key goes beside it)"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot write the floor signing key {path}: {exc.strerror or exc}; run as the "
            "journal's owner"
        ) from None
    return key, True


def load_floor_key(path: Path) -> VerifyKey:
    """The floor's public key (PEM) at ``path``."""
    data = _read(
        path, "floor public key", "copy the floor's public key there (shoe-floor collect prints it)"
    )
    try:
        return VerifyKey.from_pem(data)
    except BadKey as exc:
        raise ConfigError(f"{path} is not the floor's public key ({exc})") from None
