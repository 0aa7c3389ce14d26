"""What the journal keeps of failed sign-ins: little, whatever a client sends.

Each failed sign-in used to be a journal record holding the name as sent: a client could
grow the journal without signing in. Now, per client address:

- the first failure in a minute is journaled at once, as an ``access`` record ``sign_in``
  (not accepted), the name cut to :data:`NAME_CHARS` characters and escaped (:func:`shown`);
- the next failures within that minute are only counted, and journaled as one
  ``sign_in_failures`` record when the minute is over: how many, and the first
  :data:`NAMES_KEPT` names tried (cut and escaped);
- a lock (of a name or of the client) is journaled at once, as a ``lockout`` record: the
  limits of :mod:`.attempts` bound how often that can happen.

So a client adds at most a few short records a minute, however fast it tries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

#: Characters of a user name kept in the journal (a real one has at most 32).
NAME_CHARS: Final = 32
#: Seconds over which a client's failures are gathered into one record.
WINDOW_S: Final = 60.0
#: Names tried kept in a gathered record.
NAMES_KEPT: Final = 5
#: Clients counted apart at most; past that, the rest are gathered as one.
MAX_CLIENTS: Final = 1024
OTHER_CLIENTS: Final = "other clients"


def shown(text: str, limit: int = NAME_CHARS) -> str:
    """``text`` as the journal keeps it: at most ``limit`` characters, printable ASCII, each
    other character (and the backslash) escaped, its full length said when it was cut."""
    out = []
    for ch in text[:limit]:
        if ch == "\\":
            out.append("\\\\")
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    if len(text) > limit:
        out.append(f"...[{len(text)} characters]")
    return "".join(out)


@dataclass(frozen=True)
class AccessRecord:
    """One ``access`` record to journal (``record_access``'s arguments)."""

    action: str
    user: str
    role: str
    accepted: bool
    detail: str


@dataclass
class _Window:
    start: float
    peer: str
    count: int = 0
    names: list[str] = field(default_factory=list)
    #: Tries of names past the first NAMES_KEPT.
    more_names: int = 0


class FailedSignIns:
    """Decides which failed sign-ins are journaled now and gathers the rest. Used on one
    thread (the server's loop)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._windows: dict[str, _Window] = {}

    def failed(self, client: str, peer: str, name: str, role: str, why: str) -> AccessRecord | None:
        """A failed sign-in from ``client`` (its key) at ``peer``: the record to journal now,
        or None when it is gathered into the minute's record."""
        window = self._windows.get(client)
        if window is None:
            now = self._clock()
            if len(self._windows) < MAX_CLIENTS:
                self._windows[client] = _Window(now, peer)
                return AccessRecord("sign_in", shown(name), role, False, f"{why} from {peer}")
            window = self._windows.setdefault(OTHER_CLIENTS, _Window(now, OTHER_CLIENTS))
        window.count += 1
        name = shown(name)
        if name not in window.names:
            if len(window.names) < NAMES_KEPT:
                window.names.append(name)
            else:
                window.more_names += 1
        return None

    def due(self, *, everything: bool = False) -> list[AccessRecord]:
        """The gathered records whose minute is over (``everything``: all of them, at a
        stop); their windows are closed."""
        now = self._clock()
        records = []
        for client, window in list(self._windows.items()):
            if not everything and now - window.start < WINDOW_S:
                continue
            del self._windows[client]
            if window.count:
                records.append(_gathered(window, now))
        return records


def lockout(
    name: str, role: str, peer: str, retry_after: float, client_locked: bool
) -> AccessRecord:
    """The record of a lock that a failure from ``peer`` set."""
    if client_locked:
        detail = f"client {peer} locked for {retry_after:.0f} s"
    else:
        detail = f"name locked for {retry_after:.0f} s; the last wrong PIN came from {peer}"
    return AccessRecord("lockout", shown(name), role, False, detail)


def _gathered(window: _Window, now: float) -> AccessRecord:
    names = ", ".join(repr(n) for n in window.names)
    if window.more_names:
        names += f", and {window.more_names} tries of other names"
    seconds = min(now - window.start, WINDOW_S)
    detail = (
        f"{window.count} more failed sign-ins from {window.peer} within {seconds:.0f} s; "
        f"names tried: {names}"
    )
    return AccessRecord("sign_in_failures", "", "", False, detail)
