"""What the journal keeps of failed sign-ins: little, whatever a client sends, and never a
commit of its own while cards are dealt.

Each failed sign-in used to be a journal record holding the name as sent: a client could
grow the journal without signing in, and every record was a durable commit on the table's
own thread. Now a client's failed sign-ins (per client address) are gathered over each
minute and journaled once the minute is over, all clients' together:

- one ``sign_in_failures`` record per client and minute: how many, why (wrong PIN, unknown
  name, refused while locked), and the first :data:`NAMES_KEPT` names tried, each cut to
  :data:`NAME_CHARS` characters and escaped (:func:`shown`);
- one ``lockout`` record for each lock a failure set (of a name, or of the client), at
  most :data:`LOCKS_KEPT` a client and minute (the limits of :mod:`.attempts` allow fewer).

So a client adds a few short records a minute, however fast it tries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

#: Characters of a user name kept in the journal (a real one has at most 32).
NAME_CHARS: Final = 32
#: Seconds over which failed sign-ins are gathered.
WINDOW_S: Final = 60.0
#: Names tried kept in a gathered record.
NAMES_KEPT: Final = 5
#: Lock records kept for one client and minute.
LOCKS_KEPT: Final = 5
#: Clients counted apart at most in a minute; past that, the rest are gathered as one.
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
    minute: int
    peer: str
    why: Counter[str] = field(default_factory=Counter)
    names: list[str] = field(default_factory=list)
    #: Tries of names past the first NAMES_KEPT.
    more_names: int = 0
    locks: list[AccessRecord] = field(default_factory=list)
    more_locks: int = 0


class FailedSignIns:
    """Gathers failed sign-ins per client and minute. Used on one thread (the server's
    loop); ``clock`` gives seconds."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._windows: dict[str, _Window] = {}

    def _window(self, client: str, peer: str) -> _Window:
        # A window of a minute that is over but not yet journaled goes on counting: due()
        # journals it at its next look, a moment later.
        window = self._windows.get(client)
        if window is None and len(self._windows) >= MAX_CLIENTS:
            client, peer = OTHER_CLIENTS, OTHER_CLIENTS
            window = self._windows.get(client)
        if window is None:
            window = self._windows[client] = _Window(int(self._clock() // WINDOW_S), peer)
        return window

    def failed(self, client: str, peer: str, name: str, why: str) -> None:
        """A failed sign-in from ``client`` (its key) at ``peer``, for ``why``."""
        window = self._window(client, peer)
        window.why[why] += 1
        kept = shown(name)
        if kept not in window.names:
            if len(window.names) < NAMES_KEPT:
                window.names.append(kept)
            else:
                window.more_names += 1

    def locked(
        self,
        client: str,
        peer: str,
        name: str,
        role: str,
        *,
        retry_after: float,
        client_locked: bool,
    ) -> None:
        """A lock the last failure from ``client`` set."""
        window = self._window(client, peer)
        if len(window.locks) >= LOCKS_KEPT:
            window.more_locks += 1
            return
        if client_locked:
            detail = f"client {peer} locked for {retry_after:.0f} s"
        else:
            detail = f"name locked for {retry_after:.0f} s; the last wrong PIN came from {peer}"
        window.locks.append(AccessRecord("lockout", shown(name), role, False, detail))

    def due(self, *, everything: bool = False) -> list[AccessRecord]:
        """The records of the minutes that are over (``everything``: of all, at a stop);
        their windows are closed."""
        minute = int(self._clock() // WINDOW_S)
        records: list[AccessRecord] = []
        for client, window in list(self._windows.items()):
            if everything or window.minute < minute:
                del self._windows[client]
                records += _records(window)
        return records


def _records(window: _Window) -> list[AccessRecord]:
    records = list(window.locks)
    if window.more_locks:
        records.append(
            AccessRecord(
                "lockout", "", "", False, f"{window.more_locks} more locks from {window.peer}"
            )
        )
    count = sum(window.why.values())
    if count:
        why = ", ".join(f"{what} {n}" for what, n in sorted(window.why.items()))
        names = ", ".join(f"'{n}'" for n in window.names)
        if window.more_names:
            names += f", and {window.more_names} tries of other names"
        detail = f"{count} failed sign-ins from {window.peer} in a minute ({why}); names: {names}"
        records.append(AccessRecord("sign_in_failures", "", "", False, detail))
    return records
