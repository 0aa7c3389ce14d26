"""Who the shoe says it is: the identity carried by its Hello."""

from __future__ import annotations

from dataclasses import dataclass

from firmware_protocol import Capability, Hello


@dataclass(frozen=True, slots=True)
class ShoeIdentity:
    """The identity a shoe reports at every handshake (rule A1).

    ``firmware_digest`` is the lower-case hexadecimal form of the digest the shoe reports;
    ``boot_id`` changes every time the shoe's firmware starts.
    """

    model: str
    serial_number: str
    hardware_revision: str
    firmware_version: str
    firmware_digest: str
    capabilities: Capability
    boot_id: int
    protocol_versions: tuple[int, ...]

    @classmethod
    def from_hello(cls, hello: Hello) -> ShoeIdentity:
        return cls(
            model=hello.model,
            serial_number=hello.serial_number,
            hardware_revision=hello.hardware_revision,
            firmware_version=hello.firmware_version,
            firmware_digest=hello.firmware_digest.hex(),
            # Bits a newer firmware defines are kept, so diagnostics can show them.
            capabilities=Capability(hello.capabilities),
            boot_id=hello.boot_id,
            protocol_versions=tuple(hello.protocol_versions),
        )

    def same_shoe(self, other: ShoeIdentity) -> bool:
        """True when ``other`` is this shoe running the same firmware, boot aside."""
        return (
            self.model,
            self.serial_number,
            self.hardware_revision,
            self.firmware_version,
            self.firmware_digest,
        ) == (
            other.model,
            other.serial_number,
            other.hardware_revision,
            other.firmware_version,
            other.firmware_digest,
        )

    def is_shoe(self, model: str, serial_number: str) -> bool:
        """Whether this is the shoe with ``model`` and ``serial_number``: both must match,
        since a serial number is unique only within its model."""
        return (self.model, self.serial_number) == (model, serial_number)

    def supports(self, capability: Capability) -> bool:
        return capability in self.capabilities

    def __str__(self) -> str:
        return (
            f"{self.model} serial {self.serial_number} hardware {self.hardware_revision} "
            f"firmware {self.firmware_version}"
        )
