"""One near-duplicate look-up result, as every reader hands it out (``similar``, ``es similar``,
``/v1/similar``), and the one place that orders a look-up's candidates and splits off the rejected ones.

Each reader only finds its candidates (the embedded store, the index of a stateless sidecar, the index of
``es similar``) and judges them; :func:`split_neighbours` puts them in the order every reader answers in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from fingerprint_indexer.records.record import DocRecord
from fingerprint_indexer.verification import Verdict


@dataclass(frozen=True)
class Neighbour:
    """One stored document like the query: its distance, cluster and canonical, and the verification
    rule's verdict on it (None where the reader keeps only accepted documents and no verdict)."""

    id: str
    distance: int
    cluster_id: str | None
    duplicate_of: str | None
    verdict: Verdict | None = None

    @classmethod
    def judged(cls, rec: DocRecord, verdict: Verdict, exact: bool = False) -> Neighbour:
        """``rec`` with the rule's ``verdict`` (see :meth:`of`)."""
        return cls.of(rec.id, rec.cluster_id, rec.duplicate_of, verdict, exact)

    @classmethod
    def of(cls, doc_id: str, cluster_id: str | None, duplicate_of: str | None, verdict: Verdict,
           exact: bool = False) -> Neighbour:  # fmt: skip
        """A document with the rule's ``verdict`` on it; an ``exact`` copy (the same text) is accepted
        whatever the checks said: they cannot disagree with the text itself."""
        if exact and not verdict.accepted:
            verdict = Verdict(verdict.distance, verdict.matched, verdict.similarity, True)
        return cls(doc_id, verdict.distance, cluster_id, duplicate_of, verdict)

    @property
    def rejected(self) -> bool:
        """Whether the verification rule turned this candidate down."""
        return self.verdict is not None and not self.verdict.accepted

    @property
    def rejected_at(self) -> str:
        """The step of the rule that turned it down ("" when accepted)."""
        return self.verdict.step if self.rejected and self.verdict is not None else ""

    @property
    def rejected_because(self) -> str:
        """Why the rule turned it down ("" when accepted)."""
        return self.verdict.reason if self.rejected and self.verdict is not None else ""

    def to_dict(self) -> dict[str, Any]:
        """``id``, ``distance``, ``cluster_id``, ``duplicate_of``, and on a rejected candidate
        ``rejected_at`` and ``rejected_because``."""
        out: dict[str, Any] = {"id": self.id, "distance": self.distance, "cluster_id": self.cluster_id,
                               "duplicate_of": self.duplicate_of}  # fmt: skip
        if self.rejected:
            out["rejected_at"] = self.rejected_at
            out["rejected_because"] = self.rejected_because
        return out


class Neighbours(NamedTuple):
    """A look-up's answer: the near-duplicates, and the candidates the rule rejected, each nearest first."""

    matches: list[Neighbour]
    rejected: list[Neighbour]

    def all(self) -> list[Neighbour]:
        """The near-duplicates, then the rejected candidates."""
        return [*self.matches, *self.rejected]


def split_neighbours(found: Iterable[Neighbour]) -> Neighbours:
    """``found`` (at most one entry per id) as near-duplicates and rejected candidates, each by
    (distance, id): the nearest first (exact copies, at distance 0, among the first), ties by id."""
    ordered = sorted(found, key=lambda n: (n.distance, n.id))
    return Neighbours([n for n in ordered if not n.rejected], [n for n in ordered if n.rejected])
