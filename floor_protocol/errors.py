"""Why a floor message is refused: one exception, with a reason from a fixed set.

The collector keeps a refused message in quarantine under its reason, so that the reasons
are few, stable and countable; ``detail`` says what exactly was wrong, for people.
"""

from __future__ import annotations

from typing import Final

#: Not what its topic promises: no JSON, a missing property, a number out of range.
MALFORMED: Final = "malformed"
#: Well formed, but outside the published schema (schema.json): sizes, counts, values.
SCHEMA: Final = "schema"
#: No signature at all.
UNSIGNED: Final = "unsigned"
#: A signature, but no key is enrolled for the site and table the message claims.
UNKNOWN_SENDER: Final = "unknown_sender"
#: A signature that none of the claimed sender's keys made: forged or altered.
FORGED: Final = "forged"

REASONS: Final = (MALFORMED, SCHEMA, UNSIGNED, UNKNOWN_SENDER, FORGED)


class Rejected(ValueError):
    """A message the floor (or a box) must not act on."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class InvalidName(ValueError):
    """A site or table id that cannot be one topic level."""
