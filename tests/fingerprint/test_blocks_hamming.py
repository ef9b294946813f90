"""Invariants of block splitting and Hamming distance (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.hamming import (
    from_hex,
    hamming,
    hamming_many,
    to_hex,
    to_signed,
    to_unsigned,
)

u64 = st.integers(min_value=0, max_value=(1 << 64) - 1)
layouts = st.integers(min_value=1, max_value=16).map(BlockLayout.even)
#: permuted layouts: n blocks, keys of 1..n-1 of them (max_k = n - per_key)
permuted = st.integers(min_value=2, max_value=8).flatmap(
    lambda n: st.integers(min_value=1, max_value=n - 1).map(
        lambda p: BlockLayout(BlockLayout.even(n).widths, p)))


def flip(fp: int, bits: list[int]) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


@given(u64, u64)
def test_hamming_is_a_metric(a: int, b: int) -> None:
    assert hamming(a, a) == 0
    assert hamming(a, b) == hamming(b, a)
    assert 0 <= hamming(a, b) <= 64
    assert (hamming(a, b) == 0) == (a == b)


@given(u64, u64, u64)
def test_triangle_inequality(a: int, b: int, c: int) -> None:
    assert hamming(a, c) <= hamming(a, b) + hamming(b, c)


@given(u64, st.lists(u64, max_size=50))
def test_vectorised_hamming_matches_scalar(q: int, fps: list[int]) -> None:
    got = hamming_many(q, np.array(fps, dtype=np.uint64))
    assert got.tolist() == [hamming(q, f) for f in fps]


@given(u64, layouts)
def test_blocks_reassemble_the_fingerprint(fp: int, layout: BlockLayout) -> None:
    value = 0
    for v, w in zip(layout.split(fp), layout.widths, strict=True):
        assert 0 <= v < (1 << w)
        value = (value << w) | v
    assert value == fp
    assert layout.split_many(np.array([fp], dtype=np.uint64))[0].tolist() == list(layout.split(fp))


@given(u64, layouts, st.data())
def test_pigeonhole_within_max_k_shares_a_block(fp: int, layout: BlockLayout, data: st.DataObject) -> None:
    k = layout.max_k
    bits = data.draw(st.lists(st.integers(0, 63), min_size=0, max_size=k, unique=True))
    other = flip(fp, bits)
    assert hamming(fp, other) <= k
    assert any(x == y for x, y in zip(layout.split(fp), layout.split(other), strict=True))


@given(u64, permuted, st.data())
def test_within_max_k_two_fingerprints_share_a_key(fp: int, layout: BlockLayout, data: st.DataObject) -> None:
    bits = data.draw(st.lists(st.integers(0, 63), min_size=0, max_size=layout.max_k, unique=True))
    other = flip(fp, bits)
    assert any(x == y for x, y in zip(layout.keys(fp), layout.keys(other), strict=True))


@given(u64, permuted)
def test_a_key_is_its_blocks_side_by_side(fp: int, layout: BlockLayout) -> None:
    blocks = layout.split(fp)
    for key, table, width in zip(layout.keys(fp), layout.tables, layout.key_widths, strict=True):
        value = 0
        for b in table:
            value = (value << layout.widths[b]) | blocks[b]
        assert key == f"{value:0{(width + 3) // 4}x}"
    assert layout.n_keys == len(set(layout.tables)) and BlockLayout.from_dict(layout.to_dict()) == layout


def test_the_permuted_layout_for_k_3() -> None:
    layout = BlockLayout.permuted(3)
    assert layout.widths == (11, 11, 11, 11, 10, 10) and layout.per_key == 3
    assert layout.n_keys == 20 and layout.max_k == 3 and min(layout.key_widths) == 31
    assert layout.keys(0)[0] == "000000000" and len(layout.keys(1 << 63)) == 20
    assert BlockLayout.permuted(1) == BlockLayout()  # keys of one block: the plain split
    assert BlockLayout().to_dict() == {"widths": [16, 16, 16, 16]}  # as indexes of before record it
    with pytest.raises(ValueError, match="serves k <= 3"):
        layout.check_k(4)
    with pytest.raises(ValueError, match="per_key"):
        BlockLayout((32, 32), per_key=3)


def test_block_order_is_most_significant_first() -> None:
    layout = BlockLayout()
    assert layout.split(0x0123456789ABCDEF) == (0x0123, 0x4567, 0x89AB, 0xCDEF)
    assert layout.keys(0x0123456789ABCDEF) == ["0123", "4567", "89ab", "cdef"]
    assert layout.max_k == 3


def test_layout_validation() -> None:
    with pytest.raises(ValueError):
        BlockLayout((16, 16, 16))
    with pytest.raises(ValueError, match="serves k <= 3"):
        BlockLayout().check_k(4)
    assert BlockLayout.for_k(6).n_blocks == 7
    assert BlockLayout.for_k(2) == BlockLayout()
    assert BlockLayout.from_dict(BlockLayout.even(5).to_dict()) == BlockLayout.even(5)


@given(u64)
def test_signed_roundtrip_and_hex(fp: int) -> None:
    s = to_signed(fp)
    assert -(1 << 63) <= s < (1 << 63)
    assert to_unsigned(s) == fp
    h = to_hex(fp)
    assert len(h) == 16 and h == h.lower()
    assert from_hex(h) == fp


def test_from_hex_rejects_garbage() -> None:
    for bad in ["", "123", "zz" * 8, "0" * 17]:
        with pytest.raises(ValueError):
            from_hex(bad)


@settings(max_examples=150, deadline=None)
@given(fps=st.lists(st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 2**64 - 1])), max_size=40),
       layout=st.one_of(st.integers(1, 64).map(BlockLayout.even), st.integers(0, 5).map(BlockLayout.permuted),
                        st.sampled_from([BlockLayout((8, 24, 16, 16), per_key=2), BlockLayout((64,))])))
def test_compiled_block_keys_equal_the_reference(fps, layout):
    """The keys an index stores, whichever code cuts them: every layout, the extreme fingerprints."""
    if not native.enabled():
        pytest.skip("the compiled core is not built")
    arr = np.array(fps, dtype=np.uint64)
    assert layout.keys_many(arr) == layout.keys_many_reference(arr)
    for distinct in ("first", "sorted"):  # each key once: as the fields store them, as queries ask
        assert layout.keys_many(fps * 2, distinct) == layout.keys_many_reference(arr.repeat(2), distinct)
    many = fps * 3 + [f ^ 1 for f in fps]  # past the few fingerprints compared in turn
    assert layout.keys_many(many, "sorted") == layout.keys_many_reference(np.array(many, np.uint64), "sorted")
    if fps:
        assert layout.keys(fps[0]) == [col[0] for col in layout.keys_many_reference(arr[:1])]
