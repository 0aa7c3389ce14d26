"""What the PIN-checking process runs (:class:`~.pinchecks.PinChecker`), in a module of its
own: the process imports the module of each function it is given, and this one needs only
the operating system and :func:`~.users.pin_matches`. So the process holds argon2 and
little else, not the procedure (the pacing's phases) nor asyncio.
"""

from __future__ import annotations

import contextlib
import os
from typing import Final

#: The checking process's niceness (the lowest priority), when the system lets it lower it.
NICENESS: Final = 19


def lower_priority() -> None:
    """The process's initializer: the lowest priority, where the system allows it."""
    with contextlib.suppress(OSError):  # forbidden (a seccomp filter): the same priority
        os.setpriority(os.PRIO_PROCESS, 0, NICENESS)


def ready() -> bool:
    """Answered once the process has started: the checker waits for it."""
    return True
