"""Reading a file a person named: only a regular file, never blocking, of bounded size.

A path typed on a command line or written in a configuration may name a FIFO (opening it
for reading waits for a writer, for ever), a character device (``/dev/zero`` never ends),
a directory, or a file far larger than anything we parse. :func:`open_regular` opens the
path without blocking, looks at what it opened (not at the path, which may change
meanwhile), and refuses anything but a regular file, with an :class:`OSError` whose
``strerror`` says what the path is. Callers that already report ``OSError`` in one line
need nothing more.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO, Final

#: The largest text file we parse (a configuration, a key, a checkpoint): 1 MiB.
MAX_TEXT_FILE: Final = 1 << 20


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket: something that is not a regular file."""


class FileTooLarge(OSError):
    """The file is larger than what we agree to read."""


def describe_mode(mode: int) -> str:
    """What a file of ``mode`` is, for a message: "a FIFO", "a character device", ..."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | os.PathLike[str], limit: int | None = None) -> BinaryIO:
    """Open ``path`` for reading in binary if it is a regular file (of at most ``limit``
    bytes when given); raises FileNotFoundError, PermissionError, IsADirectoryError,
    NotRegularFile, FileTooLarge or another OSError."""
    # O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
    # O_NOCTTY: a terminal device named here never becomes our controlling terminal.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "it is a directory", os.fspath(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(
                errno.EINVAL,
                f"it is {describe_mode(mode)}, not a regular file",
                os.fspath(path),
            )
        if limit is not None and os.fstat(fd).st_size > limit:
            raise _too_large(path, limit)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], limit: int = MAX_TEXT_FILE) -> bytes:
    """The whole content of the regular file ``path``, at most ``limit`` bytes (see
    :func:`open_regular` for what is refused)."""
    with open_regular(path, limit) as handle:
        # One byte more than allowed tells a file that grew, or a file whose size the
        # kernel does not know in advance (/proc), from one that fits.
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise _too_large(path, limit)
    return data


def _too_large(path: str | os.PathLike[str], limit: int) -> FileTooLarge:
    return FileTooLarge(errno.EFBIG, f"it is larger than {_size(limit)}", os.fspath(path))


def _size(limit: int) -> str:
    if limit >= 1 << 20 and limit % (1 << 20) == 0:
        return f"{limit >> 20} MiB"
    if limit >= 1 << 10 and limit % (1 << 10) == 0:
        return f"{limit >> 10} KiB"
    return f"{limit} bytes"
