"""Create-only claims of content digests, so that writers sharing one index agree on which copy of a text
is ``new`` (several stateless sidecars, ``serve --state elasticsearch``).

A search sees a document only after the index refreshes, so two writers given the same text at once would
both find no earlier copy and both call theirs ``new``. A claim closes that gap: before a writer writes a
document that is the first of its content digest, it creates the claim document ``_id = digest`` in the
claims index with ``op_type=create``. Elasticsearch applies one create per id, so exactly one writer
wins; the others get 409 and read the claim by id (a read by id is real-time, it needs no refresh). The
claim holds the winner's decision record and that of its group's canonical, so a loser can decide its copy
as the winner's exact duplicate even before the winner's document is written.

A claim stays valid while its owner's document holds that digest, or, for ``GRACE_S`` after it was made,
while the owner's document is not written yet (its write may be in flight or spooled). A claim whose owner
was deleted, rewritten with another text, or never written is stale: the next writer of that digest takes
it over (an ``index`` conditional on the claim's sequence number, so two takers cannot both win).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from elasticsearch import Elasticsearch

from fingerprint_indexer.errors import FingerprintIndexerError
from fingerprint_indexer.es.errors import EsUnavailable
from fingerprint_indexer.es.mapping import create_if_absent, wait_for_primaries
from fingerprint_indexer.records.record import DocRecord

#: Seconds a claim whose owner's document is not in the index yet is still honoured.
GRACE_S = 600.0
SUFFIX = "-fpi-claims"
CLAIMS_BODY: dict[str, Any] = {
    "settings": {"index": {"number_of_shards": 1}},
    "mappings": {
        "dynamic": False,
        "properties": {"owner": {"type": "keyword"},
                       "claimed_at": {"type": "date", "format": "epoch_millis"}},
        "_meta": {"fingerprint_indexer": {"claims": "one document per content digest (_id): the decision "
                                                    "record of the first document written with it"}},
    },
}


def claims_index(index: str) -> str:
    """The claims index that belongs to ``index`` (an alias or a concrete index)."""
    return f"{index}{SUFFIX}"


@dataclass(frozen=True)
class Claim:
    """The claim of one digest: the owner's record (and its canonical's), when made, and the version the
    claim document has (for a conditional take-over)."""

    digest: str
    owner: DocRecord
    canonical: DocRecord | None
    claimed_at: float
    seq_no: int
    primary_term: int

    def fresh(self, now: float) -> bool:
        return now - self.claimed_at < GRACE_S


#: The owner of a damaged claim (no id: see :func:`_claim`).
_EMPTY = DocRecord(id="", fingerprint=0, content_digest="", keyword_digest="", cluster_id="", decision="new",
                   duplicate_of=None, distance=None, degenerate=True, length=0, published_at=None, version="",
                   time=0.0)


def _claim(doc: Mapping[str, Any]) -> Claim:
    """A claim document as read; a damaged one has no owner (``owner.id`` empty): it is taken over like a
    stale one."""
    src = doc.get("_source") or {}
    try:
        owner = DocRecord.from_dict(src["record"])
        canonical = DocRecord.from_dict(src["canonical"]) if src.get("canonical") else None
        claimed_at = float(src["claimed_at"]) / 1000.0
    except (KeyError, TypeError, ValueError):
        owner, canonical, claimed_at = _EMPTY, None, 0.0
    return Claim(str(doc["_id"]), owner, canonical, claimed_at, int(doc["_seq_no"]),
                 int(doc["_primary_term"]))


class ClaimError(FingerprintIndexerError):
    """Elasticsearch refused a claim for another reason than a lost race."""


class DigestClaims:
    """The claims index of one document index, read and written through the official client."""

    def __init__(self, client: Elasticsearch, index: str, replicas: int = 0) -> None:
        self.client, self.index = client, claims_index(index)
        self.replicas = replicas
        self._ready = False

    def ensure(self) -> None:
        """Create the claims index if it does not exist (a concurrent creator is fine)."""
        if self._ready:
            return
        if not self.client.indices.exists(index=self.index):
            body = {**CLAIMS_BODY, "settings": {"index": {**CLAIMS_BODY["settings"]["index"],
                                                          "number_of_replicas": self.replicas}}}
            create_if_absent(self.client, self.index, body)
        wait_for_primaries(self.client, self.index)  # another writer may have just created it
        self._ready = True

    def lookup(self, digests: Iterable[str]) -> dict[str, Claim]:
        """The claims of these digests (real-time reads: they need no refresh)."""
        wanted = sorted(set(digests))
        if not wanted:
            return {}
        self.ensure()
        resp = self.client.mget(index=self.index, ids=wanted, realtime=True)
        out = {}
        for doc in resp["docs"]:
            if doc.get("error"):
                raise EsUnavailable(f"reading claim {doc['_id']!r} of {self.index!r}: {doc['error']}")
            if doc.get("found"):
                out[str(doc["_id"])] = _claim(doc)
        return out

    def claim(
        self, wanted: Sequence[tuple[DocRecord, DocRecord | None]], takeover: Mapping[str, Claim]
    ) -> dict[str, Claim]:
        """Claim each record's digest for it (with its canonical's record); ``takeover`` are the stale or own
        claims to overwrite, conditionally on their version. Returns the claims lost: digest -> the claim
        that holds it now (a lost race read back, real-time)."""
        if not wanted:
            return {}
        self.ensure()
        now_ms = int(time.time() * 1000)
        ops: list[dict[str, Any]] = []
        for rec, canonical in wanted:
            meta: dict[str, Any] = {"_index": self.index, "_id": rec.content_digest}
            old = takeover.get(rec.content_digest)
            if old is None:
                ops.append({"create": meta})
            else:
                ops.append({"index": {**meta, "if_seq_no": old.seq_no, "if_primary_term": old.primary_term}})
            ops.append({"owner": rec.id, "claimed_at": now_ms, "record": rec.to_dict(),
                        "canonical": canonical.to_dict() if canonical is not None else None})
        resp = self.client.bulk(operations=ops, refresh=False)
        lost: list[str] = []
        for (rec, _), item in zip(wanted, resp["items"], strict=True):
            body = next(iter(item.values()))
            status = int(body.get("status", 500))
            if status == 409:
                lost.append(rec.content_digest)
            elif status >= 300:
                raise ClaimError(f"claiming digest {rec.content_digest!r} in {self.index!r}: "
                                   f"{body.get('error')}")
        return self.lookup(lost) if lost else {}

    def owned_by(self, owner: str, size: int = 16) -> list[str]:
        """Digests ``owner`` holds claims on (searchable once the claims index refreshed)."""
        self.ensure()
        resp = self.client.search(index=self.index, query={"term": {"owner": owner}}, size=size, source=False)
        return [str(h["_id"]) for h in resp["hits"]["hits"]]

    def release(self, digest: str, owner: str) -> None:
        """Drop the claim of ``digest`` if ``owner`` holds it (its document was deleted)."""
        claim = self.lookup([digest]).get(digest)
        if claim is None or claim.owner.id != owner:
            return
        fine = self.client.options(ignore_status=(404, 409))  # gone already, or taken over since
        fine.delete(index=self.index, id=digest, if_seq_no=claim.seq_no, if_primary_term=claim.primary_term)
