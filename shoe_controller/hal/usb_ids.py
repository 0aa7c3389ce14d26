"""The USB identity of our shoe: the one place in the code that names it.

Until a vendor ID of our own is assigned, the shoe uses the pid.codes open-source vendor ID
0x1209 with its test product ID 0x0001. The udev rules in ``udev/`` are checked against
these constants by the tests.
"""

from __future__ import annotations

from typing import Final

VENDOR_ID: Final = 0x1209
PRODUCT_ID: Final = 0x0001
#: The shoe's vendor-specific interface (bulk IN/OUT) in its USB configuration.
VENDOR_INTERFACE_CLASS: Final = 0xFF
#: (VID, PID) pairs recognised as candidate shoes during discovery.
KNOWN_SHOES: Final[tuple[tuple[int, int], ...]] = ((VENDOR_ID, PRODUCT_ID),)
#: The stable symlink the udev rules create for the shoe's serial interface.
SYMLINK: Final = "/dev/electronic-shoe"
#: The group that may open the shoe's device nodes.
DEVICE_GROUP: Final = "shoe"
