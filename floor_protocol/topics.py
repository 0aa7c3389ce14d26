"""The floor's topics: four per table, under ``shoes/SITE/TABLE/``.

- ``events``: the table's public records (box, QoS 1);
- ``head``: the journal's chain head (box, retained);
- ``status``: presence (box, retained; its Last Will marks it offline);
- ``replay``: the floor asks the box for records again (floor, QoS 1).
"""

from __future__ import annotations

import re
from typing import Final

from floor_protocol.errors import InvalidName

ROOT: Final = "shoes"
EVENTS: Final = "events"
HEAD: Final = "head"
STATUS: Final = "status"
REPLAY: Final = "replay"
#: What a box publishes, and what the floor publishes to a box.
FROM_BOX: Final = (EVENTS, HEAD, STATUS)
FROM_FLOOR: Final = (REPLAY,)
#: A site or table id is one topic level: no "/", no wildcard, readable in logs.
NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: The shared subscription of the floor's collectors: each record goes to one of them.
SHARE_GROUP: Final = "floor"


def check_name(value: object, what: str) -> str:
    """``value`` when it is usable as a site or table id; InvalidName otherwise."""
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise InvalidName(
            f"{what} is {value!r}; expected 1..64 letters, digits or . _ - starting with a "
            "letter or digit"
        )
    return value


def topic(site: str, table: str, leaf: str) -> str:
    """``shoes/SITE/TABLE/LEAF``."""
    return f"{ROOT}/{site}/{table}/{leaf}"


def split_topic(name: str) -> tuple[str, str, str] | None:
    """(site, table, leaf) of a table's topic, or None for any other topic (a malformed
    site or table id included)."""
    parts = name.split("/")
    if len(parts) != 4 or parts[0] != ROOT:
        return None
    site, table, leaf = parts[1], parts[2], parts[3]
    if not NAME.fullmatch(site) or not NAME.fullmatch(table):
        return None
    return site, table, leaf


def every_table(leaf: str) -> str:
    """The filter of ``leaf`` on every table of every site."""
    return f"{ROOT}/+/+/{leaf}"


def shared(filter_: str, group: str = SHARE_GROUP) -> str:
    """An MQTT 5 shared subscription of ``filter_`` for ``group``."""
    return f"$share/{group}/{filter_}"
