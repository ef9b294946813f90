"""MinHash sketches: stable, size-checked, and tracking the Jaccard similarity of 5-gram sets."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.slow_fingerprint import slow_sketch

from fingerprint_indexer.fingerprint import native
from fingerprint_indexer.fingerprint.sketch import (
    BAND_ROWS,
    BANDS,
    SKETCH_SIZE,
    band_keys_reference,
    from_bytes,
    from_bytes_many,
    shingle_hashes,
    similarities,
    similarity,
    sketch,
    to_bytes,
)

TEXT = "国际学校的教师通常来自国外,他们希望通过教书的方式体验其他国家。" * 3 + "学校的声誉怎么样。"


def test_identical_and_whitespace_insensitive() -> None:
    assert similarity(sketch(TEXT), sketch(TEXT.replace("。", "。\n "))) == 1.0


def test_unrelated_texts_are_far_apart() -> None:
    other = "The Bank of England has left interest rates on hold again at 4.75%, in a widely-predicted move."
    assert similarity(sketch(TEXT), sketch(other)) < 0.1


def test_similarity_tracks_jaccard() -> None:
    base = "".join(f"第{i}段内容讲述了不同的事情{i * 7}。" for i in range(200))
    edited = base[: len(base) // 2] + "完全不同的结尾" * 10
    a, b = set(shingle_hashes(base).tolist()), set(shingle_hashes(edited).tolist())
    jaccard = len(a & b) / len(a | b)
    assert abs(similarity(sketch(base), sketch(edited)) - jaccard) < 0.15


def test_empty_text() -> None:
    s = sketch("")
    assert s.shape == (SKETCH_SIZE,)
    assert shingle_hashes("  ").size == 0
    assert sketch("ab").shape == (SKETCH_SIZE,)  # shorter than one shingle


def test_bytes_round_trip_and_errors() -> None:
    s = sketch(TEXT)
    assert np.array_equal(from_bytes(to_bytes(s)), s)
    with pytest.raises(ValueError):
        from_bytes(b"abc")
    with pytest.raises(ValueError):
        similarity(s, s[:10])
    with pytest.raises(ValueError):
        sketch(TEXT, size=0)


def test_stable_across_processes() -> None:
    code = (
        "from fingerprint_indexer.fingerprint.sketch import sketch; "
        "print(sketch('稳定的哈希值测试文本').tolist())"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outs) == 1
    assert outs.pop().strip() == str(sketch("稳定的哈希值测试文本").tolist())


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=0, max_size=200))
def test_self_similarity_is_one(text: str) -> None:
    assert similarity(sketch(text), sketch(text)) == 1.0


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_similarities_equal_per_row_similarity(data: st.DataObject) -> None:
    """The matrix form gives exactly the per-candidate figure (same float, so the same threshold verdicts),
    also when rows share many minima with the query."""
    size = data.draw(st.integers(1, 64))
    n = data.draw(st.integers(0, 20))
    values = st.integers(0, 3) if data.draw(st.booleans()) else st.integers(0, 2**32 - 1)
    q = np.array(data.draw(st.lists(values, min_size=size, max_size=size)), dtype=np.uint32)
    rows = np.array(data.draw(st.lists(st.lists(values, min_size=size, max_size=size), min_size=n,
                                       max_size=n)), dtype=np.uint32).reshape(n, size)  # fmt: skip
    got = similarities(q, rows)
    assert got.tolist() == [similarity(q, r) for r in rows]
    blobs = [to_bytes(r) for r in rows]
    matrix = from_bytes_many(blobs, size)
    assert np.array_equal(matrix, rows)
    assert all(np.array_equal(from_bytes(b), r) for b, r in zip(blobs, matrix, strict=True))


def test_similarities_and_from_bytes_many_reject_other_sizes() -> None:
    s = sketch(TEXT)
    with pytest.raises(ValueError):
        similarities(s, np.zeros((2, 10), dtype=np.uint32))
    with pytest.raises(ValueError):
        from_bytes_many([to_bytes(s), to_bytes(s[:10])])


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("新闻的国家ab c1\n。，")), max_size=80), st.integers(1, 64))
def test_vectorised_sketch_equals_the_shingle_by_shingle_reference(text: str, size: int) -> None:
    """The in-place, blocked mixing gives the minima of the plain per-shingle, per-seed loop."""
    assert np.array_equal(sketch(text, size), slow_sketch(text, size))


def test_sketch_blocks_join_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mixing a few rows at a time gives the same minima as mixing all at once."""
    import fingerprint_indexer.fingerprint.sketch as module

    whole = sketch(TEXT * 5)
    monkeypatch.setattr(module, "_ROWS", 7)
    assert np.array_equal(sketch(TEXT * 5), whole)


@pytest.mark.skipif(not native.AVAILABLE, reason="the compiled core is not built")
@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=600) | st.builds(lambda n, tail: b"\xff" * n + tail, st.integers(120, 140),
                                                  st.binary(max_size=64)))
def test_compiled_band_keys_equal_the_reference(data: bytes) -> None:
    """Band keys of any sketch, too short ones and ones whose banded minima are empty included."""
    assert native.band_keys(data, BANDS, BAND_ROWS) == band_keys_reference(data)
