"""An external random number generator that signs its numbers, as the tests' device: its
own key (Ed25519, or a key shared for HMAC-SHA256), its counter, and the key file the box's
configuration names. It signs what docs/journal.md says a device signs, written out here
independently of the code under test."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from shoe_controller.service.external_rng import SignedNumber


@dataclass
class Device:
    name: str = "RNG-0042"
    algorithm: str = "ed25519"
    counter: int = 0
    private: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)
    shared: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def sign(self, number: int, counter: int, *, name: str | None = None) -> bytes:
        text = f"shoe-controller external rng v1\n{name or self.name}\n{number}\n{counter}"
        if self.algorithm == "hmac-sha256":
            return hmac.new(self.shared, text.encode("ascii"), hashlib.sha256).digest()
        return self.private.sign(text.encode("ascii"))

    def draw(self, number: int) -> SignedNumber:
        """The device's next number (the caller chooses it: the tests need to know it)."""
        self.counter += 1
        return SignedNumber(number, self.counter, self.sign(number, self.counter))

    def token(self, value: SignedNumber) -> str:
        return f"{value.number}:{value.counter}:{value.signature.hex()}"

    def key_file(self, directory: Path, *, pem: bool = True) -> Path:
        """The file the box's configuration names as the device's key."""
        path = directory / f"{self.name.lower()}.key"
        if self.algorithm == "hmac-sha256":
            path.write_text(self.shared.hex() + "\n")
            path.chmod(0o600)  # a shared key is the service's only
        elif pem:
            path.write_bytes(
                self.private.public_key().public_bytes(
                    Encoding.PEM, PublicFormat.SubjectPublicKeyInfo
                )
            )
        else:
            raw = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
            path.write_text(raw.hex() + "\n")
        return path

    def config(self, directory: Path, extra: str = "", *, pem: bool = True) -> str:
        """The configuration's ``[external_rng]`` section for this device."""
        key = self.key_file(directory, pem=pem)
        return (
            f'[external_rng]\ndevice = "{self.name}"\nalgorithm = "{self.algorithm}"\n'
            f'key = "{key}"\n{extra}'
        )
