"""PIN hashes: argon2id (``argon2-cffi``), the floor below which a stored hash is refused,
and the constant-time check of a PIN against a hash."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Final

from argon2 import Parameters, PasswordHasher, Type, extract_parameters
from argon2.exceptions import InvalidHashError, VerificationError


@dataclass(frozen=True)
class HashFloor:
    """The weakest argon2 parameters a users file may hold: argon2id, version 19, and at
    least these costs and lengths. The default is OWASP's minimum for argon2id (19 MiB of
    memory, two passes, one lane); :func:`new_hasher` hashes well above it."""

    memory_kib: int = 19 * 1024
    time_cost: int = 2
    parallelism: int = 1
    salt_bytes: int = 16
    hash_bytes: int = 16

    def shortfall(self, pin_hash: str) -> str | None:
        """What makes ``pin_hash`` weaker than this floor, or None when it is not."""
        try:
            found = extract_parameters(pin_hash)
        except (InvalidHashError, ValueError):
            return "it is not an argon2 hash"
        return self._below(found)

    def hasher_shortfall(self, hasher: PasswordHasher) -> str | None:
        """What makes the hashes ``hasher`` makes weaker than this floor, or None."""
        made = Parameters(
            type=hasher.type,
            version=19,
            salt_len=hasher.salt_len,
            hash_len=hasher.hash_len,
            time_cost=hasher.time_cost,
            memory_cost=hasher.memory_cost,
            parallelism=hasher.parallelism,
        )
        return self._below(made)

    def _below(self, found: Parameters) -> str | None:
        if found.type is not Type.ID or found.version != 19:
            return f"it is {found.type.name.lower()} version {found.version}, not argon2id 19"
        for what, have, floor in (
            ("memory", found.memory_cost, self.memory_kib),
            ("passes", found.time_cost, self.time_cost),
            ("lanes", found.parallelism, self.parallelism),
            ("salt bytes", found.salt_len, self.salt_bytes),
            ("hash bytes", found.hash_len, self.hash_bytes),
        ):
            if have < floor:
                return f"its {what} is {have}, below the floor of {floor}"
        return None


HASH_FLOOR: Final = HashFloor()


def new_hasher() -> PasswordHasher:
    """argon2id with RFC 9106's second recommended parameter set (64 MiB, 3 passes)."""
    return PasswordHasher()


def pin_matches(pin_hash: str, pin: str) -> bool:
    """Whether ``pin`` is the PIN ``pin_hash`` was made from (argon2's constant-time
    comparison; the hash names its own parameters)."""
    try:
        return _VERIFIER.verify(pin_hash, pin)
    except (VerificationError, InvalidHashError):
        return False


_VERIFIER = PasswordHasher()


@functools.cache
def decoy_hash(hasher: PasswordHasher) -> str:
    """A hash of no one's PIN, made with ``hasher``'s parameters: checking a PIN against it
    takes the time a real check takes."""
    return hasher.hash(os.urandom(8).hex())
