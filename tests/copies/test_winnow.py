from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.corpus import EN_BBC, ZH_NEWS, load_records

from fingerprint_indexer.copies import CopyFinder, covered
from fingerprint_indexer.fingerprint.winnow import WinnowParams, block_hashes, select
from fingerprint_indexer.text.clean import clean
from fingerprint_indexer.text.tokenize import Tokenizer

TOK = Tokenizer()


def reference_select(h: list[int], w: int) -> list[int]:
    """Robust winnowing as in the paper: per window the rightmost minimum, unless the one kept is still
    in the window and still minimal."""
    if not h:
        return []
    if len(h) <= w:
        m = min(h)
        return [max(i for i, x in enumerate(h) if x == m)]
    kept: list[int] = []
    cur = -1
    for s in range(len(h) - w + 1):
        win = h[s : s + w]
        m = min(win)
        if cur >= s and h[cur] == m:
            continue
        cur = s + max(i for i, x in enumerate(win) if x == m)
        kept.append(cur)
    return sorted(set(kept))


@given(st.lists(st.integers(0, 6), max_size=60), st.integers(1, 8))
def test_select_is_robust_winnowing(values: list[int], w: int) -> None:
    got = select(np.array(values, dtype=np.uint64), w).tolist()
    assert got == reference_select(values, w)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=0, max_size=80), st.lists(st.integers(0, 40), max_size=80),
       st.lists(st.integers(0, 40), min_size=10, max_size=40), st.integers(0, 80))
def test_any_shared_run_of_g_terms_shares_a_kept_hash(a: list[int], b: list[int], shared: list[int],
                                                       at: int) -> None:
    params = WinnowParams(k=3, g=10)
    ta = np.array(a[:at] + shared + a[at:], dtype=np.uint64)
    tb = np.array(b + shared, dtype=np.uint64)
    ha, hb = block_hashes(ta, params.k), block_hashes(tb, params.k)
    ka = set(ha[select(ha, params.w)].tolist())
    kb = set(hb[select(hb, params.w)].tolist())
    assert ka & kb


def test_spans_are_the_tokens_in_text_order_with_offsets() -> None:
    text = clean("苹果公司发布了iPhone 15和macOS系统，售价999美元。The market rose 3.5% at U.S. firms")
    spans = TOK.spans(text)
    assert Counter(t for t, _, _ in spans) == TOK.count(text)
    assert [s for _, s, _ in spans] == sorted(s for _, s, _ in spans)
    for term, s, e in spans:
        assert text[s:e] == term


@pytest.mark.corpus
def test_spans_match_tokens_on_real_articles() -> None:
    for rec in load_records(ZH_NEWS, limit=40, min_chars=200) + load_records(EN_BBC, limit=20):
        text = clean(rec["content"])
        spans = TOK.spans(text)
        assert Counter(t for t, _, _ in spans) == TOK.count(text)


def test_offsets_point_into_the_text_as_given() -> None:
    # full-width letters and digits, upper case: offsets still refer to the original characters
    src = "ＡＢＣ公司第三季度营收增长１２％，净利润达到创纪录的水平，董事会宣布派发特别股息并启动回购计划。"
    a = "今天的新闻。" + src + "其他内容。"
    b = "据报道，" + src
    ps = CopyFinder(params=WinnowParams(k=3, g=6)).passages(a, b)
    assert len(ps) == 1
    p = ps[0]
    assert a[p.a_start : p.a_end] == b[p.b_start : p.b_end]
    assert a[p.a_start : p.a_end].startswith("ＡＢＣ公司") and a[p.a_start : p.a_end].endswith("回购计划")
    assert p.length == p.a_end - p.a_start


def test_unrelated_texts_share_no_passage_and_thresholds_validate() -> None:
    cf = CopyFinder()
    assert cf.passages("the cat sat on the mat with a hat", "stocks fell sharply in early trading") == []
    assert cf.passages("", "") == []
    with pytest.raises(ValueError, match="guarantee threshold"):
        WinnowParams(k=5, g=4)
    with pytest.raises(ValueError, match="noise threshold"):
        WinnowParams(k=0)


@pytest.mark.corpus
@pytest.mark.parametrize("path", [EN_BBC, ZH_NEWS])
def test_planted_passage_is_found_where_it_was_planted(path: object) -> None:
    recs = load_records(path, limit=8, min_chars=1500)  # type: ignore[arg-type]
    cf = CopyFinder()
    for src, dst in zip(recs[::2], recs[1::2], strict=True):
        s, t = src["content"], dst["content"]
        planted = s[200:800]
        cut = t.find("\n", len(t) // 2)
        cut = cut if cut > 0 else len(t) // 2
        host = t[:cut] + planted + t[cut:]
        ps = cf.passages(host, s)
        assert ps, "no passage found"
        best = max(ps, key=lambda p: p.length)
        assert cut <= best.a_start < cut + 40 and cut + len(planted) - 40 < best.a_end <= cut + len(planted)
        assert host[best.a_start : best.a_end] == s[best.b_start : best.b_end]
        assert covered(ps) <= len(planted)
