"""The fields an indexed document carries beside its text, as the codec writes them."""

from __future__ import annotations

from dataclasses import replace

from fingerprint_indexer.documents import Document
from fingerprint_indexer.es.codec import terms_text
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter

TEXT = ("本报讯 市气象台今天发布消息，受冷空气影响，本周末全市将出现明显降温，最低气温可能跌破零度。"
        "气象专家提醒市民注意防寒保暖，出行注意交通安全。"
        "The Met Office said on Friday that London may see snow.")


def test_terms_field_is_the_terms_joined_whatever_holds_them() -> None:
    """The compiled pass's terms (joined without a Python pair each) and a plain list of pairs give the same
    ``terms`` field, cut at the limit."""
    res = Fingerprinter().fingerprint_document(Document(id="1", title="降温", content=TEXT))
    plain = [(t, w) for t, w in res.top_terms]
    assert len(plain) > 5
    as_list = replace(res, top_terms=plain)
    for limit in (0, 1, 5, len(plain), len(plain) + 10):
        want = " ".join(t for t, _ in plain[:limit])
        assert terms_text(res, limit) == want and terms_text(as_list, limit) == want
