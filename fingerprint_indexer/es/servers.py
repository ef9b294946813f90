"""Which search server is at the other end, and how to speak to it: the one place that knows.

Supported: Elasticsearch 8.x and 9.x, OpenSearch 2.x and 3.x. The server is identified once per connection
from ``GET /`` (``version.distribution`` / ``version.number``), or, where a minimal distribution has no
root handler, from the nodes info API and the ``X-Elastic-Product`` header that only Elasticsearch sends.

The project talks to all of them through the 9.x ``elasticsearch`` client API; only the wire format and a
few endpoints differ, and they are chosen here:

* media types: Elasticsearch 9 gets the client's ``compatible-with=9`` types, Elasticsearch 8 the same
  types with ``compatible-with=8`` (its REST compatibility mode), OpenSearch plain ``application/json`` and
  ``application/x-ndjson``;
* point-in-time: Elasticsearch ``POST /{index}/_pit`` / ``DELETE /_pit``, OpenSearch
  ``POST /{index}/_search/point_in_time`` / ``DELETE /_search/point_in_time``;
* API keys: Elasticsearch only (OpenSearch has none of that kind: basic auth instead);
* paging a point-in-time: ``_shard_doc``, except on OpenSearch 2.x (``_id``);
* ``binary`` doc values: Elasticsearch returns padded base64, OpenSearch drops the padding.
"""

from __future__ import annotations

import base64
import dataclasses
import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from elastic_transport import HttpHeaders, SerializationError, Transport, TransportError, Urllib3HttpNode
from elastic_transport._node import NodeApiResponse
from elastic_transport.client_utils import DEFAULT, DefaultType
from elasticsearch import Elasticsearch
from elasticsearch.serializer import NdjsonSerializer, OrjsonSerializer, Serializer

from fingerprint_indexer.es.errors import EsError

Kind = Literal["elasticsearch", "opensearch"]
#: Major versions each kind is tested against.
SUPPORTED: dict[str, tuple[int, ...]] = {"elasticsearch": (8, 9), "opensearch": (2, 3)}
_COMPAT = re.compile(r"application/vnd\.elasticsearch\+([a-z-]+)(?:\s*;\s*compatible-with=\d+)?")


class UnsupportedServer(EsError, RuntimeError):
    """The server is not one of the supported kinds or versions."""


@dataclass(frozen=True)
class Server:
    """A search server's kind and version."""

    kind: Kind
    version: str

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def title(self) -> str:
        return f"{'Elasticsearch' if self.kind == 'elasticsearch' else 'OpenSearch'} {self.version}"

    @property
    def is_opensearch(self) -> bool:
        return self.kind == "opensearch"

    def media_type(self, value: str) -> str:
        """A request's ``Accept``/``Content-Type`` as this server takes it."""
        if self.is_opensearch:
            return _COMPAT.sub(r"application/\1", value)
        return _COMPAT.sub(rf"application/vnd.elasticsearch+\1; compatible-with={self.major}", value)

    def pit_open_path(self, index: str) -> str:
        return f"/{index}/_search/point_in_time" if self.is_opensearch else f"/{index}/_pit"

    def pit_close(self, pit: str) -> tuple[str, dict[str, Any]]:
        """(path, body) of a DELETE that closes point-in-time ``pit``."""
        if self.is_opensearch:
            return "/_search/point_in_time", {"pit_id": [pit]}
        return "/_pit", {"id": pit}

    @property
    def pit_sort(self) -> list[str]:
        """The sort that pages a point-in-time with ``search_after``: ``_shard_doc``, which OpenSearch 2.x
        lacks (``_doc`` there ties across shards and would skip documents; ``_id`` is unique)."""
        return ["_id"] if self.is_opensearch and self.major < 3 else ["_shard_doc"]

    @staticmethod
    def pit_id(response: Mapping[str, Any]) -> str:
        """The id in an open-point-in-time answer (``id`` on Elasticsearch, ``pit_id`` on OpenSearch)."""
        return str(response.get("id") or response["pit_id"])

    def check_api_key(self, api_key: str | None) -> None:
        if api_key and self.is_opensearch:
            raise UnsupportedServer(f"{self.title} has no API keys of Elasticsearch's kind: unset ES_API_KEY "
                                    "and use ES_USERNAME/ES_PASSWORD")  # fmt: skip


def from_root(body: Mapping[str, Any]) -> Server | None:
    """The server described by a ``GET /`` answer, or None when it does not say."""
    version = body.get("version") if isinstance(body, Mapping) else None
    if not isinstance(version, Mapping) or not version.get("number"):
        return None
    kind = "opensearch" if version.get("distribution") == "opensearch" else "elasticsearch"
    return checked(Server(kind, str(version["number"])))  # type: ignore[arg-type]


def from_nodes(body: Mapping[str, Any], headers: Mapping[str, str]) -> Server | None:
    """The server described by a ``GET /_nodes/_local`` answer and its headers."""
    nodes = body.get("nodes") if isinstance(body, Mapping) else None
    versions = {str(n.get("version")) for n in (nodes or {}).values() if isinstance(n, Mapping)}
    if len(versions) != 1:
        return None
    product = {k.lower(): v for k, v in headers.items()}.get("x-elastic-product")
    kind = "elasticsearch" if product == "Elasticsearch" else "opensearch"
    return checked(Server(kind, versions.pop()))  # type: ignore[arg-type]


def checked(server: Server) -> Server:
    """``server`` when it is a supported version, else :class:`UnsupportedServer` naming what is."""
    if server.major not in SUPPORTED[server.kind]:
        names = {"elasticsearch": "Elasticsearch", "opensearch": "OpenSearch"}
        wanted = " or ".join(f"{names[k]} {'/'.join(f'{m}.x' for m in v)}" for k, v in SUPPORTED.items())
        raise UnsupportedServer(f"{server.title} is not supported (needs {wanted})")
    return server


def binary_doc_value(value: str) -> bytes:
    """The bytes of a ``binary`` field's doc value, padded or not (OpenSearch sends it unpadded)."""
    return base64.b64decode(value + "=" * (-len(value) % 4))


ROOT_PATH = "/"
NODES_PATH = "/_nodes/_local?filter_path=nodes.*.version"
#: What the client speaks when nothing else is known (a server that could not be asked).
DEFAULT_SERVER = Server("elasticsearch", "9.0.0")


# ------------------------------------------------------------------------------- the official client
_detected: weakref.WeakKeyDictionary[Transport, Server] = weakref.WeakKeyDictionary()


def detect(transport: Transport) -> Server:
    """Ask the server behind ``transport`` what it is (``GET /``, else the nodes info API). Raises the
    transport's errors when it cannot be reached and :class:`UnsupportedServer` for an unknown one."""
    plain = {"accept": "application/json"}
    for path in (ROOT_PATH, NODES_PATH):
        resp = transport.perform_request("GET", path, headers=plain)
        if resp.meta.status == 401:
            raise UnsupportedServer("the server answered 401: check ES_API_KEY or ES_USERNAME/ES_PASSWORD")
        if 200 <= resp.meta.status < 300 and isinstance(resp.body, Mapping):
            found = from_root(resp.body) if path == ROOT_PATH else from_nodes(resp.body, resp.meta.headers)
            if found is not None:
                _detected[transport] = found
                return found
    raise UnsupportedServer("the server answered neither GET / nor the nodes info API with a version")


def server_of(client: Elasticsearch) -> Server:
    """The server behind ``client`` (asked once per transport; clients from :func:`client_for` know)."""
    found = _detected.get(client.transport)
    return found if found is not None else detect(client.transport)


def node_class(server: Server) -> type[Urllib3HttpNode]:
    """The client's HTTP node, speaking ``server``'s media types. The 9.x client accepts only answers that
    carry Elasticsearch's product header; an OpenSearch server, identified at connect, has none, so its
    answers are marked as checked here."""

    class ServerNode(Urllib3HttpNode):
        def perform_request(
            self, method: str, target: str, body: bytes | None = None, headers: HttpHeaders | None = None,
            request_timeout: DefaultType | float | None = DEFAULT,
        ) -> NodeApiResponse:  # fmt: skip
            if headers is not None:
                headers = headers.copy()
                for name in ("accept", "content-type"):
                    if name in headers:
                        headers[name] = server.media_type(headers[name])
            resp = super().perform_request(method, target, body, headers, request_timeout)
            if server.is_opensearch:
                marked = resp.meta.headers.copy()
                marked["x-elastic-product"] = "Elasticsearch"
                resp = NodeApiResponse(dataclasses.replace(resp.meta, headers=marked.freeze()), resp.body)
            return resp

    ServerNode.__name__ = ServerNode.__qualname__ = f"{server.kind.title()}{server.major}Node"
    return ServerNode


class OrjsonNdjsonSerializer(NdjsonSerializer):
    """Bulk and multi-search bodies (one JSON document a line) through orjson, as
    :class:`~elasticsearch.serializer.OrjsonSerializer` does for single documents."""

    def json_dumps(self, data: Any) -> bytes:
        return orjson.dumps(data, default=self.default, option=orjson.OPT_SERIALIZE_NUMPY)

    def json_loads(self, data: bytes) -> Any:
        return orjson.loads(data)

    def dumps(self, data: Any) -> bytes:
        """The lines (JSON text passes as it is) joined once, each ending in a newline: the base class
        appends them to one growing buffer, which copies a bulk body of megabytes again at each growth."""
        if isinstance(data, (bytes, str)):
            data = (data,)
        parts: list[bytes] = []
        for line in data:
            if isinstance(line, str):
                line = line.encode("utf-8", "surrogatepass")
            elif not isinstance(line, bytes):
                try:
                    line = self.json_dumps(line)
                except (ValueError, UnicodeError, TypeError) as e:
                    raise SerializationError(f"Unable to serialize to NDJSON: {line!r}", errors=(e,)) from e
            parts.append(line)
            if not line.endswith(b"\n"):
                parts.append(b"\n")
        return b"".join(parts)


def serializers() -> dict[str, Serializer]:
    """The client's JSON and NDJSON serializers: orjson, which the client supports, encodes and decodes
    a decision batch's requests several times faster than the standard library (the client maps the
    compatibility media types of Elasticsearch 8 and 9 to these too)."""
    return {"application/json": OrjsonSerializer(), "application/x-ndjson": OrjsonNdjsonSerializer()}


def hosts(url: str) -> list[str]:
    """The node URLs in ``url``: one URL, or the nodes of one cluster separated by commas."""
    nodes = [u.strip() for u in url.split(",") if u.strip()]
    if not nodes:
        raise ValueError(f"no Elasticsearch URL in {url!r}")
    return nodes


def client_for(url: str, check: bool = True, **kwargs: Any) -> tuple[Elasticsearch, Server]:
    """An official client for the server at ``url`` (one URL or several nodes' URLs, comma-separated: the
    client spreads requests over them and moves off a node that fails) speaking its wire format, and that
    server. Without ``check`` a server that cannot be asked is taken to be Elasticsearch 9."""
    nodes = hosts(url)
    # The probe asks each node once, without waiting between attempts: a wrong URL fails at once.
    quick = {k: v for k, v in kwargs.items() if not k.startswith("retry_backoff_")}
    probe = Elasticsearch(nodes, **{**quick, "max_retries": len(nodes) - 1})
    try:
        server = detect(probe.transport)
    except TransportError:
        if check:
            raise
        server = DEFAULT_SERVER
    finally:
        probe.close()
    server.check_api_key(kwargs.get("api_key"))
    client = Elasticsearch(nodes, node_class=node_class(server), serializers=serializers(), **kwargs)
    _detected[client.transport] = server
    return client, server


def open_pit(client: Elasticsearch, index: str, keep_alive: str) -> str:
    """Open a point-in-time snapshot of ``index`` on whichever server ``client`` talks to."""
    server = server_of(client)
    if not server.is_opensearch:
        return str(client.open_point_in_time(index=index, keep_alive=keep_alive)["id"])
    resp = client.perform_request("POST", server.pit_open_path(index), params={"keep_alive": keep_alive},
                                  headers={"accept": "application/json"})  # fmt: skip
    return Server.pit_id(resp.body)


def close_pit(client: Elasticsearch, pit: str) -> None:
    server = server_of(client)
    if not server.is_opensearch:
        client.close_point_in_time(id=pit)
        return
    path, body = server.pit_close(pit)
    client.perform_request("DELETE", path, body=body,
                           headers={"accept": "application/json", "content-type": "application/json"})
