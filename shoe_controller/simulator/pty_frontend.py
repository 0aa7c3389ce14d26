"""The simulated shoe behind a real pseudo-terminal, so that any program opens it as a
serial port (pyserial, ``python -m serial.tools.miniterm``, our own tools).

The slave side is put in raw mode, and the front end keeps its own descriptor of the slave
open, so that hosts may come and go without tearing the terminal down. A ``disconnect``
fault closes the pair, which a host notices as an I/O error, as when a USB serial adapter
is pulled out, and opens a new pair: its slave has a new path. Give ``link_path`` to keep
one stable path for hosts to reopen: a symbolic link that follows the current slave, as
the udev rules' /dev/electronic-shoe follows the real shoe.

The link is created only where nothing is (a path a person typed may name a file that is
not ours, and the simulator may run as root), and is moved or removed only while it is the
link this front end made, still pointing where it made it point.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import selectors
import time
import tty
from collections.abc import Callable

from shoe_controller.errors import ConfigError
from shoe_controller.simulator.frontend_base import ThreadedFrontEnd
from shoe_controller.simulator.options import SimOptions
from shoe_controller.simulator.runner import Clock
from shoe_controller.simulator.shoe import SimulatedShoe

log = logging.getLogger(__name__)

_READ_SIZE = 4096


class PtyFrontEnd(ThreadedFrontEnd):
    def __init__(
        self,
        options: SimOptions | None = None,
        *,
        link_path: str | None = None,
        on_new_path: Callable[[str], None] | None = None,
        shoe: SimulatedShoe | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        super().__init__(options, shoe=shoe, clock=clock)
        self.link_path = link_path
        #: Without ``link_path``: called from the front end's thread with the new slave
        #: path after a ``disconnect`` fault replaced the pseudo-terminal.
        self.on_new_path = on_new_path
        self._master = self._slave = -1
        self._slave_path = ""
        #: The link this front end made, as (device, inode), while it is there.
        self._link_made: tuple[int, int] | None = None
        #: Bytes the shoe sent while no host read them and the terminal's buffer was full.
        self.bytes_dropped = 0

    @property
    def slave_path(self) -> str:
        return self._slave_path

    @property
    def address(self) -> str:
        return self.link_path or self._slave_path

    def _open(self) -> None:
        self._open_pair()
        if self.link_path:
            self._make_link(self.link_path)

    def _open_pair(self) -> None:
        master, slave = os.openpty()
        try:
            tty.setraw(slave)
            os.set_blocking(master, False)
            self._slave_path = os.ttyname(slave)
        except BaseException:
            os.close(master)
            os.close(slave)
            raise
        self._master, self._slave = master, slave
        if self._selector is not None:
            self._selector.register(master, selectors.EVENT_READ)
        log.info("simulated shoe on %s", self._slave_path)

    def _close_pair(self) -> None:
        if self._master >= 0:
            if self._selector is not None:
                self._selector.unregister(self._master)
            os.close(self._master)
        if self._slave >= 0:
            os.close(self._slave)
        self._master = self._slave = -1

    def _make_link(self, link: str) -> None:
        """Create the link where nothing is; never replace what is there."""
        directory = os.path.dirname(os.path.abspath(link))
        try:
            os.symlink(self._slave_path, link)
        except FileExistsError:
            raise ConfigError(
                f"--link {link} already exists: the simulator never replaces a path it did not "
                "make; remove it yourself if it is an old link, or choose another --link"
            ) from None
        except FileNotFoundError:
            raise ConfigError(
                f"the directory of --link {link} does not exist: create it (mkdir -p "
                f"{directory}) or choose another --link"
            ) from None
        except OSError as exc:
            raise ConfigError(
                f"cannot make the link {link}: {exc.strerror or exc}; choose another --link"
            ) from None
        self._link_made = self._identify(link)

    def _ours(self, link: str, target: str) -> bool:
        """The link at ``link`` is the one made here, pointing to ``target``."""
        if self._link_made is None:
            return False
        try:
            return self._identify(link) == self._link_made and os.readlink(link) == target
        except OSError:
            return False

    @staticmethod
    def _identify(link: str) -> tuple[int, int]:
        info = os.lstat(link)
        return info.st_dev, info.st_ino

    def _move_link(self, link: str, old_target: str) -> None:
        """Point our link at the new terminal in one step, so that a host never finds it
        missing; a link someone else replaced or moved meanwhile is left alone."""
        if not self._ours(link, old_target):
            log.warning("%s is no longer the simulator's link: left as it is", link)
            self._link_made = None
            return
        directory = os.path.dirname(os.path.abspath(link))
        while True:
            temporary = os.path.join(directory, f".{os.path.basename(link)}.{secrets.token_hex(6)}")
            try:
                os.symlink(self._slave_path, temporary)
            except FileExistsError:
                continue
            break
        os.replace(temporary, link)
        self._link_made = self._identify(link)

    def _close(self) -> None:
        self._close_pair()
        link = self.link_path
        if link and self._ours(link, self._slave_path):
            os.unlink(link)
        self._link_made = None

    def _on_ready(self, key: selectors.SelectorKey) -> None:
        try:
            data = os.read(self._master, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno == errno.EIO:
                return  # no slave descriptor open: nothing to read
            raise
        if data:
            self.runner.feed(data)

    def _send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._master, view)
            except BlockingIOError:
                # Nobody reads and the terminal's buffer is full: the bytes are lost, as
                # they are on a real line with nobody listening.
                self.bytes_dropped += len(view)
                return
            view = view[written:]

    def _drop_link(self) -> None:
        old_master, old_slave, old_path = self._master, self._slave, self._slave_path
        # The new terminal and the link to it are ready before the old terminal closes, so
        # that a host which notices the drop and reopens the link never finds it dangling.
        self._open_pair()
        if self.link_path:
            self._move_link(self.link_path, old_path)
        if self._selector is not None:
            self._selector.unregister(old_master)
        os.close(old_master)
        os.close(old_slave)
        log.info("simulated shoe link dropped: %s replaced by %s", old_path, self._slave_path)
        if not self.link_path and self.on_new_path is not None:
            self.on_new_path(self._slave_path)
