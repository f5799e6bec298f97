"""Keep API keys and tokens out of everything a run writes: config.yaml, benchmark_metrics.json,
checkpoints, W&B's config and metadata, the console.

A value is secret when its key looks like one (api_key, token, secret, password, credential), when it is
the value of an environment variable whose name looks like one (WANDB_API_KEY, HF_TOKEN, ...), or when it
is the password part of a URL (``ray://user:pass@host``). Secrets are replaced, never dropped, so a
reader sees that something was there.
"""

from __future__ import annotations

import os
import re
from typing import Any

REDACTED = "<redacted>"
SECRET_NAME = re.compile(r"api[_-]?key|token|secret|passw(?:or)?d|credential|private[_-]?key", re.IGNORECASE)
URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^/:@\s]+:)(?P<password>[^/@\s]+)(?=@)", re.IGNORECASE)
MIN_SECRET_LENGTH = 6
"""Environment values shorter than this are not searched for (they would match ordinary text)."""


def secret_env_values(environ: dict[str, str] | None = None) -> list[str]:
    """Values of environment variables named like secrets, longest first."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def redact_text(text: str, secrets: list[str] | None = None) -> str:
    for value in secret_env_values() if secrets is None else secrets:
        text = text.replace(value, REDACTED)
    return URL_PASSWORD.sub(lambda m: m.group("head") + REDACTED, text)


def _secret_key(key: Any, value: Any) -> bool:
    return isinstance(key, str) and SECRET_NAME.search(key) is not None and value not in (None, "")


def redact(value: Any, secrets: list[str] | None = None) -> Any:
    """A copy of ``value`` (nested dicts, lists, strings) with every secret replaced by ``<redacted>``."""
    secrets = secret_env_values() if secrets is None else secrets
    if isinstance(value, dict):
        return {k: REDACTED if _secret_key(k, v) else redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact(v, secrets) for v in value)
    if isinstance(value, str):
        return redact_text(value, secrets)
    return value
