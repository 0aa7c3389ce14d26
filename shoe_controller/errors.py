"""The exception tree shared by every layer, and the documented exit codes.

Every failure a person can cause is a :class:`ShoeControllerError` whose message is one
line saying what is wrong and what to do; the CLI prints it and exits with its
``exit_code``. Anything else reaching the CLI is a bug (exit code 1).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping


class ExitCode(enum.IntEnum):
    OK = 0
    INTERNAL_ERROR = 1
    USAGE = 2
    CONFIG = 3
    DEVICE_NOT_FOUND = 4
    PERMISSION_DENIED = 5
    DEVICE_BUSY = 6
    LINK = 7
    NOT_APPROVED = 8
    JOURNAL = 9
    PROCEDURE = 10
    CHECK_FAILED = 11
    STORE = 12
    INTERRUPTED = 130


class ShoeControllerError(Exception):
    """Base of every error a person can cause or a device can report."""

    exit_code: ExitCode = ExitCode.INTERNAL_ERROR


class ConfigError(ShoeControllerError):
    exit_code = ExitCode.CONFIG


class TransportError(ShoeControllerError):
    """Opening or using a transport failed."""

    exit_code = ExitCode.LINK


class DeviceNotFound(TransportError):
    exit_code = ExitCode.DEVICE_NOT_FOUND


class DevicePermissionError(TransportError):
    exit_code = ExitCode.PERMISSION_DENIED


class DeviceBusy(TransportError):
    exit_code = ExitCode.DEVICE_BUSY


class BackendUnavailable(TransportError):
    """A transport's library or system backend (e.g. libusb) is missing."""

    exit_code = ExitCode.DEVICE_NOT_FOUND


class LinkLost(TransportError):
    """The device vanished or stopped answering while open."""


class LinkError(ShoeControllerError):
    """The conversation with the shoe failed (no answer, incompatible protocol, ...)."""

    exit_code = ExitCode.LINK


class NotApproved(ShoeControllerError):
    """The shoe is not on the operator's approved list, or its verification failed."""

    exit_code = ExitCode.NOT_APPROVED


class JournalError(ShoeControllerError):
    exit_code = ExitCode.JOURNAL


class StoreError(ShoeControllerError):
    """The floor's store cannot be opened, read or written."""

    exit_code = ExitCode.STORE


class ProcedureError(ShoeControllerError):
    """An input the dealing procedure does not accept in its current state.

    ``code``, where the procedure gives one, names the refusal for those who word it in
    their own language (``procedure/refusals.py``), and ``values`` are what its words need;
    the message stays the English line the terminal and the journal show."""

    exit_code = ExitCode.PROCEDURE

    def __init__(
        self, message: str, *, code: str | None = None, values: Mapping[str, object] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.values: dict[str, object] = dict(values or {})
