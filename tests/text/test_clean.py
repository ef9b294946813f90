from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.text.clean import clean, compact, html_to_text, looks_like_html, normalize


def test_fullwidth_folds_to_halfwidth_and_lowercase() -> None:
    assert normalize("ＡＢＣ１２３，Ｈｅｌｌｏ") == "abc123,hello"


def test_whitespace_folds_but_single_line_breaks_survive() -> None:
    assert normalize("  a \t b  \r\n\r\n\n  c\u3000d ") == "a b\nc d"


def test_html_drops_boilerplate_tags_and_decodes_entities() -> None:
    html = (
        "<html><head><title>T</title><style>p{color:red}</style></head><body>"
        "<nav>首页 | 新闻</nav><script>var a = '<p>x</p>';</script>"
        "<p>金庸&amp;古龙</p><div>第二段&nbsp;文字</div><footer>版权所有</footer></body></html>"
    )
    text = normalize(html_to_text(html))
    assert text == "金庸&古龙\n第二段 文字"


def test_clean_prefers_html_and_handles_none() -> None:
    assert clean(None, None) == ""
    assert clean("plain", "<p>from html</p>") == "from html"


def test_compact_removes_all_whitespace() -> None:
    assert compact("a b\nc\td") == "abcd"


def test_looks_like_html() -> None:
    assert looks_like_html("<p>hello</p>")
    assert not looks_like_html("3 < 4 and 5 > 2")


def test_unclosed_and_broken_html_does_not_crash() -> None:
    assert "text" in html_to_text("<div><p>text<script>never closed")
    assert html_to_text("<<<>>>&&&;") is not None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
       | st.text(alphabet="AbİẞΣσς Ｆｕｌｌ\u3000\r\n\t 中文ＡＢ", max_size=40))
def test_lower_casing_last_gives_the_normalised_text(text: str) -> None:
    """The fingerprinter normalises once and lower-cases that (it reads names off the cased form)."""
    assert normalize(text, lower=False).lower() == normalize(text)
