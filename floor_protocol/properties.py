"""The MQTT 5 properties of the floor's messages, as plain values: the drivers (paho on
both sides) turn them into their own property objects.

Every message carries ``content-type: application/json`` and the UTF-8 payload format
indicator. Its user properties, in this order, are those of its kind (records: ``journal``,
``seq``, ``prev``, ``mac``) and last its signature, ``sig``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

CONTENT_TYPE: Final = "application/json"
#: MQTT 5's payload format indicator: the payload is UTF-8 text.
PAYLOAD_UTF8: Final = 1
QOS: Final = 1

JOURNAL: Final = "journal"
SEQ: Final = "seq"
PREV: Final = "prev"
MAC: Final = "mac"
SIGNATURE: Final = "sig"
#: A list property (several records in one message) separates its items with this.
LIST_SEPARATOR: Final = ","
#: Properties a peer may send at most; more is malformed (a bounded dictionary to build).
MAX_PROPERTIES: Final = 16

UserProperties = tuple[tuple[str, str], ...]


def as_mapping(pairs: Iterable[tuple[str, str]]) -> Mapping[str, str] | None:
    """The user properties as a mapping; None when a name repeats or there are too many
    (a sender that conforms never does either)."""
    mapping: dict[str, str] = {}
    for count, (name, value) in enumerate(pairs, 1):
        if count > MAX_PROPERTIES or name in mapping:
            return None
        mapping[name] = value
    return mapping
