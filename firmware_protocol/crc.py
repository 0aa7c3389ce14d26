"""The frame check sequence: CRC-16/IBM-3740 (also known as CRC-16/CCITT-FALSE).

Full parameter set, as in the catalogue of parametrised CRC algorithms:

==========  ======
width       16
poly        0x1021
init        0xFFFF
refin       false
refout      false
xorout      0x0000
check       0x29B1  (CRC of the ASCII bytes "123456789")
residue     0x0000
==========  ======

The CRC is sent most significant byte first, so that the CRC computed over a whole frame
including its CRC is 0x0000 (the residue), which is how firmware usually checks it.
"""

from __future__ import annotations

import binascii

WIDTH = 16
POLY = 0x1021
INIT = 0xFFFF
REFIN = False
REFOUT = False
XOROUT = 0x0000
CHECK = 0x29B1
RESIDUE = 0x0000
NAME = "CRC-16/IBM-3740"


def crc16(data: bytes | bytearray | memoryview, value: int = INIT) -> int:
    """CRC-16/IBM-3740 of ``data``; pass a previous result as ``value`` to continue it."""
    # binascii.crc_hqx is exactly poly 0x1021, non-reflected, no final xor.
    return binascii.crc_hqx(data, value) ^ XOROUT
