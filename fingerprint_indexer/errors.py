"""The root of every error the package raises on purpose.

Each error class of the package derives from :class:`FingerprintIndexerError` (and, where callers
already caught it so, from ``ValueError``, ``RuntimeError`` or ``LookupError`` too), so one ``except``
catches whatever the package reports, and the CLI prints any of them as one line (``error: ...``)
instead of a traceback.
"""

from __future__ import annotations


class FingerprintIndexerError(Exception):
    """Base of the package's errors: the message says in one line what is wrong."""


def one_line(exc: BaseException) -> str:
    """An error's message on one line (line breaks of a longer message folded into ``; ``)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return "; ".join(lines) or type(exc).__name__
