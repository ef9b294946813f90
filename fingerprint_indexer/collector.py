"""Python's cycle collector during long runs: the one place its settings are changed.

A long run (an ingest, a crawl with an embedded store, the service) keeps large tables alive (the
fingerprinter's, the modules') and, while it runs, thousands of documents in flight, and it allocates many
small objects: at Python's default settings the collector traverses all of that again and again, for
nothing (those objects are freed by reference counting, not by the collector). :func:`long_run` moves
what is alive when the run starts out of the collections (``gc.freeze``) and, for an ingest, collects the
youngest generation less often; everything is as it was when the run ends, even after an error.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Net allocations between collections of the youngest generation during a long ingest (Python: 700).
#: It keys on how many objects an ingest keeps alive between the points it lets go of them: ``es index``
#: holds every decision since its last refresh (20 batches, some ten objects a document), and at
#: 50,000 the collector traversed that window whole a few times a refresh, for nothing; the service
#: holds a bulk request's operations, sources, results and decisions (thousands of documents) while it
#: decides and writes them.
INGEST_GC_YOUNG = 500_000


def freeze_start_up() -> None:
    """Move every object alive now (modules, the fingerprinter's tables: load them first) out of the
    collections, for good: for a process whose whole life is the run (a fingerprinting worker)."""
    gc.freeze()


@contextmanager
def long_run(young: int | None = INGEST_GC_YOUNG) -> Iterator[None]:
    """Objects alive now (modules, the fingerprinter's tables: load them first) frozen out of the
    collections while the block runs, and with ``young`` the youngest generation collected every
    ``young`` net allocations (None: Python's threshold kept, for code that is a guest in another's
    process, such as a crawler's item pipeline, whose host's objects should stay collected as they
    were)."""
    old = gc.get_threshold()
    freeze_start_up()
    if young is not None:
        gc.set_threshold(young, old[1], old[2])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()
