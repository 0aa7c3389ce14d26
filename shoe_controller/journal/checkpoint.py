"""Two keyed marks kept beside the journal, each a sequence number and a MAC in a file of its
own.

- The **checkpoint** (``journal.checkpoint``): the latest committed record. The journal can
  only grow, so a journal whose last record is older than its checkpoint has lost its tail.
  It is written after every commit (so it may lag the journal by one transaction after a
  crash, never lead it).
- The **verified prefix** (``journal.verified``): the last record up to which the service
  verified the whole chain when it last opened the journal. The next opening verifies only
  the records after it, so that a large journal opens fast and a damaged one is still never
  appended to (``shoe-diag audit verify`` always reads every record).

Each carries its own MAC, so that whoever truncates or alters the journal cannot rewrite
them to match without the key.

File format (JSON): ``{"format": 1, "journal_id": ..., "seq": N, "mac": hex, "check": hex}``.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from shoe_controller.files import read_regular
from shoe_controller.journal.chain import Chain
from shoe_controller.journal.paths import replace_file

FORMAT: Final = 1
#: A checkpoint is one short JSON line.
_MAX_CHECKPOINT_FILE: Final = 4096

#: Signs (journal_id, seq, mac): one of the chain's methods, one per kind of mark.
_Sign = Callable[[str, int, bytes], bytes]


class CheckpointInvalid(ValueError):
    """A checkpoint file that does not parse, or whose MAC or journal id does not match."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    seq: int
    mac: bytes


def write_checkpoint(
    path: Path,
    chain: Chain,
    journal_id: str,
    point: Checkpoint,
    replace: Callable[[Path, bytes], None] = replace_file,
) -> None:
    """Store ``point`` at ``path`` with ``replace`` (an atomic replacement of the file)."""
    _write(path, chain.checkpoint_mac, journal_id, point, replace)


def read_checkpoint(path: Path, chain: Chain, journal_id: str) -> Checkpoint | None:
    """The checkpoint at ``path``; None when there is none. Raises CheckpointInvalid."""
    return _read(path, "checkpoint", chain.checkpoint_mac, journal_id)


def write_verified(path: Path, chain: Chain, journal_id: str, point: Checkpoint) -> None:
    _write(path, chain.verified_mac, journal_id, point)


def read_verified(path: Path, chain: Chain, journal_id: str) -> Checkpoint | None:
    """The verified prefix at ``path``; None when there is none. Raises CheckpointInvalid."""
    return _read(path, "verified prefix", chain.verified_mac, journal_id)


def _write(
    path: Path,
    sign: _Sign,
    journal_id: str,
    point: Checkpoint,
    replace: Callable[[Path, bytes], None] = replace_file,
) -> None:
    document = {
        "format": FORMAT,
        "journal_id": journal_id,
        "seq": point.seq,
        "mac": point.mac.hex(),
        "check": sign(journal_id, point.seq, point.mac).hex(),
    }
    replace(path, json.dumps(document, sort_keys=True).encode("ascii") + b"\n")


def _read(path: Path, what: str, sign: _Sign, journal_id: str) -> Checkpoint | None:
    try:
        raw = read_regular(path, _MAX_CHECKPOINT_FILE)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CheckpointInvalid(f"{what} {path} cannot be read: {exc.strerror}") from None
    try:
        document = json.loads(raw)
        fmt = document["format"]
        owner = document["journal_id"]
        seq = document["seq"]
        mac = bytes.fromhex(document["mac"])
        check = bytes.fromhex(document["check"])
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise CheckpointInvalid(f"{what} {path} does not parse ({exc})") from None
    if fmt != FORMAT or not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise CheckpointInvalid(f"{what} {path} is not in a format this program reads")
    if owner != journal_id:
        raise CheckpointInvalid(f"{what} {path} belongs to another journal")
    if not hmac.compare_digest(check, sign(journal_id, seq, mac)):
        raise CheckpointInvalid(f"{what} {path} does not match its MAC")
    return Checkpoint(seq, mac)
