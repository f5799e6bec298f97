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
