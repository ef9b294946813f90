"""A TLS-terminating, HTTP-aware forwarder in front of a plain-HTTP Elasticsearch node.

The local test node speaks plain HTTP. This forwarder presents a server certificate issued by a test CA
(``trustme``) for 127.0.0.1, relays every request to the node, and records what it was sent, so a test can
check what the service sends to Elasticsearch over TLS. With ``require_auth`` it answers 401 like a secured
cluster unless the ``Authorization`` header is one of the accepted values. Clients that reject the
certificate never get a request through; their failed handshakes are counted.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

import trustme

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                        "upgrade", "content-length", "host"})


@dataclass(frozen=True)
class Seen:
    """One request relayed (or refused for its credentials)."""

    method: str
    path: str
    headers: dict[str, str]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    forwarder: TlsForwarder

    def finish_request(self, request: Any, client_address: Any) -> None:
        """The TLS handshake runs in the connection's own thread, so a client that stalls or rejects
        the certificate cannot hold up the others."""
        fwd = self.forwarder
        try:
            tls = fwd.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            with fwd.lock:
                fwd.failed_handshakes += 1
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            tls.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-request is not the test's business


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            out = b""
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                out += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return out
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    def _relay(self) -> None:
        fwd = self.server.forwarder
        body = self._body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        with fwd.lock:
            fwd.seen.append(Seen(self.command, self.path, headers))
        if fwd.require_auth is not None and headers.get("authorization") not in fwd.require_auth:
            error = {"type": "security_exception", "reason": "missing or wrong credentials"}
            self._send(401, {"content-type": "application/json", "www-authenticate": "ApiKey, Basic"},
                       json.dumps({"error": error, "status": 401}).encode())
            return
        upstream = http.client.HTTPConnection(fwd.target_host, fwd.target_port, timeout=120)
        try:
            out_headers = {k: v for k, v in headers.items() if k not in HOP_BY_HOP}
            upstream.request(self.command, self.path, body=body, headers=out_headers)
            resp = upstream.getresponse()
            data = resp.read()
            resp_headers = {k.lower(): v for k, v in resp.getheaders()}
        finally:
            upstream.close()
        if self.command == "HEAD":
            resp_headers.pop("transfer-encoding", None)
            self._send(resp.status, resp_headers, b"", keep_length=True)
        else:
            self._send(resp.status, resp_headers, data)

    def _send(self, status: int, headers: dict[str, str], data: bytes, keep_length: bool = False) -> None:
        self.send_response_only(status)
        for k, v in headers.items():
            if k not in HOP_BY_HOP or (keep_length and k == "content-length"):
                self.send_header(k, v)
        if not keep_length:
            self.send_header("content-length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _relay

    def log_message(self, *args: Any) -> None:
        pass


class TlsForwarder:
    """``https://127.0.0.1:<port>`` in front of the node at ``target_url``; use as a context manager."""

    def __init__(self, target_url: str, ca: trustme.CA, require_auth: set[str] | None = None) -> None:
        u = urlparse(target_url)
        self.target_host, self.target_port = u.hostname or "127.0.0.1", u.port or 9200
        self.require_auth = require_auth
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(self.context)
        self.lock = threading.Lock()
        self.seen: list[Seen] = []
        self.failed_handshakes = 0
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.forwarder = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> TlsForwarder:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> TlsForwarder:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
