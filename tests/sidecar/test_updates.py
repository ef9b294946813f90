"""How the proxy works out what an update (or a create) will do to a document before sending it: the merge
of a partial doc, and the replay of a request's operations over the documents' current text (pure, no
server)."""

from __future__ import annotations

from typing import Any

from fingerprint_indexer.sidecar.delivery import BulkOp
from fingerprint_indexer.sidecar.updates import Unknown, merge_source, plan_updates


def test_merge_follows_elasticsearch() -> None:
    old = {"title": "t", "meta": {"a": 1, "b": {"c": 2}}, "tags": ["x", "y"]}
    new = merge_source(old, {"meta": {"b": {"d": 3}}, "tags": ["z"], "title": None})
    assert new == {"title": None, "meta": {"a": 1, "b": {"c": 2, "d": 3}}, "tags": ["z"]}
    assert old["meta"] == {"a": 1, "b": {"c": 2}}  # the current source is not changed in place


def test_update_plan_follows_earlier_operations_of_the_request() -> None:
    def op(action: str, doc_id: str, source: Any = None) -> BulkOp:
        return BulkOp(action, {"_index": "news", "_id": doc_id}, source)

    ops = [op("update", "a", {"doc": {"content": "A2"}}),  # over the stored a
           op("index", "b", {"title": "T", "content": "B1"}),
           op("update", "b", {"doc": {"content": "B2"}}),                     # over the b just indexed
           op("delete", "c"), op("update", "c", {"doc": {"content": "C"}}),  # deleted: 404, nothing
           op("update", "d", {"doc": {"content": "D"}, "upsert": {"content": "D0"}}),  # missing: upsert
           op("update", "e", {"doc": {"content": "E"}, "doc_as_upsert": True}),
           op("update", "f", {"doc": {"n": 1}}),                              # no text field
           op("update", "a", {"script": {"source": "x"}}),                    # scripted
           op("update", "a", {"doc": {"title": "A3"}}),                       # after a script: unknown
           op("update", "g", {"doc": {"content": "G"}})]
    current: dict[tuple[str, str], Any] = {
        ("news", "a"): {"title": "TA", "content": "A1"}, ("news", "b"): None,
        ("news", "c"): {"content": "C0"}, ("news", "d"): None, ("news", "e"): None,
        ("news", "g"): Unknown.SOURCE}
    plans, outcomes, held = plan_updates(ops, current)
    got = {pos: (p.target, getattr(p.document, "title", None), getattr(p.document, "content", None))
           for pos, p in plans.items()}
    assert got == {0: ("doc", "TA", "A2"), 2: ("doc", "T", "B2"), 5: ("upsert", "", "D0"),
                   6: ("doc", "", "E")}
    assert outcomes == {0: "fingerprinted", 2: "fingerprinted", 4: "no_text", 5: "fingerprinted",
                        6: "fingerprinted", 7: "no_text", 8: "scripted", 9: "unknown_source",
                        10: "unknown_source"}
    assert held == {}


def test_create_plan_holds_creates_of_existing_ids() -> None:
    """Creates Elasticsearch will refuse (the id exists before the request or after an earlier operation of
    it) or that cannot be judged are held back from the store; creates of absent ids are not."""
    def op(action: str, doc_id: str, source: Any = None) -> BulkOp:
        return BulkOp(action, {"_index": "news", "_id": doc_id}, source)

    ops = [op("create", "a", {"content": "A2"}),                        # exists: 409
           op("create", "b", {"content": "B"}),                         # looked up, absent
           op("create", "b", {"content": "B2"}),                        # just created: 409
           op("create", "c", {"content": "C"}),                         # never stored: taken as new
           op("index", "d", {"content": "D"}), op("create", "d", {"content": "D2"}),
           op("delete", "a"), op("create", "a", {"content": "A3"}),    # deleted first: created
           op("create", "u", {"content": "U"}),                         # could not be asked
           op("update", "e", {"doc": {"n": 1}, "doc_as_upsert": True}),
           op("create", "e", {"content": "E"})]                         # upserted just now: 409
    current: dict[tuple[str, str], Any] = {("news", "a"): {"content": "A1"}, ("news", "b"): None,
                                           ("news", "u"): Unknown.SOURCE}
    plans, _, held = plan_updates(ops, current)
    assert held == {0: "exists", 2: "exists", 5: "exists", 8: "unknown", 10: "exists"}
    assert plans == {}
