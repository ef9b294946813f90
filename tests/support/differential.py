"""Differential testing of the proxy: the same request sent to Elasticsearch directly and through the
service, each into its own index, and the two answers compared.

The direct index is created as the proxy creates its indices (:func:`index_creation`), so mapping-dependent
answers (parse errors, versions, sequence numbers) can match exactly. Answers are compared after index
names are replaced by ``<index>``, the proxy's own ``fingerprint_indexer`` item objects are removed and
values that differ between any two runs (``took``, ``index_uuid``) are masked; callers can mask more
(e.g. ``_id`` for automatic ids). Requests are sent with raw bytes, so malformed bodies stay malformed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from fingerprint_indexer.es.codec import TIME_FIELDS
from fingerprint_indexer.es.mapping import index_creation
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintConfig

#: Values that differ between two runs of the same request, masked before comparing (with the fields of a
#: written document that differ by the time it was written).
VOLATILE = frozenset({"took", "index_uuid"}) | TIME_FIELDS
#: What the proxy adds to an item or answer (documented in docs/architecture.md).
PROXY_EXTRAS = frozenset({"fingerprint_indexer"})
#: Headers that must agree (lower-case names).
COMPARED_HEADERS = ("x-elastic-product", "content-type", "content-encoding", "location")


@dataclass
class Reply:
    status: int
    headers: httpx.Headers
    raw: bytes
    body: Any = None

    @classmethod
    def of(cls, r: httpx.Response) -> Reply:
        try:
            body = json.loads(r.content) if r.content else None
        except ValueError:
            body = r.content
        return cls(r.status_code, r.headers, r.content, body)


@dataclass
class Pair:
    """The direct and the proxied answer to one request."""

    direct: Reply
    proxied: Reply
    masked: frozenset[str] = field(default_factory=frozenset)

    def normal(self, reply: Reply, index: str) -> Any:
        return normalise(reply.body, index, VOLATILE | self.masked)

    def differences(self, es_index: str, proxy_index: str) -> list[str]:
        out = []
        if self.direct.status != self.proxied.status:
            out.append(f"status {self.direct.status} != {self.proxied.status}")
        for h in COMPARED_HEADERS:
            a, b = _header(self.direct, h, es_index), _header(self.proxied, h, proxy_index)
            if a != b:
                out.append(f"header {h}: {a!r} != {b!r}")
        a, b = self.normal(self.direct, es_index), self.normal(self.proxied, proxy_index)
        if a != b:
            out.append(f"body\n  direct:  {json.dumps(a, ensure_ascii=False)[:1500]}\n"
                       f"  proxied: {json.dumps(b, ensure_ascii=False)[:1500]}")
        return out


def _header(reply: Reply, name: str, index: str) -> str | None:
    value = reply.headers.get(name)
    return None if value is None else value.replace(index, "<index>").replace(" ", "").lower()


def timeless(doc: dict[str, Any]) -> dict[str, Any]:
    """A written document without its :data:`TIME_FIELDS`: what two writers of the same decision (the
    sidecar and ``es index``, or two runs) must write alike."""
    return {k: v for k, v in doc.items() if k not in TIME_FIELDS}


def normalise(value: Any, index: str, masked: frozenset[str]) -> Any:
    """``value`` with ``index`` replaced by ``<index>``, masked keys set to ``"*"`` and the proxy's
    extras removed."""
    if isinstance(value, dict):
        return {k: "*" if k in masked else normalise(v, index, masked)
                for k, v in value.items() if k not in PROXY_EXTRAS}
    if isinstance(value, list):
        return [normalise(v, index, masked) for v in value]
    if isinstance(value, str):
        return value.replace(index, "<index>")
    if isinstance(value, bytes):
        return value.replace(index.encode(), b"<index>")
    return value


class Differential:
    """Sends requests to Elasticsearch (into ``es_index``) and to the proxy (into ``proxy_index``).

    In paths and bodies, ``{index}`` stands for the index of each side."""

    def __init__(self, es_url: str, proxy_url: str, proxy_headers: dict[str, str], es_index: str,
                 proxy_index: str) -> None:
        self.es_index, self.proxy_index = es_index, proxy_index
        self.es = httpx.Client(base_url=es_url, timeout=60)
        self.proxy = httpx.Client(base_url=proxy_url, headers=proxy_headers, timeout=60)
        for client in (self.es, self.proxy):  # exactly the headers a test gives, nothing added
            client.headers.pop("accept-encoding", None)
            client.headers.pop("user-agent", None)
        self.create_direct()

    def create_direct(self) -> None:
        """Create the direct index as the proxy creates its own (:func:`index_creation`)."""
        nodes = int(self.es.get("/_cluster/health").json()["number_of_data_nodes"])
        concrete, body = index_creation(self.es_index, FingerprintConfig().layout, copy_marks=None,
                                        data_nodes=nodes, dynamic=True)
        r = self.es.put(f"/{concrete}", json=body)
        assert r.status_code == 200, r.text

    def send(self, method: str, path: str, body: bytes | str | None = None,
             headers: dict[str, str] | None = None, masked: tuple[str, ...] = ()) -> Pair:
        replies = []
        for client, index in ((self.es, self.es_index), (self.proxy, self.proxy_index)):
            content = body.encode() if isinstance(body, str) else body
            if content is not None:
                content = content.replace(b"{index}", index.encode())
            r = client.request(method, path.replace("{index}", index), content=content, headers=headers)
            replies.append(Reply.of(r))
        return Pair(replies[0], replies[1], frozenset(masked))

    def same(self, method: str, path: str, body: bytes | str | None = None,
             headers: dict[str, str] | None = None, masked: tuple[str, ...] = ()) -> Pair:
        """Send and assert that both sides answered alike; the pair, for further checks."""
        pair = self.send(method, path, body, headers, masked)
        diff = pair.differences(self.es_index, self.proxy_index)
        assert not diff, f"{method} {path}: " + "\n".join(diff)
        return pair

    def refresh(self) -> None:
        for index in (self.es_index, self.proxy_index):
            self.es.post(f"/{index}/_refresh")

    def close(self) -> None:
        for index in (self.es_index, self.proxy_index):
            self.es.delete(f"/{index}")
        self.es.close()
        self.proxy.close()


NDJSON = {"content-type": "application/x-ndjson"}
JSON = {"content-type": "application/json"}


def ndjson(*lines: dict[str, Any] | bytes) -> bytes:
    """An NDJSON body: dicts encoded as JSON, bytes taken as they are; newline-terminated."""
    return b"".join((ln if isinstance(ln, bytes) else json.dumps(ln, ensure_ascii=False).encode()) + b"\n"
                    for ln in lines)
