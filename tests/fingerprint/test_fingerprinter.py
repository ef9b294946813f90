import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.documents import Document
from fingerprint_indexer.fingerprint.blocks import BlockLayout
from fingerprint_indexer.fingerprint.fingerprinter import (
    FingerprintConfig,
    Fingerprinter,
    FingerprintResult,
    fingerprint_many,
)
from fingerprint_indexer.fingerprint.hamming import hamming

TEXT = ("本报讯 市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，最低气温可能跌破零度。"
        "气象专家提醒市民注意防寒保暖，出行注意交通安全。")


_SHARED: list[Fingerprinter] = []


def _shared() -> Fingerprinter:
    """One fingerprinter for the module (hypothesis tests cannot take a fixture)."""
    if not _SHARED:
        _SHARED.append(Fingerprinter())
    return _SHARED[0]


@pytest.fixture(scope="module")
def fpr() -> Fingerprinter:
    return _shared()


def test_empty_and_whitespace_are_degenerate_not_errors(fpr: Fingerprinter) -> None:
    for text in ["", "   \n\t ", "\u3000"]:
        r = fpr.fingerprint(text)
        assert r.degenerate and r.n_tokens == 0


def test_reformatting_does_not_change_anything(fpr: Fingerprinter) -> None:
    a = fpr.fingerprint(TEXT)
    b = fpr.fingerprint("  " + TEXT.replace("，", "\uff0c ").replace("。", "。\n\n") + "  ")
    assert a.fingerprint == b.fingerprint
    assert a.content_digest == b.content_digest


def test_html_and_text_agree(fpr: Fingerprinter) -> None:
    html = f"<html><body><script>x()</script><p>{TEXT}</p></body></html>"
    assert fpr.fingerprint(html=html).fingerprint == fpr.fingerprint(TEXT).fingerprint


def test_title_used_only_when_body_empty(fpr: Fingerprinter) -> None:
    with_body = fpr.fingerprint_document(Document(id="1", title="完全不同的标题", content=TEXT))
    assert with_body.fingerprint == fpr.fingerprint(TEXT).fingerprint
    title_only = fpr.fingerprint_document(Document(id="2", title=TEXT, content=""))
    assert title_only.fingerprint == with_body.fingerprint


def test_blocks_follow_layout(fpr: Fingerprinter) -> None:
    r = Fingerprinter(FingerprintConfig(layout=BlockLayout.even(5))).fingerprint(TEXT)
    assert len(r.blocks) == 5
    assert r.fingerprint == fpr.fingerprint(TEXT).fingerprint  # layout does not change the fingerprint


def test_version_names_the_configuration(tmp_path: Path) -> None:
    syn = tmp_path / "s.txt"
    syn.write_text("气象台\t天文台\n", encoding="utf-8")
    v1 = Fingerprinter().version
    v2 = Fingerprinter(FingerprintConfig(top_k=10)).version
    v3 = Fingerprinter(FingerprintConfig(synonyms_path=str(syn))).version
    assert len({v1, v2, v3}) == 3


def test_top_k_limits_terms() -> None:
    r = Fingerprinter(FingerprintConfig(top_k=3)).fingerprint(TEXT)
    assert len(r.top_terms) == 3


def test_fingerprint_many_same_in_processes_as_inline() -> None:
    docs = [Document(id=str(i), content=TEXT[i:] + f" 第{i}条") for i in range(40)]
    inline = [r.fingerprint for r in fingerprint_many(docs)]
    pooled = list(fingerprint_many(docs, processes=2, chunksize=4))
    assert [r.fingerprint for r in pooled] == inline
    assert [r.id for r in pooled] == [d.id for d in docs]


def test_fingerprint_many_reads_a_bounded_window_ahead_of_a_slow_consumer() -> None:
    taken = 0

    def source() -> Iterator[Document]:
        nonlocal taken
        for i in range(3000):
            taken += 1
            yield Document(id=str(i), content=f"短文 {i}")

    results = fingerprint_many(source(), processes=2, chunksize=4, in_flight=16)
    assert next(results).id == "0"
    time.sleep(1.0)  # the workers would read the whole input meanwhile if nothing held them back
    assert taken <= 16 + 4
    assert [r.id for r in results] == [str(i) for i in range(1, 3000)]  # and nothing is lost
    assert taken == 3000


def test_fingerprint_many_inline_takes_a_chunk_per_call_and_reads_one_chunk_ahead(fpr: Fingerprinter) -> None:
    calls: list[int] = []
    taken = 0

    class Counted(Fingerprinter):
        def fingerprint_documents(self, docs: Sequence[Document]) -> list[FingerprintResult]:
            calls.append(len(docs))
            return super().fingerprint_documents(docs)

    def source() -> Iterator[Document]:
        nonlocal taken
        for i in range(10):
            taken += 1
            yield Document(id=str(i), content=TEXT[i:] + f" 第{i}条")

    results = fingerprint_many(source(), chunksize=4, fingerprinter=Counted())
    assert next(results).id == "0" and taken == 4  # one chunk read, not the input
    got = list(results)
    assert calls == [4, 4, 2]
    alone = [fpr.fingerprint_document(Document(id=str(i), content=TEXT[i:] + f" 第{i}条"))
             for i in range(1, 10)]
    assert [(r.id, r.fingerprint, r.sketch) for r in got] == [(r.id, r.fingerprint, r.sketch) for r in alone]


def test_fingerprint_many_stops_cleanly_when_the_consumer_leaves() -> None:
    docs = (Document(id=str(i), content=f"短文 {i}") for i in range(10_000))
    results = fingerprint_many(docs, processes=2, chunksize=4, in_flight=16)
    assert next(results).id == "0"
    results.close()  # would hang if the pool's task thread were left waiting for a slot


def test_deterministic_across_hash_seeds() -> None:
    code = (
        "from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter;"
        f"print(Fingerprinter().fingerprint({TEXT!r}).hex)"
    )
    outs = set()
    for seed in ["0", "1", "12345"]:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                check=True).stdout.strip())
    assert len(outs) == 1 and len(outs.pop()) == 16


@pytest.mark.slow  # a 20 MB document
def test_huge_document_bounded_memory() -> None:
    """A 20 MB document completes; peak memory stays a small multiple of the text size."""
    code = (
        "import resource;"
        "from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter;"
        "f = Fingerprinter(); f.fingerprint('预热');"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss;"
        "line = '受冷空气影响本周末全市将出现明显降温最低气温可能跌破零度 weather report 2024\\n';"
        "text = line * (20_000_000 // len(line.encode()));"
        "r = f.fingerprint(text);"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss;"
        "print(r.n_tokens, (peak - base) // 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=600)
    n_tokens, grew_mb = map(int, out.stdout.split())
    assert n_tokens > 1_000_000
    # the text itself is ~7M characters (UCS-4 ~28 MB per copy); a token list would need gigabytes
    assert grew_mb < 400, f"peak memory grew by {grew_mb} MB"


def test_light_edit_is_closer_than_unrelated(fpr: Fingerprinter) -> None:
    other = ("足球联赛今晚继续进行，主队在主场以二比一战胜客队，赛后主教练表示球队表现令人满意，"
             "下一轮比赛将于周六在客场进行。")
    a = fpr.fingerprint(TEXT).fingerprint
    b = fpr.fingerprint(TEXT.replace("本周末", "这个周末")).fingerprint
    c = fpr.fingerprint(other).fingerprint
    assert hamming(a, b) < hamming(a, c)


LEAD_TEXT = (
    "The city weather office issued a cold wave warning on Friday morning. "
    "Temperatures are expected to fall sharply over the weekend as cold air moves in from the north. "
    "Daytime highs on Saturday will reach only eight degrees, with lows of minus three at night. "
    "Light snow is possible in some districts. "
    "Forecasters advised residents to dress warmly and check on elderly neighbours. "
    "The transport department said gritting lorries would treat main roads overnight. "
    "Bus operators plan to add extra services during the morning and evening peaks. "
    "Schools were asked to check their heating systems before Monday. "
    "Farmers were told to secure greenhouses to protect vegetables from frost."
)


def test_lead_fingerprint_comes_first_and_is_shared_by_an_excerpt(fpr: Fingerprinter) -> None:
    full = fpr.fingerprint(LEAD_TEXT)
    excerpt = fpr.fingerprint(LEAD_TEXT[: LEAD_TEXT.index("The transport")])
    lead = fpr.fingerprint(LEAD_TEXT[: LEAD_TEXT.index("Light snow")]).fingerprint
    assert full.chunks[0] == lead
    assert lead in excerpt.fingerprints


def test_lead_sentences_zero_disables_the_lead() -> None:
    plain = Fingerprinter(FingerprintConfig(lead_sentences=0, chunk_every=0)).fingerprint(LEAD_TEXT)
    assert plain.chunks == ()
    with pytest.raises(ValueError, match="lead_sentences"):
        FingerprintConfig(lead_sentences=-1)


SLOGAN = "精度知天下，新闻更悦己"


def test_a_degenerate_body_is_told_apart_by_its_headline(fpr: Fingerprinter) -> None:
    def digest(title: str | None, content: str = SLOGAN) -> str:
        return fpr.fingerprint_document(Document(id="x", title=title, content=content)).content_digest

    plain = fpr.fingerprint(SLOGAN)
    assert plain.degenerate
    assert digest("童年经典再现") != digest("王凯随身带儿童水杯") != plain.content_digest
    assert digest("童年经典再现") == digest(" 童年经典再现\n")  # reformatted headline: the same
    assert digest(None) == digest("") == plain.content_digest  # no headline: the body's digest
    assert digest(SLOGAN) == plain.content_digest  # the headline is the text
    assert digest(SLOGAN, content="") == plain.content_digest  # the headline stands in for the text


@given(st.text(alphabet="天气新闻市民降温 ab,", max_size=12))
@settings(max_examples=40, deadline=None)
def test_the_headline_never_changes_the_digest_of_a_body_that_fingerprints(title: str) -> None:
    fpr = _shared()
    res = fpr.fingerprint_document(Document(id="x", title=title, content=TEXT))
    assert not res.degenerate
    assert res.content_digest == fpr.fingerprint(TEXT).content_digest


def test_a_wire_headline_in_capitals_names_what_its_body_names(fpr: Fingerprinter) -> None:
    """Two notices of one template, one state apart: the headlines name others (title_conflict)."""
    from fingerprint_indexer.verification import check

    body = (" Mthly div 6.5 cts vs 6.5 cts prior\n Pay April 30\n"
            " NOTE: Franklin {} Insured Tax-Free Income Fund.\n")
    a = fpr.fingerprint_document(Document(id="a", title="FRANKLIN OHIO SETS MONTHLY PAYOUT",
                                          content=body.format("Ohio")))
    b = fpr.fingerprint_document(Document(id="b", title="FRANKLIN MINNESOTA SETS MONTHLY PAYOUT",
                                          content=body.format("Minnesota")))
    assert "^@ohio" in a.facts and "^@minnesota" in b.facts
    assert check(a.evidence, b.evidence, 3).reason == "titles name others: ohio vs minnesota"
    again = fpr.fingerprint_document(Document(id="c", title="Franklin Ohio fund sets payout",
                                              content=body.format("Ohio")))
    assert check(a.evidence, again.evidence, 3).accepted  # the same notice, re-headlined
    plain = fpr.fingerprint_document(Document(id="d", title=None, content=body.format("Ohio")))
    assert plain.facts == tuple(f for f in a.facts if f != "^@ohio")


def test_a_batch_is_each_document_fingerprinted_alone(fpr: Fingerprinter) -> None:
    """`fingerprint_documents` (one compiled call for a batch, what threads use) gives each document's
    own result, in order, including those the compiled call leaves to the separate steps: an empty
    body with a title, HTML, a text with a character newer than the reference's Unicode tables."""
    docs = [
        Document(id="zh", title="国家统计局发布数据", content=TEXT, published_at="2024-03-05"),
        Document(id="en", title="BANK RAISES RATES", content="The Bank raised rates on Tuesday, it said."),
        Document(id="title-only", title=TEXT, content=""),
        Document(id="html", content="", html=f"<html><body><p>{TEXT}</p><p>扫码下载客户端</p></body></html>"),
        Document(id="newer", content=TEXT + " \U0001fae8"),  # U+1FAE8, assigned after Unicode 14
        Document(id="empty", content=""),
    ]
    assert fpr.fingerprint_documents(docs) == [fpr.fingerprint_document(d) for d in docs]
    assert fpr.fingerprint_documents([]) == []
