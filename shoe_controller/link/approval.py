"""The operator's approved list and the checks of rule A1.

A shoe is armed only when its model, firmware version and firmware digest match an entry of
the approved list and, when that entry names the approved firmware image, the shoe proves
it runs that image: the controller sends a random seed and compares the shoe's
HMAC-SHA256 (key: the seed, message: the image) with its own computed from the file.

The simulated shoe is approved out of the box only when it runs inside this process; over
a port it is a shoe like any other, approved only by an entry of the list.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from firmware_protocol import Capability, Message, Verify, VerifyResult
from shoe_controller.errors import ConfigError
from shoe_controller.files import open_regular
from shoe_controller.link.identity import ShoeIdentity

#: Bytes of random seed sent for a seeded verification (the protocol allows 16..64).
SEED_SIZE = 32
KEYS = ("model", "firmware_version", "firmware_digest", "image")
_REQUIRED = KEYS[:3]
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 16

SeedSource = Callable[[int], bytes]


@dataclass(frozen=True)
class ApprovedShoe:
    """One entry of the approved list. ``firmware_digest`` is the SHA-256 of the approved
    firmware image, 64 lower-case hexadecimal digits; ``image_path``, when given, enables
    seeded verification."""

    model: str
    firmware_version: str
    firmware_digest: str
    image_path: Path | None = None

    def __str__(self) -> str:
        return f"{self.model} firmware {self.firmware_version}"


@dataclass(frozen=True)
class Verdict:
    """Whether a shoe may be armed, and why.

    ``field`` names what did not match ("model", "firmware_version", "firmware_digest",
    "capabilities" or "verification"; None when approved). ``pending`` is true while a
    seeded verification is still to be done: the shoe is not armed until it passes.
    """

    approved: bool
    reason: str
    field: str | None = None
    entry: ApprovedShoe | None = None
    verified: bool = False
    pending: bool = False

    def __str__(self) -> str:
        return ("approved: " if self.approved else "not approved: ") + self.reason


class ApprovalList:
    """The approved shoes. Build it with :meth:`from_config`; check with :meth:`check`."""

    def __init__(self, entries: Sequence[ApprovedShoe] = ()) -> None:
        self._entries = tuple(entries)

    @classmethod
    def from_config(
        cls, entries: Sequence[Mapping[str, Any]], base_dir: Path | None = None
    ) -> ApprovalList:
        """Validate the ``[[approved_shoes]]`` tables of the configuration.

        Relative image paths are taken from ``base_dir`` (the configuration file's
        directory). Raises :class:`ConfigError` naming the entry and the key at fault.
        """
        parsed: list[ApprovedShoe] = []
        seen: dict[tuple[str, str], int] = {}
        for number, raw in enumerate(entries, start=1):
            entry = _parse_entry(number, raw, base_dir)
            key = (entry.model, entry.firmware_version)
            if key in seen:
                raise ConfigError(
                    f"approved_shoes entry {number}: {entry} is already listed in entry "
                    f"{seen[key]}; keep one entry per model and firmware version"
                )
            seen[key] = number
            parsed.append(entry)
        return cls(parsed)

    def __iter__(self) -> Iterator[ApprovedShoe]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def check(self, identity: ShoeIdentity, transport_is_in_process_simulator: bool) -> Verdict:
        """The verdict on ``identity`` by the list alone (rule A1).

        When the matching entry names an image, the verdict is not yet approved but
        ``pending``: run a :class:`Challenge` to complete it.
        """
        same_model = [e for e in self._entries if e.model == identity.model]
        if not same_model:
            if transport_is_in_process_simulator:
                return Verdict(True, "the in-process simulated shoe is approved for testing")
            return Verdict(
                False,
                f"model: {identity.model!r} is not on the approved list",
                field="model",
            )
        entry = next(
            (e for e in same_model if e.firmware_version == identity.firmware_version), None
        )
        if entry is None:
            approved = ", ".join(e.firmware_version for e in same_model)
            return Verdict(
                False,
                f"firmware_version: {identity.model} firmware {identity.firmware_version!r} "
                f"is not approved (approved: {approved})",
                field="firmware_version",
            )
        if not hmac.compare_digest(identity.firmware_digest, entry.firmware_digest):
            return Verdict(
                False,
                f"firmware_digest: {entry} reports digest {identity.firmware_digest[:16]}..., "
                f"the approved digest is {entry.firmware_digest[:16]}...",
                field="firmware_digest",
                entry=entry,
            )
        if entry.image_path is None:
            return Verdict(True, f"{entry} is on the approved list", entry=entry)
        if not identity.supports(Capability.SEEDED_VERIFY):
            return Verdict(
                False,
                f"capabilities: {entry} must be verified against its image, but the shoe "
                "does not offer seeded verification",
                field="capabilities",
                entry=entry,
            )
        return Verdict(
            False,
            f"verification: {entry} is awaiting seeded verification",
            field="verification",
            entry=entry,
            pending=True,
        )


@dataclass(frozen=True)
class Challenge:
    """One seeded verification: send :attr:`message`, then :meth:`judge` the answer."""

    entry: ApprovedShoe
    seed: bytes

    @classmethod
    def new(cls, entry: ApprovedShoe, token_bytes: SeedSource = secrets.token_bytes) -> Challenge:
        if entry.image_path is None:
            raise ValueError(f"{entry} has no image on file to verify against")
        seed = token_bytes(SEED_SIZE)
        if len(seed) != SEED_SIZE:
            raise ValueError(f"the seed source gave {len(seed)} bytes, not {SEED_SIZE}")
        return cls(entry, seed)

    @property
    def message(self) -> Verify:
        return Verify(self.seed)

    def judge(self, reply: Message | None, failure: str = "") -> Verdict:
        """The verdict on the shoe's reply; None (with ``failure`` saying why) when the
        command failed. Anything but the right digest for this seed is unverified."""
        if not isinstance(reply, VerifyResult):
            why = failure or f"it answered {type(reply).__name__}"
            return self._unverified(f"the shoe did not return a keyed digest ({why})")
        if not hmac.compare_digest(reply.seed, self.seed):
            return self._unverified("the shoe echoed a different seed than the one sent")
        assert self.entry.image_path is not None  # checked in new()
        try:
            image_sha256, expected = _digests(self.entry.image_path, self.seed)
        except OSError as exc:
            return self._unverified(
                f"cannot read the approved image {self.entry.image_path}: {exc.strerror or exc}"
            )
        if not hmac.compare_digest(image_sha256, self.entry.firmware_digest):
            return self._unverified(
                f"the approved image {self.entry.image_path} does not have the approved "
                "firmware_digest; replace the file or correct the entry"
            )
        if not hmac.compare_digest(reply.digest, expected):
            return self._unverified(
                f"the shoe's keyed digest does not match the approved image {self.entry.image_path}"
            )
        return Verdict(
            True,
            f"{self.entry} is on the approved list; seeded verification passed",
            entry=self.entry,
            verified=True,
        )

    def _unverified(self, why: str) -> Verdict:
        return Verdict(False, f"verification: {why}", field="verification", entry=self.entry)


def keyed_digest(image_path: Path, seed: bytes) -> bytes:
    """HMAC-SHA256 of the image file keyed with ``seed``, as a conforming shoe computes it."""
    return _digests(image_path, seed)[1]


def _digests(image_path: Path, seed: bytes) -> tuple[str, bytes]:
    plain = hashlib.sha256()
    keyed = hmac.new(seed, digestmod=hashlib.sha256)
    # A regular file only: a FIFO or a device named as the image would block or never end.
    with open_regular(image_path) as image:
        while chunk := image.read(_CHUNK):
            plain.update(chunk)
            keyed.update(chunk)
    return plain.hexdigest(), keyed.digest()


def _parse_entry(number: int, raw: object, base_dir: Path | None) -> ApprovedShoe:
    where = f"approved_shoes entry {number}"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a table ([[approved_shoes]]), not {raw!r}")
    for key in raw:
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}; known keys: {', '.join(KEYS)}")
    for key in _REQUIRED:
        if key not in raw:
            raise ConfigError(f"{where}: key {key!r} is missing")
        value = raw[key]
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: key {key!r} must be a non-empty string, not {value!r}")
    where = f"{where} ({raw['model']} firmware {raw['firmware_version']})"
    digest = str(raw["firmware_digest"]).strip().lower()
    if not _HEX_DIGEST.fullmatch(digest):
        raise ConfigError(
            f"{where}: key 'firmware_digest' must be 64 hexadecimal digits (the SHA-256 of "
            f"the firmware image), not {raw['firmware_digest']!r}"
        )
    image = raw.get("image")
    image_path: Path | None = None
    if image is not None:
        if not isinstance(image, str) or not image.strip():
            raise ConfigError(f"{where}: key 'image' must be a file path, not {image!r}")
        if "\x00" in image:
            raise ConfigError(f"{where}: key 'image' holds a NUL byte: give a file path")
        try:
            image_path = Path(image).expanduser()
        except RuntimeError:  # "~name" of a user this system does not know
            raise ConfigError(
                f"{where}: key 'image' is {image!r}, whose home directory is unknown: "
                "give an absolute path"
            ) from None
        if not image_path.is_absolute() and base_dir is not None:
            image_path = base_dir / image_path
        try:
            image_sha256, _ = _digests(image_path, b"")
        except OSError as exc:
            raise ConfigError(
                f"{where}: key 'image': cannot read {image_path} "
                f"({exc.strerror or exc}); give the approved firmware image file"
            ) from None
        if image_sha256 != digest:
            raise ConfigError(
                f"{where}: key 'image': the SHA-256 of {image_path} is {image_sha256}, not "
                "the entry's firmware_digest; give the approved image or correct the digest"
            )
    return ApprovedShoe(
        model=str(raw["model"]).strip(),
        firmware_version=str(raw["firmware_version"]).strip(),
        firmware_digest=digest,
        image_path=image_path,
    )
