"""Two stateless sidecars (``serve --state elasticsearch``) in front of one real node: one text sent to both
at once is ``new`` once; a document decided but not written claims nothing; ``/v1/similar`` answers from the
index; the bulk proxy through the official client decides as ``/v1/ingest`` does."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from elasticsearch import Elasticsearch, helpers
from support.decision_contract import STORY_A, STORY_B, edited
from support.service import ServiceProcess, running

from fingerprint_indexer.elastic.claims import claims_index

pytestmark = pytest.mark.elasticsearch


@pytest.fixture(scope="module")
def pair(es_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[ServiceProcess]]:
    root = tmp_path_factory.mktemp("stateless")
    with running([ServiceProcess(es_url, Path(root) / f"data-{i}", "--state", "elasticsearch")
                  for i in range(2)]) as procs:  # fmt: skip
        yield procs


@pytest.fixture
def index(es_client: Elasticsearch) -> Iterator[str]:
    name = f"fpi-test-stateless-{uuid.uuid4().hex[:10]}"
    yield name
    made = list(es_client.indices.get(index=f"{name}*", allow_no_indices=True))
    if made:
        es_client.indices.delete(index=",".join(made))


def ingest(svc: ServiceProcess, index: str, docs: list[dict[str, Any]], write: bool = True) -> list[dict]:
    r = httpx.post(f"{svc.url}/v1/ingest", json={"documents": docs, "index": write, "index_name": index},
                   timeout=60)  # fmt: skip
    assert r.status_code == 200, r.text
    return list(r.json()["results"])


def test_one_text_sent_to_two_sidecars_at_once_is_new_once(pair, index, es_client):
    texts = [STORY_A, STORY_B]
    out: dict[int, list[dict]] = {}

    def run(n: int) -> None:
        docs = [{"id": f"s{n}-{j}", "content": t} for j, t in enumerate(texts)]
        out[n] = ingest(pair[n], index, docs)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for j in range(len(texts)):
        kinds = sorted(out[n][j]["decision"] for n in range(2))
        assert kinds == ["exact_duplicate", "new"]
        winner = next(out[n][j]["id"] for n in range(2) if out[n][j]["decision"] == "new")
        loser = next(out[n][j] for n in range(2) if out[n][j]["decision"] != "new")
        assert (loser["duplicate_of"], loser["cluster_id"]) == (winner, winner)
    es_client.indices.refresh(index=index)
    assert es_client.count(index=index)["count"] == 4
    # a near copy sent later to either sidecar finds the stored story, whichever took it
    later = ingest(pair[1], index, [{"id": "later", "content": edited(STORY_A)}])
    assert later[0]["decision"] == "near_duplicate"


def test_a_document_decided_but_not_written_claims_nothing(pair, index, es_client):
    first = ingest(pair[0], index, [{"id": "probe", "content": STORY_B}], write=False)
    assert first[0]["decision"] == "new"
    written = ingest(pair[1], index, [{"id": "real", "content": STORY_B}])
    assert (written[0]["decision"], written[0]["index"]["status"]) == ("new", 201)
    es_client.indices.refresh(index=claims_index(index))
    owners = {h["_source"]["owner"] for h in es_client.search(index=claims_index(index))["hits"]["hits"]}
    assert owners == {"real"}


def test_similar_and_the_bulk_proxy_answer_from_the_cluster(pair, index, es_client):
    with Elasticsearch(pair[0].url, request_timeout=60) as es:
        actions = [{"_index": index, "_id": "a", "_source": {"content": STORY_A}},
                   {"_index": index, "_id": "b", "_source": {"content": edited(STORY_A)}},
                   {"_index": index, "_id": "c", "_source": {"content": STORY_B}}]  # fmt: skip
        ok, errors = helpers.bulk(es, actions, raise_on_error=False)
        assert (ok, errors) == (3, [])
    es_client.indices.refresh(index=index)
    src = es_client.get(index=index, id="b")["_source"]
    assert (src["decision"], src["duplicate_of"], src["cluster_id"]) == ("near_duplicate", "a", "a")
    r = httpx.get(f"{pair[1].url}/v1/similar/a", params={"index": index}, timeout=30)
    assert r.status_code == 200, r.text
    assert [m["id"] for m in r.json()["matches"]] == ["b"]
    gone = httpx.get(f"{pair[1].url}/v1/similar/nope", params={"index": index}, timeout=30)
    assert gone.status_code == 404


def test_a_cluster_that_cannot_be_asked_decides_nothing(tmp_path):
    port = ServiceProcess("http://127.0.0.1:9", tmp_path / "x").port  # a port nothing listens on
    with ServiceProcess(f"http://127.0.0.1:{port}", tmp_path / "data", "--state", "elasticsearch") as svc:
        r = httpx.post(f"{svc.url}/v1/ingest", json={"documents": [{"id": "a", "content": STORY_A}]},
                       timeout=60)  # fmt: skip
        assert r.status_code == 503
        assert r.headers["retry-after"] == "1"
        assert r.json()["error"]["type"] == "decision_unavailable"
