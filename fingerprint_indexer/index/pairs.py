"""Batch all-pairs search: every pair of fingerprints within Hamming distance k, without an index.

Per block: sort the fingerprints by the block's value, then pair each element with the next ``d``-th one
for d = 1, 2, ... while they still share the block value (the active set shrinks each step, so work is
proportional to the candidate pairs). A pair is kept in block ``b`` only when no earlier block is equal,
so every pair comes out once. The compiled core runs the same steps (:func:`near_pairs`) when it is built;
:func:`near_pairs_reference` is the NumPy version it equals.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.index.memory import _earlier_masks, _first_in_table, key_dtype

IntArray = npt.NDArray[np.int64]


def near_pairs(
    fingerprints: npt.ArrayLike, k: int = 3, layout: BlockLayout | None = None
) -> tuple[IntArray, IntArray, npt.NDArray[np.uint8]]:
    """Index pairs ``(i, j)`` with ``i < j`` and their distances, for all fingerprints within ``k``.

    Returned sorted by (i, j). ``layout`` defaults to the narrowest layout serving ``k``. In compiled code
    when it is built, without the GIL (:func:`near_pairs_reference` otherwise).
    """
    from fingerprint_indexer.fingerprint import native  # the compiled core's one switch; loaded on use

    layout = layout or BlockLayout.for_k(k)
    layout.check_k(k)
    compiled = native.core()
    if compiled is None:
        return near_pairs_reference(fingerprints, k, layout)
    fps = np.ascontiguousarray(np.asarray(fingerprints, dtype=np.uint64))
    i, j, d = compiled.near_pairs(fps, k, list(layout.widths))
    return (np.frombuffer(i, dtype=np.int64), np.frombuffer(j, dtype=np.int64),
            np.frombuffer(d, dtype=np.uint8))  # fmt: skip


def near_pairs_reference(
    fingerprints: npt.ArrayLike, k: int = 3, layout: BlockLayout | None = None
) -> tuple[IntArray, IntArray, npt.NDArray[np.uint8]]:
    """:func:`near_pairs` in NumPy: the reference the compiled pairs must equal."""
    layout = layout or BlockLayout.for_k(k)
    layout.check_k(k)
    fps = np.asarray(fingerprints, dtype=np.uint64)
    n = len(fps)
    earlier = _earlier_masks(layout)
    blocks = layout.split_many(fps)
    out_i: list[IntArray] = []
    out_j: list[IntArray] = []
    out_d: list[npt.NDArray[np.uint8]] = []
    for b, w in enumerate(layout.widths):
        col = blocks[:, b].astype(key_dtype(w))
        order = np.argsort(col, kind="stable")
        skeys = col[order]
        sfps = fps[order]
        active = np.flatnonzero(skeys[:-1] == skeys[1:]) if n > 1 else np.empty(0, np.int64)
        step = 1
        while len(active):
            partner = active + step
            xor = sfps[active] ^ sfps[partner]
            dist = np.bitwise_count(xor)
            ok = dist <= k
            if b and ok.any():
                ok[ok] = _first_in_table(xor[ok], earlier[b])
            if ok.any():
                a = order[active[ok]]
                c = order[partner[ok]]
                out_i.append(np.minimum(a, c))
                out_j.append(np.maximum(a, c))
                out_d.append(dist[ok])
            step += 1
            nxt = active + step
            active = active[nxt < n]
            nxt = nxt[nxt < n]
            active = active[skeys[nxt] == skeys[active]]
    if not out_i:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint8)
    i = np.concatenate(out_i).astype(np.int64)
    j = np.concatenate(out_j).astype(np.int64)
    d = np.concatenate(out_d)
    sort = np.lexsort((j, i))
    return i[sort], j[sort], d[sort]
