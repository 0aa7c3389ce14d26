"""``shoe-floor enroll``: trust a box's public key for its table.

The key is the one ``shoe-diag floor enroll`` made on the box; its fingerprint, printed
there, may be given to make sure the file copied is that one. The enrolment is journaled
in the floor's store (when, by whom); the collectors pick it up within seconds.
"""

from __future__ import annotations

import argparse
import sys
import time

from floor_protocol import BadKey, InvalidName, VerifyKey, check_name
from shoe_controller.errors import ConfigError
from shoe_controller.files import FileTooLarge, NotRegularFile, read_regular
from shoe_floor.store import open_store


def enroll(args: argparse.Namespace) -> int:
    try:
        site = check_name(args.site, "--site")
        table = check_name(args.table, "--table")
    except InvalidName as exc:
        raise ConfigError(str(exc)) from None
    try:
        key = VerifyKey.from_pem(read_regular(args.key, 16 * 1024))
    except FileNotFoundError:
        raise ConfigError(f"--key {args.key} does not exist: check the path") from None
    except (NotRegularFile, FileTooLarge, IsADirectoryError, BadKey) as exc:
        raise ConfigError(
            f"--key {args.key} is not a box's public key ({exc}): copy the .pub file that "
            "shoe-diag floor enroll wrote on the box"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read --key {args.key}: {exc.strerror or exc}") from None
    if args.fingerprint is not None and args.fingerprint != key.fingerprint:
        raise ConfigError(
            f"--key {args.key} has fingerprint {key.fingerprint}, not {args.fingerprint}: "
            "it is not the key the box printed"
        )
    with open_store(args.db) as store:
        new = store.enrol(site, table, key, time.time())
    what = "enrolled" if new else "was already enrolled"
    sys.stdout.write(f"{site}/{table}: key {key.fingerprint} {what}\n")
    return 0
