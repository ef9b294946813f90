"""The decision rules, written once: new, exact_duplicate or near_duplicate, the group's canonical under
the keep policy, and the cluster. Pure: every read and write goes through a :class:`RecordStore`, which the
embedded store (:class:`fingerprint_indexer.store.embedded.StoreBatch`) and the Elasticsearch index
(:class:`fingerprint_indexer.elastic.es_ingest.EsDecider`'s batch view) implement.

Rules, for a document ``d`` with fingerprint ``f``:

- same id already stored with the same content digest and algorithm version: its stored decision is
  repeated and nothing is written (re-running an input is idempotent), ``replaces`` included; a canonical
  that was replaced since is reported as the duplicate of the document that replaced it. Same id with
  other content: the old record is replaced, and links that other documents hold to the old text are not
  followed to the new one.
- a stored document with the same content digest: ``exact_duplicate``;
- otherwise (and only when ``d`` is not degenerate) the nearest stored document that has any fingerprint
  (document, lead or chunk) within ``k`` of any of ``d``'s, or a sketch band in common, and that the
  verification rule accepts (:mod:`fingerprint_indexer.verification`): ``near_duplicate``; otherwise ``new``.
  When the facts of that document's canonical conflict with ``d``'s, ``d`` is ``new`` too
  (:func:`fingerprint_indexer.verification.joins`): one template link (A ~ B) must not make ``d`` a copy of a
  different story B was matched to.
- ``duplicate_of`` is the canonical document of the group (found by following ``duplicate_of`` links while
  they stay inside one cluster); under ``keep=longest|newest`` a longer/newer duplicate becomes the
  canonical instead: it is reported with ``duplicate_of`` null and ``replaces`` naming the previous
  canonical, whose record now points at it. ``distance`` is the smallest Hamming distance between any
  fingerprint of ``d`` and any of ``duplicate_of`` (or of ``replaces``).
- cluster: an exact or near duplicate joins the cluster of the document it matched; otherwise Single-Pass
  over non-degenerate documents (nearest centre within ``k`` whose founder the same rule accepts, else a
  new cluster named after ``d``); a degenerate document without an exact duplicate stays alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from fingerprint_indexer.cluster.single_pass import assign
from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.fingerprint.fingerprinter import FingerprintResult
from fingerprint_indexer.fingerprint.hamming import to_hex
from fingerprint_indexer.records.match import Match
from fingerprint_indexer.records.protocol import RecordStore
from fingerprint_indexer.records.record import DocRecord, new_cluster_id, stamp
from fingerprint_indexer.verification import DEFAULT_POLICY, check, closest, joins

Keep = Literal["first", "longest", "newest"]
KEEP_POLICIES: tuple[Keep, ...] = ("first", "longest", "newest")
#: ``duplicate_of`` links followed at most (a chain longer than this, or a loop, ends where it is).
MAX_HOPS = 64
DUPLICATES = frozenset({"exact_duplicate", "near_duplicate"})
T = TypeVar("T")


@dataclass(slots=True)
class Decision:
    """What was decided for one document (one JSONL line of ``dedupe``). A value: nothing changes it once
    made; not declared frozen, because a frozen dataclass sets its fields one call at a time, most of the
    cost of making one, once a document on every path."""

    id: str
    fingerprint: str
    decision: str
    duplicate_of: str | None
    distance: int | None
    cluster_id: str
    replaces: str | None = None
    degenerate: bool = False
    policy: str = DEFAULT_POLICY.tag  # the verification policy that made the decision
    # the document's pictures, each decided against the stored ones: evidence kept with the article,
    # never part of its decision (one wire photo illustrates many stories)
    pictures: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "fingerprint": self.fingerprint,
            "decision": self.decision,
            "duplicate_of": self.duplicate_of,
            "distance": self.distance,
            "cluster_id": self.cluster_id,
            "policy": self.policy,
        }
        if self.replaces is not None:
            out["replaces"] = self.replaces
        if self.degenerate:
            out["degenerate"] = True
        if self.pictures:
            out["pictures"] = list(self.pictures)
        return out


def prefer(doc: Document, canonical: DocRecord, keep: Keep) -> bool:
    """Whether ``doc`` should replace ``canonical`` as the group's kept document."""
    if keep == "longest":
        return doc.length > canonical.length
    if keep == "newest":
        return doc.published_at is not None and (
            canonical.published_at is None or doc.published_at > canonical.published_at
        )
    return False


def duplicate_kind(same_digest: bool) -> str:
    """What a member of a group that is not its canonical is: an exact copy (same content digest) or not."""
    return "exact_duplicate" if same_digest else "near_duplicate"


def batch_canonical(
    members: Iterable[T], published: Callable[[T], float | None], ident: Callable[[T], str]
) -> T:
    """The canonical of a group found all at once (``es dedupe``), where there is no arrival order for
    ``keep=first`` to follow: the first published, then the smallest id; undated members last."""
    return min(members, key=lambda m: (p if (p := published(m)) is not None else float("inf"), ident(m)))


def root(store: RecordStore, doc_id: str) -> DocRecord:
    """The canonical of ``doc_id``'s group: ``duplicate_of`` links followed while they hold.

    Every member of a group is in its canonical's cluster, so a link to a document of another cluster is
    stale: that id was reused for other text since (or the canonical was deleted), and the chain ends
    before it. Under keep longest/newest a replaced canonical points at the copy that replaced it, which
    may point on: the chain is followed to its end.
    """
    rec = store.record(doc_id)
    if rec is None:
        raise store.missing(doc_id)
    seen = {rec.id}
    for _ in range(MAX_HOPS):
        if rec.duplicate_of is None or rec.duplicate_of in seen:
            break
        nxt = store.record(rec.duplicate_of)
        if nxt is None or nxt.cluster_id != rec.cluster_id:  # deleted or reused: this one stands
            break
        rec = nxt
        seen.add(rec.id)
    return rec


def repeat(store: RecordStore, old: DocRecord) -> Decision:
    """The stored decision of a document seen again with the same text."""
    kind = old.decision
    if kind == "new" and old.duplicate_of is not None:  # a canonical replaced under keep longest/newest
        canonical = store.record(old.duplicate_of)
        same = canonical is not None and canonical.content_digest == old.content_digest
        kind = duplicate_kind(same)
    return Decision(old.id, to_hex(old.fingerprint), kind, old.duplicate_of, old.distance, old.cluster_id,
                    old.replaces, old.degenerate)


def verified_centres(store: RecordStore, ev: Evidence, fp: int, k: int) -> list[Match]:
    """Centres within ``k`` whose founder the verification rule accepts as the same story.

    Without this, distinct articles whose fingerprints collide at a few bits (one dominant shared term,
    such as a celebrity's name) or that share a template would be clustered together. A centre whose
    founder was removed has nothing to verify against and is passed over.
    """
    out = []
    for m in store.centres_near(fp, k):
        c = store.cluster(m.doc_id)
        founder = store.record(c.founder) if c is not None else None
        if founder is not None and check(ev, founder.evidence, k).accepted:
            out.append(m)
    return out


def singleton(store: RecordStore, doc_id: str) -> str:
    """A degenerate document's own cluster id (not a searchable centre: it would be a giant bucket)."""
    return new_cluster_id(doc_id, lambda cid: store.cluster(cid) is not None)


def _grow(store: RecordStore, cluster_id: str) -> None:
    c = store.cluster(cluster_id)
    if c is not None:
        c.size += 1
        store.put_cluster(c)


@dataclass(frozen=True)
class Engine:
    """The rules under one setting: distance ``k`` and keep policy. ``report`` is the type of the
    decisions of documents it stores: :class:`Decision`, or a store's subclass that reports more (its
    own fields after these, with defaults), so that no second object is made for each document."""

    k: int = 3
    keep: Keep = "first"
    report: type[Decision] = Decision

    def __post_init__(self) -> None:
        if self.keep not in KEEP_POLICIES:
            raise ValueError(f"keep must be one of {KEEP_POLICIES}, got {self.keep!r}")

    def decide(
        self, store: RecordStore, doc: Document, res: FingerprintResult, alone: bool = False
    ) -> tuple[Decision, DocRecord | None]:
        """Decide one document against ``store`` and write what follows into it: the decision, and the
        record stored (None when the stored decision was repeated and nothing was written).

        ``alone``: the caller has found (for its whole batch at once, or from the answers the store has
        looked up ahead) that nothing is stored under the document's id, that no document has its content
        digest, that none is near and no cluster centre either (and that it is not degenerate), so the
        store is not asked again: the document is ``new`` and founds its cluster, as the questions below
        would conclude (most documents of a news stream)."""
        fp = res.fingerprint
        if alone:
            return self._keep(store, doc, res, "new", None, None, store.found_cluster(doc.id, fp).id, None)
        old = store.record(doc.id)
        if old is not None:
            if old.content_digest == res.content_digest and old.version == res.version:
                return repeat(store, old), None
            store.remove_doc(doc.id)

        kind, match_id = "new", None
        canonical: DocRecord | None = None  # the canonical of the matched document's group
        exact = store.doc_with_digest(res.content_digest)
        if exact is not None:
            kind, match_id = "exact_duplicate", exact
        elif not res.degenerate:
            near = store.near_docs(res.evidence, self.k)
            if near:
                top = root(store, near[0].doc_id)
                if joins(res.evidence, near[0].doc_id, top.id, top.evidence):
                    kind, match_id, canonical = "near_duplicate", near[0].doc_id, top

        duplicate_of = replaces = None
        distance: int | None = None
        if match_id is not None:
            canonical = canonical or root(store, match_id)
            distance = closest(res.fingerprints, canonical.fingerprints)[0]
            if prefer(doc, canonical, self.keep):
                replaces = canonical.id
                canonical.duplicate_of = doc.id
                canonical.distance = distance
                store.update_record(canonical)
            else:
                duplicate_of = canonical.id

        if match_id is not None:
            # a copy belongs with what it matched, even if a nearer centre was founded since
            match = store.record(match_id)
            cluster_id = match.cluster_id if match is not None else singleton(store, doc.id)
            if match is not None:
                _grow(store, cluster_id)
        elif res.degenerate:
            cluster_id = singleton(store, doc.id)
        else:
            a = assign(fp, self.k, lambda f, k: verified_centres(store, res.evidence, f, k), doc.id)
            if a.founded:
                cluster_id = store.found_cluster(doc.id, fp).id
            else:
                cluster_id = a.cluster_id
                _grow(store, cluster_id)

        return self._keep(store, doc, res, kind, duplicate_of, distance, cluster_id, replaces)

    def _keep(
        self, store: RecordStore, doc: Document, res: FingerprintResult, kind: str, duplicate_of: str | None,
        distance: int | None, cluster_id: str, replaces: str | None,
    ) -> tuple[Decision, DocRecord]:  # fmt: skip
        """Store the decided document's record and return the decision with it."""
        fp = res.fingerprint
        # made directly, not through record_now, which would pack the fields into a dict and unpack it again;
        # by position, in the order of DocRecord's fields (a test holds it to the fields by name)
        rec = DocRecord(
            doc.id, fp, res.content_digest, res.keyword_digest, cluster_id, kind, duplicate_of, distance,
            res.degenerate, doc.length, doc.published_at, res.version, stamp(), list(res.chunks),
            res.sketch.hex(), list(res.facts), list(res.frames), replaces,
        )
        store.put_record(rec, index=not res.degenerate, evidence=res.evidence)
        decision = self.report(doc.id, to_hex(fp), kind, duplicate_of, distance, cluster_id, replaces,
                               res.degenerate)
        return decision, rec
