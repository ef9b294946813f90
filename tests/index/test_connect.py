"""How the CLI's Elasticsearch client reads TLS settings from the environment, against a real TLS endpoint
(a TLS-terminating forwarder with a test CA in front of the local node), and uses several node URLs."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
import trustme
from support.tcp_forwarder import TcpForwarder
from support.tls_forwarder import TlsForwarder

from fingerprint_indexer.es.connection import connect
from fingerprint_indexer.es.errors import EsUnavailable
from fingerprint_indexer.es.servers import hosts

pytestmark = pytest.mark.elasticsearch


def test_verify_certs_setting_over_tls(es_env: pytest.MonkeyPatch, es_url: str, tmp_path: Path) -> None:
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    with TlsForwarder(es_url, ca) as tls:
        with pytest.raises(EsUnavailable):  # the test CA is not trusted by default
            connect(tls.url)
        es_env.setenv("ES_CA_CERTS", str(ca_file))
        connect(tls.url).close()
        es_env.delenv("ES_CA_CERTS")
        es_env.setenv("ES_VERIFY_CERTS", "false")
        connect(tls.url).close()
        es_env.setenv("ES_VERIFY_CERTS", "maybe")
        with pytest.raises(EsUnavailable, match="ES_VERIFY_CERTS must be true or false"):
            connect(tls.url)


def test_several_urls_are_one_client_that_moves_off_a_node_that_goes_away(es_env: pytest.MonkeyPatch,
                                                                          es_url: str, es_index: str) -> None:
    """Two addresses of the node (forwarders); requests go on through the second once the first is cut,
    and a URL list whose every node is gone fails with one error naming it."""
    u = urlsplit(hosts(es_url)[0])
    first, second = TcpForwarder(u.hostname or "127.0.0.1", u.port or 9200), TcpForwarder(
        u.hostname or "127.0.0.1", u.port or 9200)  # fmt: skip
    try:
        client = connect(f"{first.url}, {second.url}")
        try:
            assert {n.base_url for n in client.transport.node_pool.all()} == {first.url, second.url}
            first.cut()
            for n in range(6):  # every request succeeds, whichever node it is sent to first
                client.index(index=es_index, id=str(n), document={"n": n}, refresh=True)
            assert client.count(index=es_index)["count"] == 6
        finally:
            client.close()
        second.cut()
        with pytest.raises(EsUnavailable, match=str(second.port)):
            connect(f"{first.url},{second.url}")
    finally:
        first.cut()
        second.cut()
