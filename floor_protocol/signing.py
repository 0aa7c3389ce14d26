"""Signatures: every message a box publishes, and every replay request the floor sends,
is signed with the sender's Ed25519 key over the exact bytes and the identifiers it
claims.

What is signed is a fixed context string, the topic (so the site, the table and the kind
of message), every user property but the signature itself (so the journal and the
sequence numbers), and the payload, each preceded by its length (4 bytes, big-endian), so
that no two different messages sign the same bytes. The signature travels as the last user
property, ``sig``, in base64.

Keys are PEM files: a sender's private key (PKCS #8, readable by its owner only) and the
public key the other side enrols (SubjectPublicKeyInfo). A key is shown to people by its
fingerprint, ``SHA256:`` and the base64 of the SHA-256 of its 32 raw bytes (as OpenSSH
shows keys).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections.abc import Iterable, Sequence
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from floor_protocol.errors import FORGED, UNKNOWN_SENDER, UNSIGNED, Rejected
from floor_protocol.properties import SIGNATURE, UserProperties

CONTEXT: Final = b"shoe-floor signature 1"
SIGNATURE_SIZE: Final = 64
#: base64 of 64 bytes.
_SIGNATURE_TEXT: Final = 88


class BadKey(ValueError):
    """A key file that is not an Ed25519 key of the kind expected."""


def signed_bytes(topic: str, properties: Iterable[tuple[str, str]], payload: bytes) -> bytes:
    """What a signature covers: the context, the topic, each user property but ``sig``
    (name, then value), and the payload, each length-prefixed."""
    parts = [CONTEXT, topic.encode("utf-8")]
    for name, value in properties:
        if name != SIGNATURE:
            parts += [name.encode("utf-8"), value.encode("utf-8")]
    parts.append(payload)
    return b"".join(struct.pack(">I", len(part)) + part for part in parts)


class VerifyKey:
    """A sender's public key."""

    def __init__(self, key: Ed25519PublicKey) -> None:
        self._key = key
        self.raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.fingerprint = fingerprint(self.raw)

    @classmethod
    def from_pem(cls, data: bytes) -> VerifyKey:
        try:
            key = serialization.load_pem_public_key(data)
        except (ValueError, TypeError) as exc:
            raise BadKey(f"not a PEM public key ({exc})") from None
        if not isinstance(key, Ed25519PublicKey):
            raise BadKey("not an Ed25519 public key")
        return cls(key)

    @classmethod
    def from_raw(cls, raw: bytes) -> VerifyKey:
        try:
            return cls(Ed25519PublicKey.from_public_bytes(raw))
        except ValueError as exc:
            raise BadKey(f"not an Ed25519 public key ({exc})") from None

    def to_pem(self) -> bytes:
        return self._key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def verifies(self, signature: bytes, data: bytes) -> bool:
        try:
            self._key.verify(signature, data)
        except InvalidSignature:
            return False
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VerifyKey) and other.raw == self.raw

    def __hash__(self) -> int:
        return hash(self.raw)

    def __repr__(self) -> str:
        return f"VerifyKey({self.fingerprint})"


class SigningKey:
    """A sender's private key: signs what it publishes."""

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self._key = key
        self.public = VerifyKey(key.public_key())

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> SigningKey:
        """The key of a 32-byte seed (test vectors)."""
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @classmethod
    def from_pem(cls, data: bytes) -> SigningKey:
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise BadKey(f"not an unencrypted PEM private key ({exc})") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise BadKey("not an Ed25519 private key")
        return cls(key)

    def to_pem(self) -> bytes:
        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def sign(self, topic: str, properties: UserProperties, payload: bytes) -> UserProperties:
        """``properties`` with the signature of the message appended."""
        signature = self._key.sign(signed_bytes(topic, properties, payload))
        return (*properties, (SIGNATURE, base64.b64encode(signature).decode("ascii")))


def fingerprint(raw: bytes) -> str:
    digest = hashlib.sha256(raw).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def signature_of(properties: Sequence[tuple[str, str]]) -> bytes:
    """The message's signature; Rejected (unsigned) when it has none, or not the last
    property, or not a signature's size."""
    if not properties or properties[-1][0] != SIGNATURE:
        raise Rejected(UNSIGNED, "the message carries no signature")
    text = properties[-1][1]
    if len(text) != _SIGNATURE_TEXT:
        raise Rejected(UNSIGNED, "the signature is not an Ed25519 signature")
    try:
        signature = base64.b64decode(text, validate=True)
    except binascii.Error:
        raise Rejected(UNSIGNED, "the signature is not base64") from None
    return signature


def check_signature(
    topic: str,
    properties: Sequence[tuple[str, str]],
    payload: bytes,
    keys: Sequence[VerifyKey],
    sender: str,
) -> VerifyKey:
    """The key among ``keys`` (the claimed sender's) that signed the message; Rejected
    when it is unsigned, when the sender has no key, or when no key of it signed."""
    signature = signature_of(properties)
    if not keys:
        raise Rejected(UNKNOWN_SENDER, f"no key is enrolled for {sender}")
    data = signed_bytes(topic, properties, payload)
    for key in keys:
        if key.verifies(signature, data):
            return key
    raise Rejected(FORGED, f"the signature is not one of {sender}'s keys")
