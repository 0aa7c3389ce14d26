"""The checkpoint: the latest committed sequence number and MAC, kept in a file of its own.

The journal can only grow, so a journal whose last record is older than its checkpoint has
lost its tail. The checkpoint is written after every commit (so it may lag the journal by one
transaction after a crash, never lead it) and carries its own MAC, so that whoever truncates
the journal cannot rewrite it to match without the key.

File format (JSON): ``{"format": 1, "journal_id": ..., "seq": N, "mac": hex, "check": hex}``.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from shoe_controller.files import read_regular
from shoe_controller.journal.chain import Chain
from shoe_controller.journal.paths import replace_file

FORMAT: Final = 1
#: A checkpoint is one short JSON line.
_MAX_CHECKPOINT_FILE: Final = 4096


class CheckpointInvalid(ValueError):
    """A checkpoint file that does not parse, or whose MAC or journal id does not match."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    seq: int
    mac: bytes


def write_checkpoint(path: Path, chain: Chain, journal_id: str, point: Checkpoint) -> None:
    check = chain.checkpoint_mac(journal_id, point.seq, point.mac)
    document = {
        "format": FORMAT,
        "journal_id": journal_id,
        "seq": point.seq,
        "mac": point.mac.hex(),
        "check": check.hex(),
    }
    replace_file(path, json.dumps(document, sort_keys=True).encode("ascii") + b"\n")


def read_checkpoint(path: Path, chain: Chain, journal_id: str) -> Checkpoint | None:
    """The checkpoint at ``path``; None when there is none. Raises CheckpointInvalid."""
    try:
        raw = read_regular(path, _MAX_CHECKPOINT_FILE)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CheckpointInvalid(f"checkpoint {path} cannot be read: {exc.strerror}") from None
    try:
        document = json.loads(raw)
        fmt = document["format"]
        owner = document["journal_id"]
        seq = document["seq"]
        mac = bytes.fromhex(document["mac"])
        check = bytes.fromhex(document["check"])
    except (ValueError, TypeError, KeyError) as exc:
        raise CheckpointInvalid(f"checkpoint {path} does not parse ({exc})") from None
    if fmt != FORMAT or not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise CheckpointInvalid(f"checkpoint {path} is not in a format this program reads")
    if owner != journal_id:
        raise CheckpointInvalid(f"checkpoint {path} belongs to another journal")
    if not hmac.compare_digest(check, chain.checkpoint_mac(journal_id, seq, mac)):
        raise CheckpointInvalid(f"checkpoint {path} does not match its MAC")
    return Checkpoint(seq, mac)
