"""A thread that stores the journal's checkpoint, so that its disk flushes keep off the
thread that commits.

Storing a checkpoint is three disk flushes (the new file, then its directory; see
:func:`~.paths.replace_file`): some milliseconds, in which a service that stored it on its
own thread could neither journal nor acknowledge the next card. Here the committing thread
only leaves the newest point; this thread writes it, and only the newest when several
came while it was writing (a checkpoint may lag the journal, never lead it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from shoe_controller.journal.checkpoint import Checkpoint

log = logging.getLogger(__name__)


class Checkpointer:
    """Writes the points :meth:`submit` leaves with ``write``, on a thread of its own;
    ``failed`` is called (on that thread) when a write raises OSError."""

    def __init__(
        self, write: Callable[[Checkpoint], None], failed: Callable[[OSError], None]
    ) -> None:
        self._write = write
        self._failed = failed
        self._cond = threading.Condition()
        self._waiting: Checkpoint | None = None
        self._writing = False
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="journal-checkpoint", daemon=True)
        self._thread.start()

    def submit(self, point: Checkpoint) -> None:
        """Have ``point`` written soon, instead of any point still waiting."""
        with self._cond:
            self._waiting = point
            self._cond.notify_all()

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until every point submitted is written (or failed); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._waiting is None and not self._writing, timeout)

    def stop(self) -> None:
        """Write what is waiting, then end the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._waiting is not None or self._stopping)
                point, self._waiting = self._waiting, None
                if point is None:
                    return  # stopping, nothing left to write
                self._writing = True
            try:
                self._write(point)
            except OSError as exc:
                self._failed(exc)
            except Exception:  # a bug must not end the thread silently
                log.exception("storing the journal checkpoint failed")
            finally:
                with self._cond:
                    self._writing = False
                    self._cond.notify_all()
