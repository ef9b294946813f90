"""Reading settings from the environment, shared by the CLI commands and the service."""

from __future__ import annotations

import os


def env_flag(name: str, default: bool) -> bool:
    """A yes/no environment variable (``1/true/yes/on`` or ``0/false/no/off``; unset or empty: default)."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false, not {raw!r}")
