#!/usr/bin/env python3
"""Build the labelled near-duplicate sets used by ``scripts/eval_quality.py`` from the real corpora.

Nothing here is invented to pass: every document is a real article from ``../shared/data`` or a repost
variant derived from one by the rules below. The output is not committed (it goes to ``out/labelled`` by
default); the script and its seed are, so every run produces byte-identical files.

Sets (each a ``<name>.docs.jsonl`` with ``id``, ``title``, ``content`` and a ``<name>.pairs.jsonl`` with
``a``, ``b``, ``label`` 1/0, ``level``):

``zh_natural`` / ``en_natural``
    Natural duplicates already in the corpus. Candidate pairs are documents with identical content or the
    same title (``zh_news``: the same story scraped into two folders with different page boilerplate).
    Labelling rule (:func:`natural_label`): identical non-trivial content -> 1 (level ``exact``); otherwise
    the containment of the shorter text's character 8-gram set in the longer one's (whitespace removed):
    >= 0.5 -> 1 (level ``same_title``), < 0.15 -> 0 (level ``same_title_different``: same headline, other
    story), in between -> left out as ambiguous (counted in the manifest). Placeholder texts shorter than
    ``MIN_EXACT_CHARS`` (e.g. a 12-character slogan 580 Sina pages carry instead of a body) are left out:
    they are exact duplicates of nothing article-like. Negatives: each positive document is paired with the
    topically nearest article of its category (most shared character bigrams / words in the opening) whose
    8-gram containment is below 0.15 (level ``topical``), and, for Sina page scrapes, with another page
    of the same folder carrying the same page template (level ``same_template``).

``zh_reposts`` / ``en_reposts``
    Repost variants of real articles at graded edit levels, each positive pair is (original, variant):
    ``boilerplate`` (site header, source/editor lines, footer, disclaimer, re-paragraphed, punctuation width
    changed), ``light_edit`` (boilerplate plus one inserted ad line and one or two sentence edits or a
    deletion), ``medium_edit`` (boilerplate, two ad lines, ~20 % of sentences edited or deleted),
    ``excerpt`` (the first ~60 % of the sentences plus boilerplate). Negatives: a different article of the
    same category, the topically nearest one (``same_category``), and two different articles wrapped in
    the very same site template (``same_template``). Each document of these sets also carries ``story``,
    the id of the real article it was made from, so cluster evaluation knows that a template-wrapped
    article belongs with its original even though no labelled pair joins them.

``zh_reposts_dated`` / ``en_reposts_dated``
    The repost sets with publication days (``published_at``), for what time does to a decision: each
    original is published on a day of 2024 drawn at random, each of its variants :data:`DELAYS` days
    later (one delay drawn per variant, spread evenly over the buckets), and the two documents of a
    negative pair lie a delay drawn the same way apart. Each pair records its ``delay`` in days. The
    texts are those of the undated sets: only the days differ, so recall by delay measures the rule, not
    the generator.

Run: ``python scripts/build_labelled_sets.py [--data ../shared/data] [--out out/labelled] [--limit N]``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import itertools
import json
import random
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SEED = 20240606
MIN_EXACT_CHARS = 50
SHINGLE = 8
POSITIVE_CONTAINMENT = 0.5
NEGATIVE_CONTAINMENT = 0.15
#: Days between an original and its repost in the dated sets: same day to two months.
DELAYS = (0, 1, 2, 3, 5, 9, 14, 20, 30, 45, 60)

# --------------------------------------------------------------------------------------------------------
# Corpus access and text measures
# --------------------------------------------------------------------------------------------------------

_WS = re.compile(r"\s+")
_ZH_SENT = re.compile(r"[^。！？!?…]*[。！？!?…]+[”’」』）)]*|[^。！？!?…]+$")
_EN_SENT = re.compile(r"[^.!?]+(?:[.!?]+[\"')\]]*|$)")
_CJK = re.compile(r"[\u4e00-\u9fff]")


def read_corpus(path: Path) -> list[dict[str, Any]]:
    """All records of a gzip JSONL corpus, in file order."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def compact(text: str) -> str:
    return _WS.sub("", text)


def shingles(text: str, n: int = SHINGLE) -> set[str]:
    t = compact(text)
    return {t[i : i + n] for i in range(max(1, len(t) - n + 1))} if t else set()


def containment(a: set[str], b: set[str]) -> float:
    """Share of the smaller shingle set found in the larger one."""
    if not a or not b:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return len(small & large) / len(small)


def natural_label(text_a: str, text_b: str) -> tuple[int | None, str, float]:
    """The documented labelling rule for natural pairs: (label or None if ambiguous, level, containment)."""
    if compact(text_a) == compact(text_b):
        return 1, "exact", 1.0
    c = containment(shingles(text_a), shingles(text_b))
    if c >= POSITIVE_CONTAINMENT:
        return 1, "same_title", c
    if c < NEGATIVE_CONTAINMENT:
        return 0, "same_title_different", c
    return None, "ambiguous", c


def topic_features(text: str, zh: bool) -> frozenset[str]:
    """Cheap topical signature of an article's opening: character bigrams (zh) or lower-case words (en)."""
    head = compact(text)[:600] if zh else text[:1200]
    if zh:
        return frozenset(head[i : i + 2] for i in range(len(head) - 1) if _CJK.match(head[i]))
    return frozenset(w for w in re.findall(r"[a-z]{4,}", head.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def sentences(text: str, zh: bool) -> list[str]:
    """Sentences of an article (line breaks are paragraph ends and also end sentences)."""
    out: list[str] = []
    pattern = _ZH_SENT if zh else _EN_SENT
    for para in text.split("\n"):
        para = para.strip().strip("\u3000").strip()
        if not para:
            continue
        out.extend(s.strip() for s in pattern.findall(para) if s.strip())
    return out


# --------------------------------------------------------------------------------------------------------
# Realistic repost boilerplate (templates only; no corpus text)
# --------------------------------------------------------------------------------------------------------

ZH_SITES = [
    ("凤凰网", "ifeng"), ("搜狐", "sohu"), ("网易新闻", "163"), ("腾讯新闻", "qq"), ("中华网", "china"),
    ("东方财富网", "eastmoney"), ("环球网", "huanqiu"), ("光明网", "gmw"), ("中国新闻网", "chinanews"),
    ("央广网", "cnr"), ("澎湃新闻", "thepaper"), ("北青网", "ynet"), ("千龙网", "qianlong"),
    ("大众网", "dzwww"), ("红网", "rednet"), ("金融界", "jrj"), ("和讯网", "hexun"), ("中国经济网", "ce"),
    ("东方网", "eastday"), ("齐鲁网", "iqilu"), ("南方网", "southcn"), ("华商网", "hsw"),
    ("新民网", "xinmin"), ("荆楚网", "cnhubei"), ("四川在线", "scol"), ("扬子晚报网", "yangtse"),
]
ZH_CHANNELS = ["新闻", "国内", "财经", "科技", "体育", "娱乐", "教育", "健康", "时尚", "社会", "综合", "资讯"]
ZH_SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶"
ZH_GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华玉兰萍红鹏飞宇浩然晨晓雪琳瑶婷欣怡佳悦"
ZH_PRODUCTS = ["理财课", "会员年卡", "流量套餐", "家电", "新款手机", "在线课程", "旅游线路", "保险产品",
               "体检套餐", "英语课程", "信用卡", "母婴用品", "智能手表", "净水器"]

ZH_HEADERS: list[str] = [
    "{site} > {channel} > 正文",
    "{site}首页 | 新闻 | 财经 | 体育 | 娱乐 | 科技 | 时尚 | 教育 | 健康 | 视频",
    "当前位置：首页 > {channel}频道 > {channel}要闻",
    "{date} {time}  来源：{source}  作者：{author}",
    "{date} {time} 来源：{site}",
    "发布时间：{date} {time} 信息来源：{source} 浏览次数：{n}",
    "原标题：{title}",
    "{title}",
    "字号：大 中 小  打印本页  关闭窗口",
    "分享到：微信 微博 QQ空间 复制链接",
    "{site}{channel}频道 {date}",
    "【{site}讯】",
    "（原标题：{title}）",
    "{date} 第{page}版 {channel}",
    "手机看新闻 扫码下载{site}客户端",
    "A- A+  评论（{n}）  收藏",
]
ZH_FOOTERS: list[str] = [
    "责任编辑：{editor}",
    "（责任编辑：{editor} {code}）",
    "编辑：{editor}  审核：{editor2}",
    "[责任编辑：{editor}]",
    "来源：{source}  编辑：{editor}",
    "免责声明：本文仅代表作者个人观点，与{site}无关。其原创性以及文中陈述文字和内容未经本站证实，对本文以及其中全部"
    "或者部分内容、文字的真实性、完整性、及时性本站不作任何保证或承诺，请读者仅作参考，并请自行核实相关内容。",
    "声明：本文转载自{source}，版权归原作者所有，如有侵权请联系本站删除。",
    "凡本网注明“来源：{site}”的所有作品，版权均属于{site}，未经授权不得转载、摘编或利用其它方式使用上述作品。",
    "版权所有 © {year} {site} 保留所有权利  京ICP证{icp}号",
    "关注{site}微信公众号（{wx}），获取更多精彩资讯。",
    "扫描二维码，下载{site}客户端，随时随地看新闻",
    "本文系{site}原创稿件，转载请注明出处。",
    "违法和不良信息举报电话：{phone}  举报邮箱：jubao@{domain}.com",
    "分享到：微信朋友圈 新浪微博 QQ空间 豆瓣",
    "打开APP阅读全文",
    "点击查看更多{channel}新闻",
    "相关阅读：{related}",
    "推荐阅读：{related}",
    "延伸阅读：{related}",
    "网友评论  已有{n}人参与  查看全部评论",
    "文章关键词：{channel} 新闻 {site}",
]
ZH_ADS: list[str] = [
    "【广告】{product}限时特惠，点击领取{n}元优惠券",
    "扫码关注{site}公众号，每天推送最新资讯",
    "（本文来源：{source}，转载请注明出处）",
    "↓↓↓ 点击下方“阅读原文”了解更多 ↓↓↓",
    "下载{site}APP，看更多独家新闻",
    "推荐阅读：{related}",
    "海量资讯、精准解读，尽在{site}APP",
    "【{site}{channel}】{product}新用户专享，首月仅需{n2}元！",
    "广告 {product}火热招商中，咨询热线{phone}",
    "点击进入专题：{related}",
    "（图片来源于网络，如有侵权请联系删除）",
    "{site}独家稿件，未经授权禁止转载",
    "更多精彩内容，请关注{site}{channel}频道",
    "【{site}】{product}年终大促，满{n}减{n2}",
]

EN_SITES = [
    ("The Daily Courier", "dailycourier"), ("Metro Herald", "metroherald"), ("NewsNow Wire", "newsnowwire"),
    ("Global Post Today", "globalposttoday"), ("The Morning Ledger", "morningledger"),
    ("City Gazette", "citygazette"), ("World Report Online", "worldreport"), ("The Evening Standard Post",
    "eveningpost"), ("Business Insider Weekly", "biweekly"), ("Sky Digest", "skydigest"),
    ("The National Chronicle", "natchronicle"), ("Pulse News", "pulsenews"), ("Yahoo News Feed", "ynfeed"),
    ("MSN Headlines", "msnhead"), ("The Independent Review", "indreview"), ("Capital Times", "captimes"),
]
EN_SECTIONS = ["News", "World", "UK", "Business", "Technology", "Sport", "Entertainment", "Politics", "Money"]
EN_FIRST = ["James", "Sarah", "David", "Emma", "Michael", "Laura", "Daniel", "Sophie", "Tom", "Rachel",
            "Chris", "Hannah", "Peter", "Alice", "Mark", "Olivia", "Ben", "Kate"]
EN_LAST = ["Smith", "Jones", "Taylor", "Brown", "Williams", "Wilson", "Evans", "Thomas", "Roberts", "Walker",
           "Wright", "Hughes", "Green", "Hall", "Clarke", "Jackson", "Wood", "Harris"]
EN_PRODUCTS = ["broadband deal", "travel insurance", "credit card", "mortgage rate", "energy tariff",
               "phone contract", "savings account", "car lease", "online course", "meal kit"]

EN_HEADERS: list[str] = [
    "Home > {section} > {title}",
    "{site} | News | Sport | Business | Tech | Entertainment | Weather",
    "By {author}, {site}",
    "Published: {time}, {date_en} | Updated: {time2}, {date_en}",
    "{date_en} - {site} staff",
    "{title}",
    "Share this article: Facebook Twitter Email",
    "Originally published by {source}",
    "Listen to this article ({n} min)",
    "Breaking: {title}",
    "{section} | {date_en}",
    "Advertisement",
    "Text size: A A A   Print   Comments ({n})",
]
EN_FOOTERS: list[str] = [
    "Reporting by {author}; Editing by {author2}",
    "Copyright {year} {site}. All rights reserved. This material may not be published, broadcast, rewritten"
    " or redistributed.",
    "This article originally appeared on {source}.",
    "The views expressed in this article are those of the author and do not necessarily reflect the views"
    " of {site}.",
    "Sign up for our daily newsletter to get the top stories delivered to your inbox.",
    "Follow {site} on Twitter @{handle} and on Facebook.",
    "Related: {related}",
    "Read more: {related}",
    "More from {section}: {related}",
    "Comments ({n}) | Report an error | Print this page",
    "Have a story? Email us at tips@{domain}.com",
    "Terms of use | Privacy policy | Cookie settings | Contact us",
    "Share this story: Facebook Twitter WhatsApp LinkedIn Email",
    "(c) {site} {year}",
]
EN_ADS: list[str] = [
    "Advertisement",
    "ADVERTISEMENT - CONTINUE READING BELOW",
    "Sponsored: compare the best {product} offers - save up to {n} pounds today",
    "Subscribe to {site} for just {n2} pounds a month. Cancel anytime.",
    "Read more: {related}",
    "Don't miss: {related}",
    "Download the {site} app for breaking news alerts",
    "Story continues below advertisement",
    "Want more {section} news? Click here to sign up to our newsletter",
    "Click here to get the latest {product} deals",
    "RELATED: {related}",
    "Follow @{handle} for live updates",
]

ZH_SYNONYMS = [
    ("表示", "称"), ("记者", "笔者"), ("目前", "当前"), ("近日", "日前"), ("已经", "已"), ("进行", "开展"),
    ("但是", "不过"), ("因此", "所以"), ("非常", "十分"), ("认为", "指出"), ("同时", "与此同时"),
    ("今年", "本年度"), ("透露", "介绍"), ("发现", "注意到"), ("希望", "期望"), ("主要", "重要"),
    ("通过", "经由"), ("可以", "能够"), ("如果", "假如"), ("这个", "此"), ("他们", "其"), ("我们", "咱们"),
]
EN_SYNONYMS = [
    (" said", " stated"), (" says", " claims"), (" told", " informed"), (" but ", " however "),
    (" also ", " additionally "), (" big ", " large "), (" people", " individuals"), (" about ", " around "),
    (" because ", " as "), (" expected ", " anticipated "), (" show ", " reveal "), (" start", " begin"),
    (" help ", " assist "), (" buy ", " purchase "), (" get ", " obtain "), (" many ", " numerous "),
]


def _zh_name(rng: random.Random) -> str:
    return rng.choice(ZH_SURNAMES) + "".join(rng.choice(ZH_GIVEN) for _ in range(rng.choice((1, 2))))


def _en_name(rng: random.Random) -> str:
    return f"{rng.choice(EN_FIRST)} {rng.choice(EN_LAST)}"


@dataclass
class Template:
    """One concrete site template: filled header lines, footer lines and ad lines of a repost site."""

    header: list[str]
    footer: list[str]
    ads: list[str]
    indent: str = ""
    sentences_per_para: tuple[int, int] = (2, 4)
    fullwidth_punct: bool = False
    extra: dict[str, str] = field(default_factory=dict)


def make_template(rng: random.Random, zh: bool, title: str, related_titles: Sequence[str]) -> Template:
    """Draw a site and fill 1-4 header lines, 1-4 footer lines and a pool of ad lines for it."""
    if zh:
        site, domain = rng.choice(ZH_SITES)
        source_site, _ = rng.choice(ZH_SITES)
        values = {
            "site": site, "domain": domain, "channel": rng.choice(ZH_CHANNELS), "title": title,
            "date": f"{rng.randint(2015, 2019)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "time": f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}", "source": source_site,
            "author": _zh_name(rng), "editor": _zh_name(rng), "editor2": _zh_name(rng),
            "code": f"{rng.choice('ABCDEFGHJKLMNPQRSTWXYZ')}{rng.randint(1000, 9999)}",
            "n": str(rng.randint(2, 9999)), "n2": str(rng.randint(1, 99)),
            "page": f"{rng.randint(1, 24):02d}",
            "year": str(rng.randint(2015, 2019)), "icp": f"{rng.randint(10000, 99999)}",
            "wx": f"{domain}news", "phone": f"010-{rng.randint(60000000, 89999999)}",
            "product": rng.choice(ZH_PRODUCTS),
        }
        headers, footers, ads = ZH_HEADERS, ZH_FOOTERS, ZH_ADS
    else:
        site, domain = rng.choice(EN_SITES)
        source_site, _ = rng.choice(EN_SITES)
        months = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                  "October", "November", "December"]
        values = {
            "site": site, "domain": domain, "section": rng.choice(EN_SECTIONS), "title": title,
            "date_en": f"{rng.randint(1, 28)} {rng.choice(months)} {rng.randint(2004, 2006)}",
            "time": f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
            "time2": f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}", "source": source_site,
            "author": _en_name(rng), "author2": _en_name(rng), "n": str(rng.randint(2, 999)),
            "n2": str(rng.randint(1, 20)), "year": str(rng.randint(2004, 2006)), "handle": domain,
            "product": rng.choice(EN_PRODUCTS),
        }
        headers, footers, ads = EN_HEADERS, EN_FOOTERS, EN_ADS

    def fill(pattern: str) -> str:
        related = rng.choice(related_titles) if related_titles else title
        return pattern.format(related=related, **values)

    header = [fill(p) for p in rng.sample(headers, rng.randint(1, 4))]
    footer = [fill(p) for p in rng.sample(footers, rng.randint(1, 4))]
    ad_lines = [fill(p) for p in rng.sample(ads, 4)]
    return Template(
        header=header,
        footer=footer,
        ads=ad_lines,
        indent=rng.choice(["", "\u3000\u3000", "  "]) if zh else "",
        sentences_per_para=rng.choice([(1, 3), (2, 4), (3, 6)]),
        fullwidth_punct=zh and rng.random() < 0.5,
    )


_HALF_TO_FULL = str.maketrans({",": "，", ":": "：", "(": "（", ")": "）", ";": "；", "?": "？", "!": "！"})
_FULL_TO_HALF = str.maketrans({"，": ",", "：": ":", "（": "(", "）": ")", "；": ";", "？": "?", "！": "!"})


def render(sents: Sequence[str], tpl: Template, rng: random.Random, zh: bool) -> str:
    """Lay sentences out in paragraphs under the template's header and above its footer."""
    paras: list[str] = []
    i = 0
    lo, hi = tpl.sentences_per_para
    while i < len(sents):
        n = rng.randint(lo, hi)
        joiner = "" if zh else " "
        paras.append(tpl.indent + joiner.join(sents[i : i + n]))
        i += n
    body = "\n".join(paras)
    if zh:
        body = body.translate(_HALF_TO_FULL if tpl.fullwidth_punct else _FULL_TO_HALF)
    return "\n".join([*tpl.header, body, *tpl.footer])


def edit_sentence(sent: str, rng: random.Random, zh: bool) -> str:
    """One realistic copy-editor change: a synonym swap, a changed number, or a dropped clause."""
    subs = ZH_SYNONYMS if zh else EN_SYNONYMS
    present = [(a, b) for a, b in subs if a in sent]
    choice = rng.random()
    if present and choice < 0.5:
        a, b = rng.choice(present)
        return sent.replace(a, b, 1)
    digits = [m.start() for m in re.finditer(r"\d", sent)]
    if digits and choice < 0.75:
        pos = rng.choice(digits)
        return sent[:pos] + str((int(sent[pos]) + rng.randint(1, 8)) % 10) + sent[pos + 1 :]
    parts = re.split(r"(，|,)", sent)
    if len(parts) >= 5:  # drop one inner clause with its comma
        k = rng.randrange(1, len(parts) // 2) * 2
        return "".join(parts[: k - 1] + parts[k + 1 :])
    if present:
        a, b = rng.choice(present)
        return sent.replace(a, b, 1)
    return ("据悉，" + sent) if zh else ("Reportedly, " + sent[:1].lower() + sent[1:])


def make_variant(
    sents: list[str], level: str, tpl: Template, rng: random.Random, zh: bool
) -> str:
    """A repost of an article (given as sentences) at one edit level, in the given site template."""
    out = list(sents)
    if level in ("light_edit", "medium_edit"):
        n_ops = rng.randint(1, 2) if level == "light_edit" else max(2, round(0.2 * len(out)))
        for _ in range(n_ops):
            if len(out) < 3:
                break
            idx = rng.randrange(1, len(out))
            if rng.random() < 0.35:
                del out[idx]
            else:
                out[idx] = edit_sentence(out[idx], rng, zh)
        for ad in rng.sample(tpl.ads, 1 if level == "light_edit" else 2):
            out.insert(rng.randrange(1, len(out) + 1), ad + ("" if zh else "."))
    elif level == "excerpt":
        keep = max(1, round(0.6 * len(out)))
        tail = ["（未完）" if zh else "(Continued...)"] if rng.random() < 0.5 else []
        out = out[:keep] + tail
    return render(out, tpl, rng, zh)


# --------------------------------------------------------------------------------------------------------
# Set builders
# --------------------------------------------------------------------------------------------------------


@dataclass
class LabelledSet:
    name: str
    docs: dict[str, dict[str, str]] = field(default_factory=dict)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def add_doc(self, doc_id: str, title: str, content: str, story: str | None = None) -> None:
        """``story``: the id of the real article a generated document was made from (cluster truth)."""
        doc = {"id": doc_id, "title": title, "content": content}
        if story is not None:
            doc["story"] = story
        self.docs.setdefault(doc_id, doc)

    def add_pair(self, a: str, b: str, label: int, level: str, **extra: Any) -> None:
        self.pairs.append({"a": a, "b": b, "label": label, "level": level, **extra})

    def write(self, out: Path) -> dict[str, Any]:
        out.mkdir(parents=True, exist_ok=True)
        with (out / f"{self.name}.docs.jsonl").open("w", encoding="utf-8") as fh:
            for doc in self.docs.values():
                fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
        with (out / f"{self.name}.pairs.jsonl").open("w", encoding="utf-8") as fh:
            for pair in self.pairs:
                fh.write(json.dumps(pair, ensure_ascii=False) + "\n")
        levels: dict[str, dict[str, int]] = defaultdict(lambda: {"pos": 0, "neg": 0})
        for p in self.pairs:
            levels[p["level"]]["pos" if p["label"] else "neg"] += 1
        return {"docs": len(self.docs), "pairs": len(self.pairs), "levels": dict(levels), **self.notes}


def nearest_topical(
    anchor: dict[str, Any],
    pool: Sequence[dict[str, Any]],
    feats: dict[str, frozenset[str]],
    shing: Callable[[dict[str, Any]], set[str]],
    exclude: set[str],
) -> dict[str, Any] | None:
    """The pool article most similar in topic to ``anchor`` that is clearly a different text."""
    fa = feats[anchor["id"]]
    ranked = sorted(
        (d for d in pool
         if d["id"] != anchor["id"] and d["id"] not in exclude and d["title"] != anchor["title"]),
        key=lambda d: (-jaccard(fa, feats[d["id"]]), d["id"]),
    )
    sa = shing(anchor)
    for cand in ranked[:10]:
        if containment(sa, shing(cand)) < NEGATIVE_CONTAINMENT:
            return cand
    return None


def build_natural(
    name: str, records: list[dict[str, Any]], zh: bool, rng: random.Random, limit: int | None
) -> LabelledSet:
    """Natural duplicates (identical content, same title) labelled by the containment rule."""
    ls = LabelledSet(name)
    by_content: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_title: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_content[compact(r["content"])].append(r)
        by_title[r["title"]].append(r)
    candidates: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    skipped_short = 0
    for key, group in by_content.items():
        if len(group) < 2:
            continue
        if len(key) < MIN_EXACT_CHARS:
            skipped_short += len(group)
            continue
        for x, y in itertools.pairwise(group):  # a chain links the whole group
            candidates[(x["id"], y["id"])] = (x, y)
    for group in by_title.values():
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                x, y = group[i], group[j]
                if min(len(compact(x["content"])), len(compact(y["content"]))) >= MIN_EXACT_CHARS:
                    candidates.setdefault((x["id"], y["id"]), (x, y))
    keys = sorted(candidates)
    rng.shuffle(keys)
    if limit is not None:
        keys = keys[:limit]
    ambiguous = 0
    cont_cache: dict[str, set[str]] = {}

    def shing(d: dict[str, Any]) -> set[str]:
        if d["id"] not in cont_cache:
            cont_cache[d["id"]] = shingles(d["content"])
        return cont_cache[d["id"]]

    positives: list[dict[str, Any]] = []
    for key in sorted(keys):
        x, y = candidates[key]
        label, level, c = natural_label(x["content"], y["content"])
        if label is None:
            ambiguous += 1
            continue
        for d in (x, y):
            ls.add_doc(d["id"], d["title"], d["content"])
        ls.add_pair(x["id"], y["id"], label, level, containment=round(c, 3))
        if label:
            positives.append(x)
    # Negatives: topically nearest different article of the same category, and same-template page pairs.
    by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if len(compact(r["content"])) >= 200:
            by_cat[r["category"]].append(r)
    feats: dict[str, frozenset[str]] = {}
    dup_ids = {d for k in keys for d in k}
    for anchor in positives:
        pool = by_cat[anchor["category"]]
        sample = rng.sample(pool, min(400, len(pool)))
        for d in [anchor, *sample]:
            if d["id"] not in feats:
                feats[d["id"]] = topic_features(d["content"], zh)
        neg = nearest_topical(anchor, sample, feats, shing, dup_ids)
        if neg is not None:
            ls.add_doc(neg["id"], neg["title"], neg["content"])
            ls.add_pair(anchor["id"], neg["id"], 0, "topical")
        if anchor.get("source") == "sina-scrape":
            other = rng.choice(pool)
            fit = other["id"] != anchor["id"] and other["title"] != anchor["title"]
            if fit and other.get("source") == "sina-scrape" and (
                containment(shing(anchor), shing(other)) < NEGATIVE_CONTAINMENT
            ):
                ls.add_doc(other["id"], other["title"], other["content"])
                ls.add_pair(anchor["id"], other["id"], 0, "same_template")
    ls.notes = {"ambiguous_left_out": ambiguous, "short_exact_left_out_docs": skipped_short,
                "candidate_pairs": len(candidates)}
    return ls


def repost_sources(records: list[dict[str, Any]], zh: bool) -> list[dict[str, Any]]:
    """Articles fit to be reposted: clean source text, 300-6000 characters, no duplicate in the corpus."""
    seen_content: dict[str, int] = defaultdict(int)
    seen_title: dict[str, int] = defaultdict(int)
    for r in records:
        seen_content[compact(r["content"])] += 1
        seen_title[r["title"]] += 1
    out = []
    for r in records:
        body = compact(r["content"])
        if zh and r.get("source") != "clean":
            continue
        n = len(body) if zh else len(r["content"])
        if not 300 <= n <= 6000 or seen_content[body] > 1 or seen_title[r["title"]] > 1:
            continue
        if len(sentences(r["content"], zh)) < 4:
            continue
        out.append(r)
    return out


LEVELS = ("boilerplate", "light_edit", "medium_edit", "excerpt")


def build_reposts(
    name: str, records: list[dict[str, Any]], zh: bool, rng: random.Random, n_originals: int
) -> LabelledSet:
    """Graded repost variants of real articles plus same-category and same-template negatives."""
    ls = LabelledSet(name)
    pool = repost_sources(records, zh)
    by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in pool:
        by_cat[r["category"]].append(r)
    cats = sorted(by_cat)
    per_cat = max(1, n_originals // len(cats))
    originals: list[dict[str, Any]] = []
    for c in cats:
        originals.extend(rng.sample(by_cat[c], min(per_cat, len(by_cat[c]))))
    chosen = {o["id"] for o in originals}
    feats: dict[str, frozenset[str]] = {}
    cache: dict[str, set[str]] = {}

    def shing(d: dict[str, Any]) -> set[str]:
        if d["id"] not in cache:
            cache[d["id"]] = shingles(d["content"])
        return cache[d["id"]]

    def oid(r: dict[str, Any]) -> str:
        return "o-" + hashlib.blake2b(r["id"].encode("utf-8"), digest_size=6).hexdigest()

    for orig in originals:
        sents = sentences(orig["content"], zh)
        ls.add_doc(oid(orig), orig["title"], orig["content"], story=oid(orig))
        related = [d["title"] for d in rng.sample(by_cat[orig["category"]], 3)]
        for level in LEVELS:
            tpl = make_template(rng, zh, orig["title"], related)
            vid = f"{oid(orig)}-{level}"
            ls.add_doc(vid, orig["title"], make_variant(sents, level, tpl, rng, zh), story=oid(orig))
            ls.add_pair(oid(orig), vid, 1, level)
        # Hard negatives: the topically nearest other article of the category (not among the chosen originals
        # so that every negative is a distinct article pair) ...
        sample = rng.sample(by_cat[orig["category"]], min(300, len(by_cat[orig["category"]])))
        for d in [orig, *sample]:
            if d["id"] not in feats:
                feats[d["id"]] = topic_features(d["content"], zh)
        neg = nearest_topical(orig, sample, feats, shing, chosen)
        if neg is None:
            continue
        ls.add_doc(oid(neg), neg["title"], neg["content"], story=oid(neg))
        ls.add_pair(oid(orig), oid(neg), 0, "same_category")
        # ... and the two different articles wrapped in one identical site template (boilerplate level).
        tpl = make_template(rng, zh, orig["title"], [neg["title"]])
        a_id, b_id = f"{oid(orig)}-tplA", f"{oid(neg)}-tplB"
        ls.add_doc(a_id, orig["title"], render(sents, tpl, random.Random(rng.random()), zh), story=oid(orig))
        tpl_b = Template(
            header=[h.replace(orig["title"], neg["title"]) for h in tpl.header], footer=tpl.footer,
            ads=tpl.ads, indent=tpl.indent, sentences_per_para=tpl.sentences_per_para,
            fullwidth_punct=tpl.fullwidth_punct,
        )
        body_b = render(sentences(neg["content"], zh), tpl_b, random.Random(rng.random()), zh)
        ls.add_doc(b_id, neg["title"], body_b, story=oid(neg))
        ls.add_pair(a_id, b_id, 0, "same_template")
    ls.notes = {"originals": len(originals), "eligible_articles": len(pool)}
    return ls


def dated(ls: LabelledSet, rng: random.Random) -> LabelledSet:
    """``ls`` with publication days: originals on a random day of 2024, each variant (and the second
    document of a negative pair) :data:`DELAYS` days after the first document of its pair."""
    import datetime as dt

    out = LabelledSet(f"{ls.name}_dated", notes={**ls.notes, "delays": list(DELAYS)})
    start = dt.date(2024, 1, 1)
    days: dict[str, dt.date] = {}
    cycle: list[int] = []
    for pair in ls.pairs:
        a, b = pair["a"], pair["b"]
        if a not in days:
            days[a] = start + dt.timedelta(days=rng.randrange(366))
        if not cycle:  # every bucket once per round, in a random order: the buckets stay balanced
            cycle = rng.sample(DELAYS, len(DELAYS))
        delay = cycle.pop()
        days.setdefault(b, days[a] + dt.timedelta(days=delay))
        out.add_pair(a, b, pair["label"], pair["level"], delay=abs((days[b] - days[a]).days))
    for doc_id, doc in ls.docs.items():
        day = days.get(doc_id, start + dt.timedelta(days=rng.randrange(366)))
        out.docs[doc_id] = {**doc, "published_at": day.isoformat()}
    return out


def print_sample(ls: LabelledSet, n: int, rng: random.Random, file: Any = sys.stdout) -> None:
    """Print ``n`` natural pairs (opening and ending of each side) for hand checking."""
    pairs = [p for p in ls.pairs if p["level"] in ("same_title", "same_title_different", "exact")]
    for p in rng.sample(pairs, min(n, len(pairs))):
        a, b = ls.docs[p["a"]], ls.docs[p["b"]]
        print(f"=== {p['level']} label={p['label']} containment={p.get('containment')}", file=file)
        for d in (a, b):
            body = compact(d["content"])
            print(f"  [{d['id']}] len={len(body)}  {body[:90]} ... {body[-60:]}", file=file)


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--data", default="../shared/data",
                    help="folder holding zh_news.jsonl.gz and en_bbc.jsonl.gz")
    ap.add_argument("--out", default="out/labelled", help="output folder (not committed)")
    ap.add_argument("--limit", type=int, default=None,
                    help="small slice: at most this many natural candidate pairs and repost originals")
    ap.add_argument("--originals", type=int, default=400, help="repost originals per language")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--sample", type=int, default=0, help="print N natural pairs per set to check")
    ap.add_argument("--sets", default="zh_natural,zh_reposts,en_natural,en_reposts,zh_reposts_dated,"
                    "en_reposts_dated")
    args = ap.parse_args(list(argv) if argv is not None else None)

    data, out = Path(args.data), Path(args.out)
    wanted = set(args.sets.split(","))
    manifest: dict[str, Any] = {"seed": args.seed, "limit": args.limit, "sets": {}}
    n_orig = args.originals if args.limit is None else min(args.originals, args.limit)
    for lang, fname in (("zh", "zh_news.jsonl.gz"), ("en", "en_bbc.jsonl.gz")):
        if not {f"{lang}_natural", f"{lang}_reposts", f"{lang}_reposts_dated"} & wanted:
            continue
        records = read_corpus(data / fname)
        zh = lang == "zh"
        if f"{lang}_natural" in wanted:
            rng = random.Random(f"{args.seed}-{lang}-natural")
            ls = build_natural(f"{lang}_natural", records, zh, rng, args.limit)
            manifest["sets"][ls.name] = ls.write(out)
            if args.sample:
                print_sample(ls, args.sample, random.Random(args.seed))
        if {f"{lang}_reposts", f"{lang}_reposts_dated"} & wanted:
            rng = random.Random(f"{args.seed}-{lang}-reposts")
            ls = build_reposts(f"{lang}_reposts", records, zh, rng, n_orig)
            if f"{lang}_reposts" in wanted:
                manifest["sets"][ls.name] = ls.write(out)
            if f"{lang}_reposts_dated" in wanted:
                days = dated(ls, random.Random(f"{args.seed}-{lang}-days"))
                manifest["sets"][days.name] = days.write(out)
    text = json.dumps(manifest, ensure_ascii=False, indent=2) + "\n"
    (out / "manifest.json").write_text(text, encoding="utf-8")
    print(json.dumps(manifest, ensure_ascii=False, indent=2), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
