"""The one error of this package."""

from __future__ import annotations

from shoe_controller.errors import ConfigError


class UsersFileError(ConfigError):
    """The users file cannot be read or written as asked, or a name or PIN is refused
    (exit code 3)."""
