"""What the floor accepts from the broker: a message signed by the box it claims to come
from, and valid; anything else goes to quarantine with the reason, never beside genuine
records.

The order matters: the signature is checked first, over the bytes as they came (a
forger's message costs one signature check, nothing more), then the message is parsed and
validated against the published schema (:mod:`floor_protocol`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Final

import floor_protocol as fp
from floor_protocol import topics
from floor_protocol.errors import MALFORMED
from shoe_floor.rows import Quarantined
from shoe_floor.store import Enrolment

#: What a box publishes; anything else on a table's topics is not the floor's to store.
BOX_LEAVES: Final = frozenset(topics.FROM_BOX)


class Keyring:
    """The enrolled boxes' public keys by (site, table); thread-safe, replaced whole."""

    def __init__(self, enrolments: Iterable[Enrolment] = ()) -> None:
        self._lock = threading.Lock()
        self._keys: dict[tuple[str, str], tuple[fp.VerifyKey, ...]] = {}
        self.replace(enrolments)

    def replace(self, enrolments: Iterable[Enrolment]) -> None:
        keys: dict[tuple[str, str], list[fp.VerifyKey]] = {}
        for e in enrolments:
            keys.setdefault((e.site, e.table_id), []).append(e.key)
        with self._lock:
            self._keys = {k: tuple(v) for k, v in keys.items()}

    def keys(self, site: str, table: str) -> tuple[fp.VerifyKey, ...]:
        with self._lock:
            return self._keys.get((site, table), ())

    def knows(self, site: str, table: str) -> bool:
        with self._lock:
            return (site, table) in self._keys

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)


def read(
    topic: str,
    payload: bytes,
    properties: Sequence[tuple[str, str]],
    received: float,
    keyring: Keyring,
    *,
    verify: bool = True,
) -> fp.Message | Quarantined:
    """The message, verified and parsed; or what to keep in quarantine instead.
    (``verify=False`` skips the signature: only the floor benchmark's unsigned baseline
    does, to measure what the signatures cost.)"""
    where = topics.split_topic(topic)
    if where is None or where[2] not in BOX_LEAVES:
        return Quarantined(received, "", "", topic, MALFORMED, "not a box's topic", payload)
    site, table, _ = where
    try:
        if verify:
            fp.check_signature(
                topic, properties, payload, keyring.keys(site, table), f"{site}/{table}"
            )
        return fp.parse(topic, payload, properties, received)
    except fp.Rejected as exc:
        # A table the floor does not know is counted under no table: a forger naming
        # made-up tables must not grow the tally without bound.
        known = keyring.knows(site, table)
        return Quarantined(
            received,
            site if known else "",
            table if known else "",
            topic,
            exc.reason,
            exc.detail,
            payload,
        )
