"""Related articles for a news page: topical neighbours with the reports of one story folded together.

Elasticsearch's ``more_like_this`` finds topical neighbours (on title, body and our jieba-segmented
``terms`` field, which gives Chinese text word-level relevance without analysis plugins). Neighbours that
share a ``cluster_id`` are the same story reported several times: they become one entry ("N similar
reports") led by the best-scoring one. The document's own near-duplicates are left out of the topical
list (the caller returns them separately).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

MLT_FIELDS = ["title", "content", "terms"]


async def related_articles(http: httpx.AsyncClient, index: str, doc_id: str, size: int,
                           exclude: set[str]) -> list[dict[str, Any]] | None:
    """Up to ``size`` folded entries, best first; None when the document does not exist."""
    r = await http.get(f"/{index}/_doc/{quote(doc_id, safe='')}", params={"_source_includes": "cluster_id"})
    if r.status_code == 404:
        return None
    r.raise_for_status()
    own_cluster = (r.json().get("_source") or {}).get("cluster_id")
    body = {
        "query": {"more_like_this": {"fields": MLT_FIELDS, "like": [{"_index": index, "_id": doc_id}],
                                     "min_term_freq": 1, "min_doc_freq": 1, "max_query_terms": 50}},
        "size": size * 4,
        "_source": ["title", "cluster_id"],
    }
    r = await http.post(f"/{index}/_search", json=body)
    r.raise_for_status()
    entries: dict[str, dict[str, Any]] = {}
    for hit in r.json()["hits"]["hits"]:
        hid = str(hit["_id"])
        src = hit.get("_source") or {}
        cluster = src.get("cluster_id")
        if hid in exclude or hid == doc_id or (own_cluster is not None and cluster == own_cluster):
            continue
        key = f"c:{cluster}" if cluster else f"d:{hid}"
        entry = entries.get(key)
        if entry is None:
            title = src.get("title")
            entries[key] = {"id": hid, "title": title if isinstance(title, str) else None,
                            "score": float(hit.get("_score") or 0.0), "cluster_id": cluster,
                            "similar_reports": 0, "members": [hid]}
        else:
            entry["similar_reports"] += 1
            entry["members"].append(hid)
    return list(entries.values())[:size]
