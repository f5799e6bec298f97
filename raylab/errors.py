"""Errors a user can cause and fix.

Every ``RaylabError`` message is one line that says what is wrong and names the fix; the CLIs print it
without a traceback and exit with ``EXIT_USAGE``.
"""

from __future__ import annotations

EXIT_USAGE = 2


class RaylabError(Exception):
    """A mistake in the user's input; ``str(err)`` is one line that names the fix."""


class ConfigError(RaylabError):
    """The composed config is invalid."""


class NonFiniteLossError(RaylabError):
    """Training diverged (a NaN or infinite loss): the run stops, keeping its last good checkpoint."""


def check(condition: bool, message: str) -> None:
    """Raise ``ConfigError(message)`` unless ``condition`` holds (the dataclass schemas' field checks)."""
    if not condition:
        raise ConfigError(message)


def positive_or_none(value: float | None, name: str) -> None:
    """Raise ``ConfigError`` unless ``value`` (the key ``name``) is null or > 0."""
    if value is not None and value <= 0:
        raise ConfigError(f"{name} must be > 0 or null (got {value})")
