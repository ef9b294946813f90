"""The HTTP connection guard against slow clients (slowloris): a connection gets ``header_timeout_s`` to
deliver each request's headers, counted from when it opens or from the end of the previous answer;
one that has not by then is closed, whether or not it would present a key. Request bodies are bounded
by :class:`~fingerprint_indexer.sidecar.middleware.BodyLimitMiddleware` (a pause between chunks, and a
whole-body deadline). Uvicorn's own keep-alive timeout only closes connections that send nothing; a
connection that sends a byte now and then would otherwise stay open indefinitely.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class GuardedH11Protocol(H11Protocol):
    """Uvicorn's h11 protocol with a deadline for request headers."""

    header_timeout_s: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    @classmethod
    def with_timeout(cls, seconds: float) -> type[GuardedH11Protocol]:
        """This protocol with its own header deadline (uvicorn takes a class)."""
        return type("GuardedH11Protocol", (cls,), {"header_timeout_s": seconds})

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's headers get the same time

    def _headers_late(self) -> None:
        self._header_timer = None
        waiting = self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)
        if waiting and not self.transport.is_closing():
            self.logger.debug("closing a connection that did not send request headers in time")
            self.transport.close()
