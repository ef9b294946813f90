"""fingerprint_indexer.es.servers: identifying a server and its wire format (pure parts; the compatibility
suite in tests/compat runs them against real servers)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fingerprint_indexer.es.servers import Server, UnsupportedServer, binary_doc_value, from_nodes, from_root

ES8, ES9, OS2, OS3 = (Server("elasticsearch", "8.19.0"), Server("elasticsearch", "9.5.2"),
                      Server("opensearch", "2.19.1"), Server("opensearch", "3.5.0"))  # fmt: skip
COMPAT9 = "application/vnd.elasticsearch+json; compatible-with=9"


def test_root_answers_name_the_server() -> None:
    assert from_root({"version": {"number": "8.19.0", "build_flavor": "default"}}) == ES8
    assert from_root({"version": {"distribution": "opensearch", "number": "2.19.1"}}) == OS2
    assert from_root({"error": "Incorrect HTTP method for uri [/]"}) is None


def test_nodes_answers_use_the_product_header() -> None:
    body = {"nodes": {"x": {"version": "9.5.2"}}}
    assert from_nodes(body, {"X-Elastic-Product": "Elasticsearch"}) == ES9
    assert from_nodes({"nodes": {"x": {"version": "3.5.0"}}}, {}) == OS3
    assert from_nodes({"nodes": {"a": {"version": "8.19.0"}, "b": {"version": "9.5.2"}}}, {}) is None


@pytest.mark.parametrize("body", [{"version": {"number": "7.17.0"}},
                                  {"version": {"number": "1.3.0", "distribution": "opensearch"}}])
def test_unsupported_versions_are_refused_naming_what_is_supported(body: dict) -> None:
    with pytest.raises(UnsupportedServer, match=r"not supported \(needs Elasticsearch 8.x/9.x or OpenSearch"):
        from_root(body)


def test_media_types_follow_the_server() -> None:
    assert ES9.media_type(COMPAT9) == COMPAT9
    assert ES8.media_type(COMPAT9) == "application/vnd.elasticsearch+json; compatible-with=8"
    assert ES8.media_type("application/vnd.elasticsearch+x-ndjson; compatible-with=9") == (
        "application/vnd.elasticsearch+x-ndjson; compatible-with=8")
    assert OS2.media_type(COMPAT9) == "application/json"
    ndjson9 = "application/vnd.elasticsearch+x-ndjson; compatible-with=9"
    assert OS3.media_type(ndjson9) == "application/x-ndjson"
    assert OS2.media_type("text/plain") == "text/plain"


def test_point_in_time_endpoints_and_paging() -> None:
    assert ES8.pit_open_path("news") == "/news/_pit"
    assert OS2.pit_open_path("news") == "/news/_search/point_in_time"
    assert ES9.pit_close("p") == ("/_pit", {"id": "p"})
    assert OS3.pit_close("p") == ("/_search/point_in_time", {"pit_id": ["p"]})
    assert Server.pit_id({"id": "a"}) == "a" and Server.pit_id({"pit_id": "b"}) == "b"
    assert OS2.pit_sort == ["_id"] and OS3.pit_sort == ES8.pit_sort == ["_shard_doc"]


def test_api_keys_are_refused_on_opensearch_only() -> None:
    ES8.check_api_key("k")
    OS3.check_api_key(None)
    with pytest.raises(UnsupportedServer, match="ES_USERNAME/ES_PASSWORD"):
        OS2.check_api_key("k")


@given(st.binary(max_size=300))
def test_binary_doc_values_decode_padded_or_not(raw: bytes) -> None:
    padded = base64.b64encode(raw).decode()
    assert binary_doc_value(padded) == raw
    assert binary_doc_value(padded.rstrip("=")) == raw
