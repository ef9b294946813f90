"""es similar's look-up: verified near-duplicates and exact copies, nearest first, against a real node."""

from __future__ import annotations

import pytest

from fingerprint_indexer.documents import Document
from fingerprint_indexer.elastic.es_ingest import EsDecider, pipelined
from fingerprint_indexer.elastic.similar import similar
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.index.elasticsearch import ElasticsearchIndex

pytestmark = pytest.mark.elasticsearch

STORY = ("The city council approved the new harbour budget on Tuesday after a long debate. "
         "Members argued about the cost of dredging the old channel and the timetable for the works. "
         "The mayor said the first ships would use the deeper berth next spring. "
         "Opponents warned that the fishing fleet would lose its moorings during the building season. "
         "A final vote on the contracts is expected before the end of the year.")  # fmt: skip


def test_near_copies_and_exact_copies_nearest_first_less_the_excluded(es_client, es_index):
    docs = [Document("a", content=STORY), Document("a-exact", content=STORY),
            Document("a-near", content=STORY.replace("Tuesday", "Wednesday")),
            Document("other", content="Weather: rain and strong winds are forecast for the coast all week, "
                                      "with snow on the hills and flooding likely near the river mouth."),
            Document("tiny", content="ok"), Document("tiny-2", content="ok")]  # fmt: skip
    fpr = Fingerprinter()
    pairs = [(d, fpr.fingerprint_document(d)) for d in docs]
    index = ElasticsearchIndex(es_client, es_index)
    list(pipelined(EsDecider(index), [pairs]))
    res = pairs[0][1]

    found = similar(es_client, index, res.evidence, res.content_digest, k=3, exclude="a")
    assert [s.id for s in found][:1] == ["a-exact"] and found[0].distance == 0
    assert "a-near" in {s.id for s in found} and "a" not in {s.id for s in found}
    assert "other" not in {s.id for s in found}
    assert [(s.distance, s.id) for s in found] == sorted((s.distance, s.id) for s in found)
    assert found[0].cluster_id == "a" and found[0].duplicate_of == "a"

    tiny = pairs[4][1]  # degenerate: no block keys, found by its content digest only
    assert [s.id for s in similar(es_client, index, tiny.evidence, tiny.content_digest, exclude="tiny")] == \
        ["tiny-2"]  # fmt: skip
