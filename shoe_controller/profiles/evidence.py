"""What a rules profile says about the evidence the box keeps, beside the table rules.

Two keys of a profile's ``[rules]`` are not rules of the deal but of its record, and the
service (not the procedure) applies them:

``stub``
    Rule E1: the stub's identities "no se enseñarán a persona alguna". ``"sealed"``: the
    shoe's reading of each stub card is kept in the restricted journal and sealed in every
    export; ``"commitment"``: the journal keeps only a keyed commitment to each stub card,
    which confirms a claimed stub in a dispute and shows nothing to whoever reads the
    journal (docs/journal.md).
``external_rng_signature``
    Rule B1: an external generator's number is accepted as typed (``"optional"``, and then
    recorded as unsigned) or only with its device's signature (``"required"``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from shoe_controller.errors import ConfigError


class StubRecord(enum.StrEnum):
    SEALED = "sealed"
    COMMITMENT = "commitment"


class RngSignature(enum.StrEnum):
    OPTIONAL = "optional"
    REQUIRED = "required"


@dataclass(frozen=True, slots=True)
class EvidenceRules:
    """The profile's rules for the record (validated)."""

    stub: StubRecord = StubRecord.SEALED
    external_rng_signature: RngSignature = RngSignature.OPTIONAL

    def plain(self) -> dict[str, Any]:
        """As the journal records them (in ``service_started``)."""
        return {
            "stub": self.stub.value,
            "external_rng_signature": self.external_rng_signature.value,
        }

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> EvidenceRules:
        values: dict[str, Any] = {}
        for key, kind in (("stub", StubRecord), ("external_rng_signature", RngSignature)):
            if key not in mapping:
                continue
            value = mapping[key]
            members = [member for member in kind if member.value == value]
            if not isinstance(value, str) or not members:
                raise ConfigError(
                    f"table.{key} is {value!r}; expected one of "
                    + ", ".join(repr(member.value) for member in kind)
                )
            values[key] = members[0]
        return cls(**values)


#: The profile keys these rules take; the others are the table's.
KEYS: Final = frozenset({"stub", "external_rng_signature"})
