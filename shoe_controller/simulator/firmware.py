"""The simulated shoe's identity and its firmware image.

The image is deterministic bytes, the same in every installation, so that an operator can
write it to a file (``IMAGE``) and list the simulator on a bench approval list exactly as a
real shoe's image is listed: by its SHA-256 digest, and verified with a seeded HMAC.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

MODEL: Final = "ES-SIM"
HARDWARE_REVISION: Final = "sim-1"
FIRMWARE_VERSION: Final = "1.0.0"
DEFAULT_SERIAL_NUMBER: Final = "SIM-00001"

_IMAGE_SIZE = 32 * 1024
_HEADER = f"{MODEL} firmware {FIRMWARE_VERSION}\n".encode("ascii")


def _build_image() -> bytes:
    # A counter-mode SHA-256 stream: incompressible like real code, yet reproducible.
    body = bytearray(_HEADER)
    counter = 0
    while len(body) < _IMAGE_SIZE:
        body += hashlib.sha256(_HEADER + counter.to_bytes(4, "big")).digest()
        counter += 1
    return bytes(body[:_IMAGE_SIZE])


#: The firmware image the simulated shoe runs.
IMAGE: Final[bytes] = _build_image()
#: SHA-256 of :data:`IMAGE`, as the shoe reports it in Hello.
DIGEST: Final[bytes] = hashlib.sha256(IMAGE).digest()

#: Seeds a shoe accepts in Verify, in bytes (docs/protocol.md).
VERIFY_SEED_MIN: Final = 16
VERIFY_SEED_MAX: Final = 64


def keyed_digest(seed: bytes, image: bytes = IMAGE) -> bytes:
    """HMAC-SHA256 of ``image`` keyed with ``seed``: what the shoe answers to Verify."""
    return hmac.new(seed, image, hashlib.sha256).digest()
