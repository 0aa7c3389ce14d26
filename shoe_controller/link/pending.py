"""A command given to the link driver, and its outcome, for the thread that gave it."""

from __future__ import annotations

import threading

from firmware_protocol import Message
from shoe_controller.errors import LinkError
from shoe_controller.link.events import CommandCompleted, CommandFailed, CommandHandle


class PendingCommand:
    """A command given to :meth:`LinkDriver.send_command`. Its outcome is a
    CommandCompleted or CommandFailed, also delivered to ``on_event``.

    The driver's reader thread hands the command to the link core, which gives it its
    :attr:`handle`, and settles it with the outcome; any thread may wait for that.
    """

    def __init__(self, message: Message) -> None:
        self.message = message
        #: The link core's handle of the command, once the reader thread has sent it.
        self.handle: CommandHandle | None = None
        self._done = threading.Event()
        self._outcome: CommandCompleted | CommandFailed | None = None

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> CommandCompleted | CommandFailed | None:
        """The outcome, or None when ``timeout`` passed first."""
        self._done.wait(timeout)
        return self._outcome

    def result(self, timeout: float | None = None) -> Message:
        """The shoe's reply; raises LinkError when the command failed or did not end."""
        outcome = self.wait(timeout)
        if isinstance(outcome, CommandCompleted):
            return outcome.reply
        name = type(self.message).__name__
        if outcome is None:
            raise LinkError(f"{name} got no outcome within {timeout} s: check the shoe's link")
        raise LinkError(f"{outcome}; check the shoe and its link")

    def settle(self, outcome: CommandCompleted | CommandFailed) -> None:
        """Record the outcome and wake the waiters (the driver's reader thread calls it)."""
        self._outcome = outcome
        self._done.set()

    def __repr__(self) -> str:
        what = self.handle if self.handle is not None else type(self.message).__name__
        return f"<PendingCommand {what!r} {'done' if self.done else 'pending'}>"
