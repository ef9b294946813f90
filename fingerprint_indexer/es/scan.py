"""Every hit of a query, read from a point-in-time snapshot."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from elasticsearch import Elasticsearch

from fingerprint_indexer.es.servers import close_pit, open_pit, server_of

#: Searches whose answer must be whole: a shard that cannot answer (its node died, taking part of a
#: point-in-time snapshot with it) fails the search rather than leaving its documents out, which would
#: turn a duplicate into ``new``.
WHOLE: dict[str, Any] = {"allow_partial_search_results": False}


def pit_scan(
    client: Elasticsearch,
    index: str,
    query: dict[str, Any],
    page: int,
    keep_alive: str = "2m",
    pit_id: str | None = None,
    **request: Any,
) -> Iterator[dict[str, Any]]:
    """Every hit of ``query`` once, from a point-in-time snapshot paged by ``search_after`` on
    ``_shard_doc`` (or what the server has instead); ``request`` adds search options (``source``,
    ``docvalue_fields``, ...). With ``pit_id`` that snapshot is searched (and left open), else one is opened
    on ``index`` and closed."""
    own = pit_id is None
    pit = open_pit(client, index, keep_alive) if own else pit_id
    sort = server_of(client).pit_sort
    try:
        after: list[Any] | None = None
        while True:
            kw: dict[str, Any] = {"search_after": after} if after is not None else {}
            resp = client.search(
                query=query, size=page, pit={"id": pit, "keep_alive": keep_alive}, sort=sort,
                track_total_hits=False, **WHOLE, **request, **kw,
            )  # fmt: skip
            hits = resp["hits"]["hits"]
            yield from hits
            if len(hits) < page:
                return
            pit, after = resp.get("pit_id", pit), hits[-1]["sort"]
    finally:
        if own:
            close_pit(client, str(pit))
