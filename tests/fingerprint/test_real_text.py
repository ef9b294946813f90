"""On real news from ../shared/data: light edits stay close, unrelated articles stay far."""

from __future__ import annotations

import statistics

import pytest

from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.fingerprint.hamming import hamming

pytestmark = pytest.mark.corpus

FOOTER_ZH = "\n(责任编辑:王小明)\n本文来源于网络,转载请注明出处。"
FOOTER_EN = "\nShare this article on social media. Follow us for more updates."


def change_one_sentence(text: str, sep: str) -> str:
    """Drop the middle sentence of the article."""
    parts = [p for p in text.split(sep) if p.strip()]
    del parts[len(parts) // 2]
    return sep.join(parts)


@pytest.fixture(scope="module")
def fpr() -> Fingerprinter:
    return Fingerprinter()


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_light_edits_close_unrelated_far(
    lang: str, fpr: Fingerprinter, request: pytest.FixtureRequest
) -> None:
    arts = request.getfixturevalue("zh_articles" if lang == "zh" else "en_articles")[:150]
    sep, footer = ("。", FOOTER_ZH) if lang == "zh" else (". ", FOOTER_EN)
    base = [fpr.fingerprint(a["content"]).fingerprint for a in arts]
    footer_d = [hamming(b, fpr.fingerprint(a["content"] + footer).fingerprint)
                for a, b in zip(arts, base, strict=True)]
    edit_d = [hamming(b, fpr.fingerprint(change_one_sentence(a["content"], sep)).fingerprint)
              for a, b in zip(arts, base, strict=True)]
    unrelated_d = [hamming(base[i], base[(i + 37) % len(base)]) for i in range(len(base))
                   if arts[i]["content"][:200] != arts[(i + 37) % len(base)]["content"][:200]]
    # an added footer barely moves a real article; a dropped sentence moves it a little
    assert statistics.median(footer_d) <= 3
    assert statistics.median(edit_d) <= 6
    # different articles sit near the 32 bits of independent fingerprints
    assert statistics.median(unrelated_d) >= 24
    # and the two populations separate: 90% of edits are closer than 95% of unrelated pairs
    q = statistics.quantiles
    assert q(edit_d, n=10)[-1] < q(unrelated_d, n=20)[0]
    assert q(footer_d, n=10)[-1] < q(unrelated_d, n=20)[0]
