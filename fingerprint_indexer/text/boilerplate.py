"""Remove page furniture from normalised article text before it is fingerprinted.

Reposts of one article differ mostly in what the re-publishing site wraps around it: navigation and
breadcrumb lines, a dateline with source and author, an editor line, a copyright or disclaimer footer,
share buttons, "related reading" links, app and WeChat promotions, and inline ad sentences; scraped pages
also carry left-over CSS/JavaScript. Those words land among the top TF-IDF terms of a short article
(site and editor names have high IDF) and move a 64-bit SimHash far beyond the block-index radius.

Dropping them is safe for duplicate detection even when a rule over-fires: a sentence removed from both
copies of an article changes neither fingerprint's agreement, while one left in a single copy does.
So the rules are deliberately broad and act on short units only:

- code lines (CSS rules, JavaScript statements) anywhere;
- short sentences that carry a furniture marker (责任编辑, 来源, 原标题, 免责声明, 版权, 分享到, 扫码, 客户端,
  "advertisement", "copyright", "read more", ...) anywhere;
- any line that opens with a disclaimer/copyright marker (免责声明, 凡本网注明, "copyright", ...);
- menus (lines of four or more short items separated by bars) and short bylines ("by ...");
- at the top and bottom edges, short lines without sentence-final punctuation (titles, datelines,
  breadcrumbs, bylines), except the first line of a hard-wrapped article (it ends on a word such as
  "said" or "the" that runs on into the next line, or, where the text's case is known, the next line
  goes on in lower case: "Red Lion Inns Limited Partnership" / "said it filed ...") and a closing
  table that the text introduces: when
  the last kept line ends with a colon or a dash ("adjusted its rates as follows:") and the short lines
  after it hold figures, they are the article's own rows (wire rate tables, results), not furniture;
  likewise an opening table: when the short lines at the top hold figures in two or more lines and one
  of them compares ("qtly div 7.1 cts vs 7.1 cts prior", "pay march 31", "record march 16", above a
  "note:" line), they are the item's figures (wire earnings and payouts), kept from the first that holds
  one.

Input is text as produced by :func:`fingerprint_indexer.text.clean.clean` (NFKC, lower-case, one
paragraph per line); the output keeps the remaining lines in order.
"""

from __future__ import annotations

import re

# Markers of page furniture, matched on lower-cased NFKC text. Chinese first, then English.
_MARKERS_ZH = (
    "责任编辑", "编辑:", "编辑 :", "审核:", "校对:", "作者:", "记者:", "来源:", "信息来源", "稿件来源",
    "原标题", "免责声明", "声明:", "版权", "转载", "侵权", "icp", "举报", "分享到", "分享至", "扫码",
    "扫描二维码", "二维码", "客户端", "app", "公众号", "微信", "微博", "相关阅读", "推荐阅读", "延伸阅读",
    "相关新闻", "热门推荐", "点击",
    "阅读原文", "阅读全文", "查看更多", "更多精彩", "打印", "字号", "关闭窗口", "当前位置", "首页", "频道",
    "广告", "优惠券", "限时特惠", "招商", "热线", "新用户", "收藏", "评论(", "浏览次数", "发布时间", "未完",
    "专题", "独家稿件", "本文系", "本文转自", "图片来源",
)
_MARKERS_EN = (
    "advertisement", "sponsored", "subscribe", "newsletter", "sign up", "follow us", "follow @", "share this",
    "share on", "related:", "read more", "more from", "don't miss", "click here", "download the", "the app",
    "copyright", "(c) ", "©", "all rights reserved", "reporting by", "editing by", "originally appeared",
    "originally published", "terms of use", "privacy policy", "cookie", "contact us", "report an error",
    "print this", "comments (", "text size", "listen to this article", "published:", "updated:", "breaking:",
    "continue reading", "story continues", "email us", "staff", "views expressed", "home >", "continued...",
    "on twitter", "on facebook", "whatsapp", "linkedin",
)
MARKERS: tuple[str, ...] = _MARKERS_ZH + _MARKERS_EN
# A line that opens with one of these is a disclaimer or copyright paragraph, however long.
LINE_MARKERS: tuple[str, ...] = (
    "免责声明", "声明:", "凡本网", "凡注明", "版权所有", "版权声明", "本文系", "违法和不良信息", "copyright",
    "the views expressed", "all rights reserved", "this article originally", "this material may not",
)

_MARKER_RE = re.compile("|".join(re.escape(m) for m in sorted(MARKERS, key=len, reverse=True)))
_LINE_MARKER_RE = re.compile("|".join(re.escape(m) for m in LINE_MARKERS))
# Code patterns. Each is tried once per position, so none may rescan an unbounded stretch from every
# position: a leading ``[a-z-]+`` before ``:`` is written ``[a-z-]`` (the same lines match), and the CSS
# rule ``\w+\s*\{[^}]*:[^}]*;`` is checked by :func:`_has_css_rule` in one pass.
_CODE_RE = re.compile(
    r"function\s*\(|\bvar\s+[\w$]+\s*=|document\.|window\.|^\s*[{}()\[\];,]+\s*$"
    r"|\}\s*\)\s*\(|\.(?:js|css|png|jpg|gif)\b|https?://|//[a-z0-9-]+\.[a-z]|[a-z-]:\s*[^;]{0,40};\s*[a-z-]+:"
    r"|^/\*.*\*/$|\{\s*\}|^//|^(?:if|else|for|while|switch)\b[^{}]{0,80}\{$"
)
_WORD_BRACE = re.compile(r"\w\s*\{")
# A byline: a short line that gives the author ("by laura roberts, business insider weekly").
_BYLINE = re.compile(r"^by [^.!?]{2,60}$")
# A menu: four or more short items separated by bars ("news | sport | business | tech").
_MENU = re.compile(r"^(?:[^|]{1,30}\|){3,}[^|]{0,30}$")
# Sentence pieces: up to and including a sentence-final mark (Chinese or Latin), or the rest of the line.
SENTENCE_RE = re.compile(r".+?(?:[。!?;…]+[\"'”’」)]*|\.[\"'”’)]*(?=\s|$)|$)")
_FINAL_PUNCT = re.compile(r"[。!?.…\"'”」)]$")

SHORT_SENTENCE = 80  # characters: a furniture sentence is short; a long one with a marker is article text
CODE_LINE = 200  # characters: a shorter line with a code pattern is code
ASCII_SHARE = 0.6  # a longer line is code only when mostly ASCII
MIN_KEPT = 0.2  # when less than this share of the text (code aside) survives, the rules misfired
EDGE_LINE = 40  # characters: short unpunctuated lines at the edges are titles, datelines, breadcrumbs


def _has_css_rule(line: str) -> bool:
    """Whether ``line`` holds ``word {... : ... ;`` with no ``}`` in between (a CSS rule), in linear time.

    Same answer as searching ``\\w+\\s*\\{[^}]*:[^}]*;``, which backtracks quadratically (cubically
    on ``a{:a{:...``) on long text. Between two ``}``, only the first ``{`` that follows a word can
    matter (any later one sees less of the same stretch), so each stretch is looked at once.
    """
    pos = 0
    while (m := _WORD_BRACE.search(line, pos)) is not None:
        end = line.find("}", m.end())
        if end < 0:
            end = len(line)
        colon = line.find(":", m.end(), end)
        if colon >= 0 and line.find(";", colon + 1, end) >= 0:
            return True
        pos = end + 1
    return False


def is_code(line: str) -> bool:
    """A line of left-over CSS or JavaScript: a code pattern in a short or mostly-ASCII line.

    A long prose paragraph that merely quotes a URL is not code (its ASCII share is low).
    """
    if not (_CODE_RE.search(line) or _has_css_rule(line)):
        return False
    if len(line) <= CODE_LINE:
        return True
    return sum(1 for c in line if c.isascii()) >= ASCII_SHARE * len(line)


def has_marker(text: str) -> bool:
    """True when ``text`` (lower-cased) carries a page-furniture marker."""
    return bool(_MARKER_RE.search(text))


def _strip_sentences(line: str) -> str:
    """The line without its short marker-carrying sentences."""
    pieces = [p for p in SENTENCE_RE.findall(line) if p.strip()]
    kept = [p for p in pieces if len(p.strip()) > SHORT_SENTENCE or not has_marker(p)]
    return "".join(kept).strip()


def _is_edge_furniture(line: str) -> bool:
    return len(line) <= EDGE_LINE and not _FINAL_PUNCT.search(line)


# A line that ends on one of these words runs on into the next: the first line of a hard-wrapped
# article ("tcf banking and savings fa said it"), not a title or a dateline.
_RUNS_ON = re.compile(
    r"\b(?:a|an|the|of|to|in|on|at|for|with|by|from|and|or|but|that|which|who|it|its|is|are|was|were"
    r"|has|have|had|will|would|said|says|as|than|be|been)$"
)


_DIGIT = re.compile(r"\d")


def _introduced_table(kept: str, rows: list[str]) -> bool:
    """Whether ``rows`` are a table that the line ``kept`` announces: it ends with a colon or a dash
    ("... in 000's bushels -") and they hold figures."""
    return kept.endswith((":", " -")) and any(_DIGIT.search(r) for r in rows)


# A Latin-script table row that compares two figures: "shr 19 cts vs seven cts".
_COMPARES = re.compile(r"^[ -~]*\S \s*vs\.? +\S[ -~]*$")


def _opening_table(rows: list[str]) -> int | None:
    """Where a table opens the text among the top-edge lines ``rows``: the first row that holds a figure,
    when two or more do and one compares ("... vs ..."); None when the rows are titles and datelines."""
    figures = [i for i, r in enumerate(rows) if _DIGIT.search(r)]
    compares = [i for i, r in enumerate(rows) if _COMPARES.match(r)]
    return min(figures[0], compares[0]) if len(figures) >= 2 and compares else None


# A line of the text as written that goes on with a lower-case Latin word continues the sentence above.
_CONTINUES = re.compile(r"^[a-z]")


def strip_boilerplate(text: str, cased: str = "") -> str:
    """Article text with page furniture removed (see the module docstring for the rules). ``cased`` is
    the same text normalised without lower-casing (:func:`fingerprint_indexer.text.clean.normalize` with
    ``lower=False``), line for line; with it, a top line that the next line continues in lower case is
    the article's first line, not a title."""
    raw_lines = text.split("\n")
    cased_lines = cased.split("\n") if cased else []
    # for each line, whether the next non-empty line as written starts in lower case (one backward pass)
    continued = [False] * len(raw_lines)
    if len(cased_lines) == len(raw_lines):
        after = False
        for i in range(len(cased_lines) - 1, -1, -1):
            continued[i] = after
            stripped = cased_lines[i].strip()
            if stripped:
                after = bool(_CONTINUES.match(stripped))
    lines: list[str] = []
    goes_on: list[bool] = []  # the kept line's next non-empty line, as written, starts in lower case
    prose: list[str] = []  # the lines that are not code: what the safety net below falls back to
    for i, raw in enumerate(raw_lines):
        line = raw.strip()
        if not line or is_code(line):
            continue
        prose.append(line)
        if _LINE_MARKER_RE.match(line) or _MENU.match(line) or _BYLINE.match(line):
            continue
        line = _strip_sentences(line)
        if line:
            lines.append(line)
            goes_on.append(continued[i])
    start, end = 0, len(lines)
    while (start < end - 1 and _is_edge_furniture(lines[start]) and not _RUNS_ON.search(lines[start])
           and not goes_on[start]):  # fmt: skip
        start += 1
    if start == end - 1 and _is_edge_furniture(lines[start]):
        start = end
    elif start and (table := _opening_table(lines[:start])) is not None:
        start = table
    last = len(lines)
    while end > start and _is_edge_furniture(lines[end - 1]):
        end -= 1
    if start < end < last and _introduced_table(lines[end - 1], lines[end:]):
        end = last
    out = "\n".join(lines[start:end]) or "\n".join(lines)
    rest = "\n".join(prose)  # a page of nothing but code has no article text at all
    return out if len(out) >= MIN_KEPT * len(rest) else rest
