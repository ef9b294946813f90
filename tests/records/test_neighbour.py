"""The one look-up result every reader answers with: its JSON shapes and its order."""

from __future__ import annotations

from fingerprint_indexer.records.neighbour import Neighbour, split_neighbours
from fingerprint_indexer.records.record import DocRecord
from fingerprint_indexer.verification import Verdict

ACCEPTED = Verdict(1, (0, 0), 0.9, True)
REJECTED = Verdict(2, (0, 1), 0.1, False, "texts differ: similarity 0.10 < 0.30", step="text")


def test_shapes_of_a_match_and_of_a_rejected_candidate():
    match = Neighbour("a", 1, "c", None, ACCEPTED)
    assert match.to_dict() == {"id": "a", "distance": 1, "cluster_id": "c", "duplicate_of": None}
    assert Neighbour("a", 1, "c", None).to_dict() == match.to_dict()  # a reader without verdicts
    rejected = Neighbour("b", 2, "b", None, REJECTED)
    assert rejected.to_dict() == {"id": "b", "distance": 2, "cluster_id": "b", "duplicate_of": None,
                                  "rejected_at": "text", "rejected_because": REJECTED.reason}  # fmt: skip
    assert list(rejected.to_dict()) == ["id", "distance", "cluster_id", "duplicate_of", "rejected_at",
                                        "rejected_because"]  # fmt: skip


def test_an_exact_copy_is_accepted_whatever_the_checks_say():
    rec = DocRecord("x", 0, "d", "kd", "x", "new", None, None, False, 10, None, "v", 0.0)
    assert Neighbour.judged(rec, REJECTED).rejected
    copy = Neighbour.judged(rec, REJECTED, exact=True)
    assert not copy.rejected and copy.verdict is not None and copy.verdict.distance == REJECTED.distance


def test_matches_and_rejected_each_nearest_first_then_by_id():
    found = [Neighbour("z", 0, None, None, ACCEPTED), Neighbour("r2", 1, None, None, REJECTED),
             Neighbour("b", 2, None, None, ACCEPTED), Neighbour("a", 2, None, None),
             Neighbour("r1", 3, None, None, REJECTED), Neighbour("r0", 3, None, None, REJECTED)]  # fmt: skip
    got = split_neighbours(found)
    assert [n.id for n in got.matches] == ["z", "a", "b"]
    assert [n.id for n in got.rejected] == ["r2", "r0", "r1"]
    assert [n.id for n in got.all()] == ["z", "a", "b", "r2", "r0", "r1"]
