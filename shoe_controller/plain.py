"""One conversion of the project's values to JSON-ready data, for the journal, the event
stream and the tools' ``--json`` output alike.

Cards become their text form (``"QH"``, ``"JK"``, ``"??"``), integer enums their lower-case
name, other enums their value, dataclasses dicts of their fields, sequences and sets lists
(sets sorted), mappings dicts with string keys, bytes lower-case hexadecimal.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from firmware_protocol import Card

#: Returned as they are; most values are one of these, and the journal converts several
#: for every card. Exact types: a bool or an IntEnum is an int subclass, not an int.
_AS_THEY_ARE: frozenset[type] = frozenset({int, str, float, bool, type(None)})


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data (see the module documentation)."""
    if type(value) in _AS_THEY_ARE:
        return value
    if isinstance(value, Card):
        return value.text
    if isinstance(value, enum.Enum):
        return value.name.lower() if isinstance(value, enum.IntEnum) else value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, frozenset | set):
        return sorted(plain(v) for v in value)
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    return value
