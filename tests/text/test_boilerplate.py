"""Boilerplate stripping: page furniture goes, article text stays, and nothing is ever emptied by mistake."""

from __future__ import annotations

from fingerprint_indexer.text.boilerplate import has_marker, is_code, strip_boilerplate
from fingerprint_indexer.text.clean import clean, normalize

ARTICLE = (
    "北京时间11月4日,休斯顿火箭在客场以96-88战胜芝加哥公牛,哈登第三节两分钟内连得11分,率队将分差拉开。"
    "因伤连休3场后,哈登本场复出,事实证明他的复出可谓及时雨。"
)


def test_header_footer_and_ad_sentence_are_removed() -> None:
    page = clean(
        "凤凰网 > 体育 > 正文\n2018-11-04 10:20 来源:新浪体育 作者:王强\n"
        + ARTICLE
        + "扫码关注凤凰网公众号,每天推送最新资讯。\n责任编辑:李明\n"
        "免责声明:本文仅代表作者个人观点,与本站无关。其原创性以及文中陈述文字和内容未经本站证实,请读者仅作参考。"
    )
    assert strip_boilerplate(page) == clean(ARTICLE)


def test_same_article_in_two_templates_strips_to_the_same_text() -> None:
    a = clean("当前位置:首页 > 体育频道\n" + ARTICLE + "\n(责任编辑:张伟 K1234)")
    b = clean("【搜狐讯】\n" + ARTICLE + "\n分享到:微信 微博 QQ空间\n版权所有 © 2019 搜狐 保留所有权利")
    assert strip_boilerplate(a) == strip_boilerplate(b)


def test_code_lines_are_removed_but_prose_quoting_a_url_is_kept() -> None:
    page = clean(ARTICLE + "\n(function(){ var adScript = document.createElement('script'); })();\n")
    assert strip_boilerplate(page) == clean(ARTICLE)
    prose = "据悉" * 120 + "详情见 http://example.com/a.html 。"
    assert not is_code(prose)


def test_english_furniture() -> None:
    body = (
        "Quarterly profits at US media giant TimeWarner jumped 76% to $1.13bn for the three months to "
        "December. The firm benefited from sales of high-speed internet connections."
    )
    page = clean(
        f"Home > Business > Profits\nBy Sarah Jones, City Gazette\n{body}\nAdvertisement\n"
        "Sign up for our daily newsletter to get the top stories delivered to your inbox.\n"
        "Copyright 2005 City Gazette. All rights reserved."
    )
    assert strip_boilerplate(page) == clean(body)


def test_never_empties_an_article() -> None:
    text = clean("原标题:某某\n来源:某网")
    assert strip_boilerplate(text) == text  # everything would go: keep the text instead
    assert strip_boilerplate("") == ""


def test_markers() -> None:
    assert has_marker("责任编辑:李明")
    assert has_marker("read more: something")
    assert not has_marker(clean(ARTICLE))


def test_menus_and_bylines_go_anywhere() -> None:
    body = "The Liberian economy started to grow in 2004, the International Monetary Fund has said."
    page = clean(f"MSN Headlines | News | Sport | Business | Tech | Entertainment | Weather\n{body}\n"
                 "By Laura Roberts, Business Insider Weekly")
    assert strip_boilerplate(page) == clean(body)
    by_2010 = clean(f"{body}\nBy 2010 the fund expects growth of five percent a year in the whole region.")
    assert strip_boilerplate(by_2010) == by_2010  # a sentence that opens with "by" is no byline


# Reuters-style items, hard-wrapped at about 65 characters as wires send them (written for these tests)
WRAPPED = ("TCF Banking and Savings FA said it\n"
           "is raising its prime rate to 7-3/4 pct from 7-1/2 pct effective\n"
           "today.\n")
TABLE = ("The Federal Home Loan Mortgage Corp adjusted\n"
         "the rates on its short-term discount notes as follows:\n"
         "   MATURITY   RATE       OLD RATE  MATURITY\n"
         "    33 days   6.00 pct   6.00 pct  33 days\n")


def test_the_first_line_of_a_hard_wrapped_item_is_its_text() -> None:
    assert strip_boilerplate(clean(WRAPPED)).startswith("tcf banking and savings fa said it\n")
    # a short unpunctuated first line that does not run on is still a title
    assert strip_boilerplate(clean("Prime rate news\n" + WRAPPED.replace("\n", " "))).startswith("tcf")


def test_a_first_line_the_next_line_continues_in_lower_case_is_text() -> None:
    """Hard-wrapped wire items often break before the verb: the subject and its figures are on the first
    line. With the text's case, a next line that goes on in lower case shows the sentence runs on."""
    item = ("Japanese crushers bought 2,000 tonnes\nof Canadian rapeseed in export business overnight "
            "for May\nshipment, trade sources said.\n Reuter\n")
    cased = normalize(item, lower=False)
    assert strip_boilerplate(cased.lower(), cased).startswith("japanese crushers bought 2,000 tonnes\n")
    assert strip_boilerplate(cased.lower()).startswith("of canadian")  # without the case: a title
    page = normalize("Acme wins the cup\nBy John Smith\nAcme beat the visitors on Sunday.", lower=False)
    assert strip_boilerplate(page.lower(), page) == "acme beat the visitors on sunday."
    assert strip_boilerplate("a\nb", "A\nB\nC") == strip_boilerplate("a\nb")  # not line for line: ignored


def test_a_table_the_text_announces_is_kept() -> None:
    kept = strip_boilerplate(clean(TABLE))
    assert "33 days 6.00 pct 6.00 pct 33 days" in kept
    # without the announcing colon, short trailing lines are page furniture as before
    footer = clean("The Federal Home Loan Mortgage Corp adjusted\nthe rates on its discount notes today.\n"
                   "Page 2 of 3\nNext page 3")
    assert strip_boilerplate(footer).endswith("discount notes today.")


def test_a_page_of_nothing_but_code_has_no_text() -> None:
    page = clean("var ua = navigator.userAgent.toLowerCase();\nif(isIOS){\n// go to the wap page\n"
                 "location.replace('http://slide.example.com/play.php?sid=84625');\n}\n"
                 "/* footer */\n.sw-audio .sw-audio-play, .sw-audio .sw-audio-pause{}\nsina_components: {}\n")
    assert strip_boilerplate(page) == ""  # two slideshow pages are not copies of each other's code
    assert strip_boilerplate(clean(ARTICLE + "\n/* footer */")) == clean(ARTICLE)


def test_a_table_that_opens_a_wire_item_is_kept() -> None:
    payout = clean("Qtly div 12 cts vs 11 cts prior\nPay June 1\nRecord May 15\n"
                   "NOTE: Example Holdings Corp raised its payout.\nReuter")
    assert strip_boilerplate(payout) == ("qtly div 12 cts vs 11 cts prior\npay june 1\nrecord may 15\n"
                                         "note: example holdings corp raised its payout.")
    # a headline and a dateline above the text stay page furniture, figures or not
    web = clean("Acme wins 3-1 at home\n2026-11-23 10:32\nAcme beat the visitors on Sunday.")
    assert strip_boilerplate(web) == "acme beat the visitors on sunday."
    zh = clean("拜仁主场1-1战平弗赖堡\n2018-11-05 09:03\n拜仁在主场与弗赖堡战平。")
    assert strip_boilerplate(zh) == "拜仁在主场与弗赖堡战平。"
