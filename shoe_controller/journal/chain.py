"""The keyed hash chain that makes the journal tamper-evident.

With the journal's key ``K`` (32 random bytes) and HMAC = HMAC-SHA256:

- ``genesis = HMAC(K, "shoe-controller journal genesis v1\\n" || journal_id)``, the chain
  value before the first record, so records cannot be moved between journals;
- ``mac[n] = HMAC(K, mac[n-1] || encode(record n))`` with ``mac[0] = genesis``, where
  ``encode`` is the UTF-8 of ``seq \\n wall \\n mono_ns \\n round_id \\n kind \\n payload``
  (integers in decimal, an absent round id as the empty string). None of the fields can
  contain a newline (round ids are restricted, the payload is JSON with escapes), so the
  encoding is unambiguous;
- ``key_check = HMAC(K, "shoe-controller journal key check v1")``, stored in the journal's
  meta table, tells a wrong key from a modified record. Its first 8 bytes in hex are the
  key id shown to people; they reveal nothing about the key;
- the checkpoint (latest seq and mac) carries
  ``HMAC(K, "shoe-controller journal checkpoint v1\\n" || journal_id \\n seq \\n mac-hex)``
  so that it cannot be rewritten to hide a truncated tail without the key;
- the verified prefix (the last record the service verified the whole chain up to, and its
  mac) carries the same with the label ``"shoe-controller journal verified prefix v1\\n"``.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Final

MAC_SIZE: Final = 32

#: A record's fields in MAC order: seq, wall, mono_ns, round_id, kind, payload (the first
#: six columns of the records table, as read from it).
RecordFields = tuple[Any, ...]
_GENESIS_LABEL: Final = b"shoe-controller journal genesis v1\n"
_KEY_CHECK_LABEL: Final = b"shoe-controller journal key check v1"
_CHECKPOINT_LABEL: Final = b"shoe-controller journal checkpoint v1\n"
_VERIFIED_LABEL: Final = b"shoe-controller journal verified prefix v1\n"


class Chain:
    """MAC computations with one key; prepares the keyed state once and copies it."""

    __slots__ = ("_prepared",)

    def __init__(self, key: bytes) -> None:
        self._prepared = hmac.new(key, digestmod=hashlib.sha256)

    def _mac(self, *parts: bytes) -> bytes:
        h = self._prepared.copy()
        for part in parts:
            h.update(part)
        return h.digest()

    def genesis(self, journal_id: str) -> bytes:
        return self._mac(_GENESIS_LABEL, journal_id.encode())

    def key_check(self) -> bytes:
        return self._mac(_KEY_CHECK_LABEL)

    def record_mac(self, previous: bytes, fields: RecordFields) -> bytes:
        """The MAC of a record with ``fields`` following a record whose MAC is ``previous``."""
        h = self._prepared.copy()
        h.update(previous)
        h.update(encode_record(fields))
        return h.digest()

    def checkpoint_mac(self, journal_id: str, seq: int, mac: bytes) -> bytes:
        return self._mac(_CHECKPOINT_LABEL, f"{journal_id}\n{seq}\n{mac.hex()}".encode())

    def verified_mac(self, journal_id: str, seq: int, mac: bytes) -> bytes:
        return self._mac(_VERIFIED_LABEL, f"{journal_id}\n{seq}\n{mac.hex()}".encode())


def encode_record(fields: RecordFields) -> bytes:
    seq, wall, mono_ns, round_id, kind, payload = fields
    return f"{seq}\n{wall}\n{mono_ns}\n{round_id or ''}\n{kind}\n{payload}".encode()


def key_id(key_check: bytes) -> str:
    return key_check[:8].hex()
