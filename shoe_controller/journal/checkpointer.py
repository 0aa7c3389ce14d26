"""A thread that stores the journal's checkpoint, so that its disk flushes keep off the
thread that commits.

Storing a checkpoint is three disk flushes (the new file, then its directory; see
:func:`~.paths.replace_file`): some milliseconds, in which a service that stored it on its
own thread could neither journal nor acknowledge the next card. Here the committing thread
only leaves the newest point; this thread writes it, and only the newest when several
came while it was writing (a checkpoint may lag the journal, never lead it).

:class:`CheckpointFile` stores it with its descriptors opened ahead, so that a process
whose other parts hold many descriptors (the box's API and its clients) never finds the
checkpoint unable to open its file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from shoe_controller.journal.checkpoint import Checkpoint
from shoe_controller.journal.paths import FILE_MODE

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


class CheckpointFile:
    """Replaces the checkpoint file at ``path`` atomically, as
    :func:`~.paths.replace_file` does (a temporary file written and synced, renamed over
    the checkpoint, the directory synced), with the descriptors that needs opened ahead:
    the directory's, held until :meth:`close`, and the next temporary file's, opened at
    construction and again right after each replacement. A replacement itself opens
    nothing; should the next one's file fail to open then, it is opened when needed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._temp = path.with_name(f".{path.name}.next")
        self._directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._next: int | None = None
        try:
            self._open_next()
        except BaseException:
            os.close(self._directory)
            raise

    def _open_next(self) -> None:
        fd = os.open(self._temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
        # The creation mode passes through the umask; fchmod does not.
        os.fchmod(fd, FILE_MODE)
        self._next = fd

    def replace(self, path: Path, data: bytes) -> None:
        """Make ``data`` the content of the checkpoint (``path``, which must be ours)."""
        if path != self.path:
            raise ValueError(f"{path} is not the checkpoint file {self.path}")
        if self._next is None:
            self._open_next()
        fd, self._next = self._next, None
        assert fd is not None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(self._temp, self.path)
        os.fsync(self._directory)
        try:
            self._open_next()
        except OSError as exc:
            log.warning("cannot open the next checkpoint file ahead: %s", exc)

    def close(self) -> None:
        """Close the descriptors and remove the unused temporary file. Idempotent."""
        if self._next is not None:
            os.close(self._next)
            self._next = None
            with contextlib.suppress(OSError):
                self._temp.unlink()
        if self._directory >= 0:
            os.close(self._directory)
            self._directory = -1
