"""The service talking to Elasticsearch over TLS with credentials, through a real TLS endpoint.

The local node speaks plain HTTP, so a TLS-terminating forwarder (``support.tls_forwarder``) with a
certificate from a test CA stands in front of it and checks the ``Authorization`` header as a secured
cluster would. The service is configured only through the environment (``ES_CA_CERTS``, ``ES_API_KEY``,
``ES_USERNAME``/``ES_PASSWORD``, ``ES_VERIFY_CERTS``), as in production.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
from elasticsearch import Elasticsearch
from support.ingest_driver import wait_checks, wait_spool_empty
from support.service import ServiceProcess
from support.tls_forwarder import TlsForwarder

pytestmark = [pytest.mark.elasticsearch, pytest.mark.corpus, pytest.mark.timeout(600)]

SIDECAR_KEY = "sidecar-key-" + uuid.uuid4().hex
ES_KEY = "es-cluster-credential-" + uuid.uuid4().hex
ES_AUTH = f"ApiKey {ES_KEY}"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("tls") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def _docs(articles: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "title": a["title"], "content": a["content"]}
            for i, a in enumerate(articles)]


def _assert_no_secret(text: str) -> None:
    assert ES_KEY not in text and SIDECAR_KEY not in text


def test_ingest_and_proxy_over_tls_with_es_credentials(
    es_url: str, es_client: Elasticsearch, es_env: pytest.MonkeyPatch, ca: trustme.CA, ca_file: str,
    tmp_path: Path, svc_index: str, zh_articles: list[dict[str, Any]],
) -> None:
    es_env.setenv("ES_CA_CERTS", ca_file)
    es_env.setenv("ES_API_KEY", ES_KEY)
    with TlsForwarder(es_url, ca, require_auth={ES_AUTH}) as tls, \
            ServiceProcess(tls.url, tmp_path / "data", "--index", svc_index, api_key=SIDECAR_KEY) as svc:
        headers = svc.headers()
        ready = httpx.get(f"{svc.url}/readyz")
        assert ready.status_code == 200 and ready.json()["checks"]["elasticsearch"] is True
        docs = _docs(zh_articles[60:63], "t")
        r = httpx.post(f"{svc.url}/v1/ingest", json={"documents": docs, "index": True}, headers=headers,
                       timeout=60)
        assert r.status_code == 200, r.text
        assert [x["index"]["status"] for x in r.json()["results"]] == [201, 201, 201]
        # the proxy, with the official client holding the sidecar's key
        client = Elasticsearch(svc.url, api_key=SIDECAR_KEY, request_timeout=60)
        created = client.index(index=svc_index, id="p1", document={"content": zh_articles[64]["content"]})
        assert created["result"] == "created" and created["fingerprint_indexer"]["decision"] == "new"
        updated = client.update(index=svc_index, id="p1", doc={"content": zh_articles[65]["content"]},
                                refresh=True)  # reads the current source with _mget, over TLS
        assert updated["result"] == "updated"
        assert client.get(index=svc_index, id="t0")["_source"]["title"] == docs[0]["title"]  # pass-through
        assert client.count(index=svc_index)["count"] == 4
        client.close()
    for doc_id in ("t0", "t1", "t2", "p1"):
        assert es_client.get(index=svc_index, id=doc_id)["_source"]["fingerprint_hex"]
    paths = {s.path.split("?")[0] for s in tls.seen}
    assert {"/_bulk", "/_mget", "/_cluster/health", f"/{svc_index}/_doc/t0", f"/{svc_index}/_count"} <= paths
    assert tls.failed_handshakes == 0
    for seen in tls.seen:  # the cluster credential on every request, the sidecar's key on none
        assert seen.headers.get("authorization") == ES_AUTH, (seen.method, seen.path)
        assert "x-api-key" not in seen.headers
        assert SIDECAR_KEY not in json.dumps(seen.headers)


@pytest.mark.parametrize("case", ["wrong_ca", "no_ca", "unreadable_ca"])
def test_untrusted_certificate_reports_unreachable_and_spools(
    case: str, es_url: str, es_client: Elasticsearch, es_env: pytest.MonkeyPatch, ca: trustme.CA,
    ca_file: str, tmp_path: Path, svc_index: str, zh_articles: list[dict[str, Any]],
) -> None:
    """A certificate the service cannot verify: not ready with the reason logged, no request reaches the
    cluster, writes are spooled; with the right CA the spool is replayed and nothing is lost."""
    if case == "wrong_ca":
        other = tmp_path / "other-ca.pem"
        trustme.CA().cert_pem.write_to_path(str(other))
        es_env.setenv("ES_CA_CERTS", str(other))
        reason = "TLS certificate verification failed"
    elif case == "unreadable_ca":
        es_env.setenv("ES_CA_CERTS", str(tmp_path / "no-such-ca.pem"))
        reason = "cannot be used"
    else:  # the system's trust store, which does not know the test CA
        reason = "TLS certificate verification failed"
    es_env.setenv("ES_API_KEY", ES_KEY)
    data = tmp_path / "data"
    docs = _docs(zh_articles[70:72], "q")
    with TlsForwarder(es_url, ca, require_auth={ES_AUTH}) as tls:
        with ServiceProcess(tls.url, data, "--index", svc_index, api_key=SIDECAR_KEY) as svc:
            ready = httpx.get(f"{svc.url}/readyz")
            assert ready.status_code == 503
            assert ready.json()["checks"]["elasticsearch"] is False
            assert reason in ready.json()["checks"]["elasticsearch_reason"]
            _assert_no_secret(ready.text)
            r = httpx.post(f"{svc.url}/v1/ingest", json={"documents": docs, "index": True},
                           headers=svc.headers(), timeout=60)
            assert r.status_code == 200, r.text
            assert [x["index"]["status"] for x in r.json()["results"]] == [202, 202]
            client = Elasticsearch(svc.url, api_key=SIDECAR_KEY, request_timeout=60)
            via_proxy = client.index(index=svc_index, id="q9",
                                     document={"content": zh_articles[73]["content"]})
            assert via_proxy["result"] == "created" and via_proxy["fingerprint_indexer"]["queued"] is True
            client.close()
            assert httpx.get(f"{svc.url}/readyz").json()["checks"]["spool_depth"] >= 2
            log = svc.log_text()
        assert reason in log, log[-2000:]
        _assert_no_secret(log)
        assert tls.seen == []  # nothing was sent to a server the service could not verify
        if case != "unreadable_ca":
            assert tls.failed_handshakes > 0
        # the same data directory, now trusting the right CA: the spool is replayed
        es_env.setenv("ES_CA_CERTS", ca_file)
        with ServiceProcess(tls.url, data, "--index", svc_index, api_key=SIDECAR_KEY) as svc:
            wait_spool_empty(svc.url, {}, timeout=120)
    es_client.indices.refresh(index=svc_index)
    for doc_id in ("q0", "q1", "q9"):
        src = es_client.get(index=svc_index, id=doc_id)["_source"]
        assert src["fingerprint_hex"] and src["decision"] == "new"


def test_basic_auth_and_verification_off(
    es_url: str, es_env: pytest.MonkeyPatch, ca: trustme.CA, tmp_path: Path
) -> None:
    """ES_USERNAME/ES_PASSWORD become Basic credentials; ES_VERIFY_CERTS=false connects without a CA."""
    password = "pässword-" + uuid.uuid4().hex
    es_env.setenv("ES_USERNAME", "ingest")
    es_env.setenv("ES_PASSWORD", password)
    es_env.setenv("ES_VERIFY_CERTS", "false")
    token = base64.b64encode(f"ingest:{password}".encode()).decode()
    with TlsForwarder(es_url, ca, require_auth={f"Basic {token}"}) as tls, \
            ServiceProcess(tls.url, tmp_path / "data") as svc:
        ready = httpx.get(f"{svc.url}/readyz")
        assert ready.status_code == 200, ready.text
        assert "not verified" in svc.log_text()
    assert tls.seen and {s.headers.get("authorization") for s in tls.seen} == {f"Basic {token}"}


def test_acknowledged_writes_wait_out_refused_credentials(
    es_url: str, es_client: Elasticsearch, es_env: pytest.MonkeyPatch, ca: trustme.CA, ca_file: str,
    tmp_path: Path, svc_index: str, zh_articles: list[dict[str, Any]],
) -> None:
    """#16 Deliver 3: the cluster starts refusing the service's key (401) with writes in the spool; they
    are kept (nothing in rejected.ndjson), /readyz says why, and once the key works again they are
    applied exactly once."""
    es_env.setenv("ES_CA_CERTS", ca_file)
    es_env.setenv("ES_API_KEY", ES_KEY)
    data = tmp_path / "data"
    with TlsForwarder(es_url, ca, require_auth={ES_AUTH}) as tls, \
            ServiceProcess(tls.url, data, "--index", svc_index, api_key=SIDECAR_KEY) as svc:
        client = Elasticsearch(svc.url, api_key=SIDECAR_KEY, request_timeout=60)
        client.index(index=svc_index, id="before", document={"content": zh_articles[80]["content"]})
        tls.require_auth = set()  # the key is revoked
        ops: list[dict[str, Any]] = []
        for i, a in enumerate(zh_articles[81:85]):
            ops += [{"index": {"_index": svc_index, "_id": f"r/{i}"}}, {"content": a["content"]}]
        resp = client.bulk(operations=ops)
        assert not resp["errors"]
        assert all(next(iter(it.values()))["fingerprint_indexer"]["queued"] for it in resp["items"])
        # the readiness reason is the last failure seen: a transport error on a connection the forwarder
        # dropped may come first, and the 401 with the next attempt
        wait_checks(svc.url, {}, lambda c: c["elasticsearch"] is False and "401" in c["elasticsearch_reason"],
                    "Elasticsearch's 401 in the readiness reason", timeout=30)
        time.sleep(3)  # several replay attempts meet the 401
        assert httpx.get(f"{svc.url}/readyz").json()["checks"]["spool_depth"] >= 1
        assert not (data / "spool" / "rejected.ndjson").exists()
        tls.require_auth = {ES_AUTH}  # credentials work again
        wait_spool_empty(svc.url, {}, timeout=120)
        client.close()
    es_client.indices.refresh(index=svc_index)
    assert es_client.count(index=svc_index)["count"] == 5
    assert not (data / "spool" / "rejected.ndjson").exists()
