"""How the CLI's Elasticsearch client reads TLS settings from the environment, against a real TLS endpoint
(a TLS-terminating forwarder with a test CA in front of the local node)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trustme
from support.tls_forwarder import TlsForwarder

from fingerprint_indexer.index.elasticsearch import ElasticsearchUnavailable, connect

pytestmark = pytest.mark.elasticsearch


def test_verify_certs_setting_over_tls(es_env: pytest.MonkeyPatch, es_url: str, tmp_path: Path) -> None:
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    with TlsForwarder(es_url, ca) as tls:
        with pytest.raises(ElasticsearchUnavailable):  # the test CA is not trusted by default
            connect(tls.url)
        es_env.setenv("ES_CA_CERTS", str(ca_file))
        connect(tls.url).close()
        es_env.delenv("ES_CA_CERTS")
        es_env.setenv("ES_VERIFY_CERTS", "false")
        connect(tls.url).close()
        es_env.setenv("ES_VERIFY_CERTS", "maybe")
        with pytest.raises(ElasticsearchUnavailable, match="ES_VERIFY_CERTS must be true or false"):
            connect(tls.url)
