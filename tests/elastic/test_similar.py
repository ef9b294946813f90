"""es similar's look-up: near-duplicates and exact copies nearest first, then the look-alikes the rule
rejected with its reason, against a real node."""

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

    found = similar(es_client, index, res.evidence, res.content_digest, k=3, exclude="a").matches
    assert [s.id for s in found][:1] == ["a-exact"] and found[0].distance == 0
    assert "a-near" in {s.id for s in found} and "a" not in {s.id for s in found}
    assert "other" not in {s.id for s in found}
    assert [(s.distance, s.id) for s in found] == sorted((s.distance, s.id) for s in found)
    assert found[0].cluster_id == "a" and found[0].duplicate_of == "a"

    tiny = pairs[4][1]  # degenerate: no block keys, found by its content digest only
    tiny_found = similar(es_client, index, tiny.evidence, tiny.content_digest, exclude="tiny")
    assert [s.id for s in tiny_found.matches] == ["tiny-2"] and tiny_found.rejected == []


#: One wire template; two items of it differ in one figure.
AUCTION = ("The central bank said on Monday it sold {x} million dollars of bonds at its weekly auction. "
           "Demand was steady and the yield on the ten-year note was little changed. "
           "Dealers said the next auction would follow the usual schedule.")  # fmt: skip


def test_a_template_item_with_another_figure_is_a_rejected_look_alike(es_client, es_index):
    docs = [Document("may", content=AUCTION.format(x=450)), Document("june", content=AUCTION.format(x=720))]
    fpr = Fingerprinter()
    pairs = [(d, fpr.fingerprint_document(d)) for d in docs]
    index = ElasticsearchIndex(es_client, es_index)
    list(pipelined(EsDecider(index), [pairs]))
    res = pairs[1][1]

    found = similar(es_client, index, res.evidence, res.content_digest, k=3, exclude="june")
    assert found.matches == []
    assert [(n.id, n.rejected_at) for n in found.rejected] == [("may", "facts")]
    assert "450" in found.rejected[0].rejected_because and found.rejected[0].cluster_id == "may"
