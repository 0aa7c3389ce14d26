"""Who the shoe's buttons act for (E4): the dealer whose session is at the table's console,
followed from the journal's ``access`` records alone.

The API journals a dealer's session when it becomes the table's console's
(:data:`AT_CONSOLE`, with the session's id), and every end of it: the session left the
console (:data:`LEFT_CONSOLE`: signed out, ended, its connection closed, another person
signed in on it) or the session itself ended (:data:`SESSION_ENDED`, idle or expired). A
start of the service ends every session, since sessions live in the API's memory only.
Nothing else moves the buttons: a supervisor's sign-in or sign-out, or a session that
was never the console's, changes nothing. Folding a journal's records in order therefore
gives, at each press, the person the controller acted for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from shoe_controller.procedure.authority import Role

#: A dealer's session became the table's console's: the buttons act for them.
AT_CONSOLE: Final = "at_console"
#: That session is no longer the console's (``detail`` says why).
LEFT_CONSOLE: Final = "left_console"
#: A session ended (by time, by a change of its user); with ``session``, that session.
SESSION_ENDED: Final = "session_ended"
#: Access records that end the place of the session they name.
_ENDS: Final = frozenset({LEFT_CONSOLE, SESSION_ENDED})


class TableConsole:
    """The dealer sessions at the table's console, in the order they arrived there; the
    buttons act for the latest still there."""

    def __init__(self) -> None:
        #: session id -> the dealer's name (insertion order: the latest is last).
        self._sessions: dict[str, str] = {}

    @property
    def dealer(self) -> str | None:
        """The dealer the buttons act for now, or None."""
        return next(reversed(self._sessions.values()), None)

    def follow(self, access: Mapping[str, Any]) -> None:
        """Take in one ``access`` record's payload."""
        session = access.get("session")
        if not isinstance(session, str) or not session:
            return  # a record of no session (a sign-in, a refusal): the console is as it was
        action = access.get("action")
        if action == AT_CONSOLE:
            user = access.get("user")
            if (
                access.get("accepted") is True
                and access.get("role") == Role.DEALER.value
                and isinstance(user, str)
                and user
            ):
                self._sessions.pop(session, None)
                self._sessions[session] = user
        elif action in _ENDS:
            self._sessions.pop(session, None)

    def restarted(self) -> None:
        """The service started: no session of an earlier run lives on."""
        self._sessions.clear()
