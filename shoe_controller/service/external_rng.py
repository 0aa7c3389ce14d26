"""An external approved generator's signed number (rule B1).

Without a device configured, the dealer types the external generator's number and nothing
checks it. With one, the configuration's ``[external_rng]`` section names the device and
its key, and the device signs each number it gives::

    [external_rng]
    device = "RNG-0042"                              # its name, as it signs it
    algorithm = "ed25519"                            # or "hmac-sha256"
    key = "/etc/shoe-controller/rng-0042.pub"        # its public key, or the shared key

What the device signs is the ASCII text ::

    shoe-controller external rng v1 LF device LF number LF counter

(``number`` 1..7 and ``counter``, the device's own count of the numbers it gave, in
decimal), with its Ed25519 private key (the ``key`` file: the public key, PEM or 64 hex
digits) or by HMAC-SHA256 under a key shared with the box (the ``key`` file: 64 or more
hex digits, readable by the service only). The device shows the signed value as one token,
``NUMBER:COUNTER:SIGNATURE`` (the signature in hex), which the dealer types or scans.

:class:`ExternalRng` checks a value before the procedure takes the number: the signature
must be the configured device's over that number and counter, and the counter above the
last one accepted (kept in the journal: every accepted number is an ``external_rng``
record, signed or not), so that a value is never accepted twice. Counters skipped (numbers
the device gave that never reached the table) are recorded. Where the rules profile says
``external_rng_signature = "required"``, a number without a signature is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from shoe_controller.errors import ConfigError
from shoe_controller.files import FileTooLarge, NotRegularFile, read_regular
from shoe_controller.procedure import refusals

ALGORITHMS: Final = ("ed25519", "hmac-sha256")
_LABEL: Final = "shoe-controller external rng v1"
_DEVICE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
_TOKEN: Final = re.compile(r"\s*(\d{1,3}):(\d{1,19}):([0-9A-Fa-f]{2,256})\s*")
_MAX_KEY_FILE: Final = 16 << 10
#: A counter fits SQLite's integers and JSON's exact ones.
MAX_COUNTER: Final = 2**53 - 1

Verify = Callable[[bytes, bytes], bool]


@dataclass(frozen=True, slots=True)
class ExternalRngSettings:
    """The ``[external_rng]`` section."""

    device: str
    algorithm: str
    key: Path


@dataclass(frozen=True, slots=True)
class SignedNumber:
    """What the device gave: the number, its counter, its signature."""

    number: int
    counter: int
    signature: bytes


def signed_message(device: str, number: int, counter: int) -> bytes:
    """The bytes the device signs for ``number`` at ``counter``."""
    return f"{_LABEL}\n{device}\n{number}\n{counter}".encode("ascii")


def parse_signed_value(text: str) -> SignedNumber:
    """``NUMBER:COUNTER:SIGNATURE`` (the signature in hex) as the device shows it; a
    ProcedureError saying what is expected otherwise."""
    match = _TOKEN.fullmatch(text)
    if match is None or len(match[3]) % 2:
        raise refusals.not_a_signed_value(text).error()
    return SignedNumber(int(match[1]), int(match[2]), bytes.fromhex(match[3]))


def parse_section(section: Mapping[str, Any], base: Path, where: str) -> ExternalRngSettings | None:
    """The configuration's ``[external_rng]`` section (None when absent); a ConfigError
    naming the key otherwise. The key file is read when the service starts."""
    if not section:
        return None
    known = ("device", "algorithm", "key")
    for key in section:
        if key not in known:
            raise ConfigError(
                f"{where}unknown key external_rng.{key}; known keys in [external_rng]: "
                + ", ".join(known)
            )
    device = section.get("device")
    if not isinstance(device, str) or not _DEVICE.fullmatch(device):
        raise ConfigError(
            f"{where}external_rng.device is {device!r}; expected the device's name as it signs "
            "it: 1 to 64 letters, digits or . _ : -"
        )
    algorithm = section.get("algorithm")
    if algorithm not in ALGORITHMS:
        raise ConfigError(
            f"{where}external_rng.algorithm is {algorithm!r}; expected one of "
            + ", ".join(repr(a) for a in ALGORITHMS)
        )
    key_file = section.get("key")
    if not isinstance(key_file, str) or not key_file or "\x00" in key_file:
        raise ConfigError(f"{where}external_rng.key must be the path of the device's key file")
    try:
        path = Path(key_file).expanduser()
    except RuntimeError:
        raise ConfigError(
            f"{where}external_rng.key is {key_file!r}, whose home directory is unknown here: "
            "give an absolute path"
        ) from None
    return ExternalRngSettings(device, str(algorithm), path if path.is_absolute() else base / path)


def load_verifier(settings: ExternalRngSettings) -> Verify:
    """A function telling whether a signature is the device's over a message, from its key
    file; a ConfigError saying what is wrong with the file otherwise."""
    path = settings.key
    try:
        raw = read_regular(path, _MAX_KEY_FILE)
    except FileNotFoundError:
        raise ConfigError(
            f"external_rng.key {path} does not exist: install the generator's key file there"
        ) from None
    except (NotRegularFile, FileTooLarge, IsADirectoryError) as exc:
        raise ConfigError(f"external_rng.key {path} is not a key file: {exc.strerror}") from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read external_rng.key {path}: {exc.strerror or exc}; make it readable by "
            "the service's user"
        ) from None
    if settings.algorithm == "hmac-sha256":
        verify = _hmac_verifier(path, raw)
        _refuse_exposed(path)
        return verify
    return _ed25519_verifier(path, raw)


def _refuse_exposed(path: Path) -> None:
    """A key shared with the generator signs numbers: one that other accounts may read
    (its group or others) is refused, not used."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return  # it was just read: what changed since is the next start's to say
    if mode & 0o077:
        raise ConfigError(
            f"external_rng.key {path} has mode {mode:04o}: other accounts can read the key "
            "shared with the generator, and with it sign numbers; make it the service "
            f"user's only: chown shoe-controller {path} && chmod 600 {path}"
        )


def _hmac_verifier(path: Path, raw: bytes) -> Verify:
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except ValueError:
        key = b""
    if len(key) < 32:
        raise ConfigError(
            f"external_rng.key {path} is not an HMAC key: expected 64 or more hex digits"
        )

    def verify(signature: bytes, message: bytes) -> bool:
        expected = hmac.new(key, message, hashlib.sha256).digest()
        return hmac.compare_digest(expected, signature)

    return verify


def _ed25519_verifier(path: Path, raw: bytes) -> Verify:
    problem = ConfigError(
        f"external_rng.key {path} is not an Ed25519 public key: expected a PEM public key "
        "(-----BEGIN PUBLIC KEY-----) or 64 hex digits"
    )
    try:
        if raw.lstrip().startswith(b"-----BEGIN"):
            key = load_pem_public_key(raw)
        else:
            key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(raw.decode("ascii").strip()))
    except (ValueError, TypeError, UnicodeDecodeError):
        raise problem from None
    if not isinstance(key, Ed25519PublicKey):
        raise problem

    def verify(signature: bytes, message: bytes) -> bool:
        try:
            key.verify(signature, message)
        except InvalidSignature:
            return False
        return True

    return verify


class ExternalRng:
    """Accepts an external generator's numbers as the profile and the configured device
    allow (see the module's docstring)."""

    def __init__(
        self,
        settings: ExternalRngSettings | None,
        *,
        required: bool,
        verify: Verify | None = None,
        last_counter: int | None = None,
    ) -> None:
        self.settings = settings
        self.required = required
        self._verify = verify
        self.last_counter = last_counter

    @classmethod
    def at_start(
        cls,
        settings: ExternalRngSettings | None,
        *,
        required: bool,
        journaled: Iterable[Mapping[str, Any]],
    ) -> ExternalRng:
        """Ready for a start: the device's key read, and its last counter found among the
        ``external_rng`` records ``journaled`` (payloads, oldest first)."""
        if settings is None:
            return cls(None, required=required)
        counters = [
            int(p["counter"])
            for p in journaled
            if p.get("signed") is True
            and p.get("device") == settings.device
            and type(p.get("counter")) is int
        ]
        return cls(
            settings,
            required=required,
            verify=load_verifier(settings),
            last_counter=max(counters, default=None),
        )

    def check(self, number: int, signed: SignedNumber | None) -> dict[str, Any]:
        """The ``external_rng`` record for ``number`` (and its signed value), or the
        ProcedureError saying why it is refused. Nothing changes until :meth:`accepted`."""
        if signed is None:
            if self.required:
                raise refusals.signature_required().error()
            return {"number": number, "signed": False}
        settings, verify = self.settings, self._verify
        if settings is None or verify is None:
            raise refusals.no_generator().error()
        if signed.number != number:
            raise refusals.signed_other_number(signed.number, number).error()
        if not 0 <= signed.counter <= MAX_COUNTER:
            raise refusals.counter_range(signed.counter).error()
        message = signed_message(settings.device, signed.number, signed.counter)
        if not verify(signed.signature, message):
            raise refusals.bad_signature(settings.device, signed.number, signed.counter).error()
        last = self.last_counter
        if last is not None and signed.counter <= last:
            raise refusals.counter_used(settings.device, signed.counter, last).error()
        return {
            "number": number,
            "signed": True,
            "device": settings.device,
            "algorithm": settings.algorithm,
            "counter": signed.counter,
            "signature": signed.signature.hex(),
            # Numbers the device gave that never reached the table, since the last one.
            "skipped": 0 if last is None else signed.counter - last - 1,
        }

    def accepted(self, record: Mapping[str, Any]) -> None:
        """The number of ``record`` was journaled: its counter is used."""
        if record.get("signed") is True:
            self.last_counter = int(record["counter"])
