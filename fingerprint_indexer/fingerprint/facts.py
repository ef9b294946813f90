"""The facts of a text: its numbers, dates and counts, so that template news with other facts stays apart.

Daily bulletins, earnings tables, dividend notices and recurring meetings are written from one template:
two of them share almost every word and differ only in their figures, dates and ordinals ("第三十三次" vs
"第一百二十七次", "Shr 29 cts" vs "Shr 31 cts"). To a SimHash or a MinHash they are near-duplicates; to a
reader they are different stories. A repost, an excerpt or a light edit keeps (nearly) all the facts.

A fact is a name or a normalised number. Names are the Chinese terms of a text that jieba's dictionary
tags as a person, place or organisation, or that it does not know at all (new words:
mostly names); numbers are Arabic numerals (thousands separators dropped, so ``1,796,121`` and
``1796121`` agree), Chinese numerals where they count something (after 第 or before a classifier such as
届, 次, 号, 月, 日, 名; converted, so ``三十三`` equals ``33``), English number words from two upwards, and
English month names. Facts are kept as a set; a text with more than :data:`MAX_FACTS` keeps the ones of
smallest hash (a bottom-k sample, so two texts can still be compared exactly below the smaller cut-off).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from functools import cache, lru_cache
from typing import Any

import xxhash

from fingerprint_indexer.fingerprint.chunks import iter_sentences, sentence_spans
from fingerprint_indexer.text.boilerplate import SENTENCE_RE
from fingerprint_indexer.text.lexicon import cached_lexicon, values_of
from fingerprint_indexer.text.weights import jieba_file

MAX_FACTS = 64

# Each fact is a kind mark and a value. OCCURRENCE facts say which instance of a recurring thing a text
# is about (an ordinal, a session, a date: 第33次, 14届, 3月4日, april 30); FIGURE facts are the other
# numbers; NAME facts are names. A DAY fact is the document's publication day (``%2024-09-29``); a TITLE
# fact is a name or ordinal of the title (``^@唐嫣``, ``^#第2次``). Neither is part of the body, so both
# stay outside the bottom-k sample; a document has at most one day and :data:`MAX_TITLE_FACTS` title facts.
OCCURRENCE, FIGURE, NAME, DAY, TITLE = "#", "=", "@", "%", "^"
MAX_TITLE_FACTS = 8

_OCCURRENCE_UNITS = "届次号期批轮年月日时"
_ARABIC = re.compile(rf"(第)?(\d+(?:[.,]\d+)*)([{_OCCURRENCE_UNITS}])?")
# A line or sentence break inside a figure ("82.\n7m", as re-flowed copies have it) is not a separator.
_SPLIT_FIGURE = re.compile(r"(?<=\d)([.,])\s+(?=\d)")
_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_CN_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9}  # fmt: skip
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}
_CN_BIG = {"万": 10_000, "亿": 100_000_000}
_CN_RUN = "〇零一二两三四五六七八九十百千万亿"
# A Chinese numeral counts something when 第 precedes it or one of these classifiers follows it.
_CN_CLASSIFIERS = _OCCURRENCE_UNITS + "个项名位人家条艘架枚颗元岁天周座所份种倍例米吨"
_CN_NUMERAL = re.compile(rf"(第)?([{_CN_RUN}]+)(?=([{_CN_CLASSIFIERS}])?)")
# A Chinese numeral alone in brackets numbers a part of a series: 柴燃交替动力（一） / （二）.
_CN_PART = re.compile(rf"\(([{_CN_RUN}]{{1,4}})\)")
_EN_NUMBERS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")  # fmt: skip
# "may" alone is left out (as a verb it is far more common than the month); "may 15" is a date.
_EN_WORD = re.compile(r"\b(" + "|".join([*_EN_NUMBERS, *(m for m in _MONTHS if m != "may")]) + r")\b")
_MONTH = "|".join(_MONTHS)
_EN_DATE = re.compile(rf"\b(?:({_MONTH})\s+(\d{{1,2}})|(\d{{1,2}})\s+({_MONTH}))\b")


def _arabic(token: str) -> str:
    """``1,796,121`` -> ``1796121``; ``007`` -> ``7``; ``4.50`` -> ``4.5``; a decimal comma stays."""
    if _THOUSANDS.match(token):
        token = token.replace(",", "")
    if "," in token:
        return token
    if "." in token:
        whole, _, frac = token.partition(".")
        if "." in frac:  # a version or date such as 1.2.3: keep as written
            return token
        frac = frac.rstrip("0")
        whole = whole.lstrip("0") or "0"
        return f"{whole}.{frac}" if frac else whole
    return token.lstrip("0") or "0"


def chinese_number(run: str) -> int | None:
    """The value of a Chinese numeral (``一百二十七`` -> 127, ``二〇二二`` -> 2022), or None if none."""
    if all(c in _CN_DIGITS for c in run):  # digit by digit (years) or a single digit
        return int("".join(str(_CN_DIGITS[c]) for c in run))
    total = section = digit = 0
    seen_digit = False
    for c in run:
        if c in _CN_DIGITS:
            digit, seen_digit = _CN_DIGITS[c], True
        elif c in _CN_UNITS:
            section += (digit if seen_digit else 1) * _CN_UNITS[c]
            digit, seen_digit = 0, False
        elif c in _CN_BIG:
            section += digit
            if section == 0:
                return None
            total += section * _CN_BIG[c]
            section = digit = 0
            seen_digit = False
        else:
            return None
    return total + section + digit


# person, place and organisation tags (jieba's "nz", other proper nouns, holds many common words)
_NAME_TAGS = frozenset({"nr", "nrfg", "nrt", "ns", "nt"})
_CJK_TERM = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}$")


@cache
def _dictionary() -> Mapping[str, float]:
    """jieba's dictionary: every word, valued 1.0 when tagged as a proper noun and 0.0 otherwise (read
    once per process, through the per-user cache of :func:`cached_lexicon`)."""
    return cached_lexicon("names", jieba_file("dict.txt"), _read_dictionary)[0]


def _read_dictionary(raw: bytes) -> tuple[dict[str, float], dict[str, Any]]:
    words: dict[str, float] = {}
    for line in raw.decode("utf-8").split("\n"):  # lines as a text file reads them ('\r' is whitespace)
        parts = line.split()
        if parts:
            name = 1.0 if len(parts) == 3 and parts[2] in _NAME_TAGS else 0.0
            words[parts[0]] = max(words.get(parts[0], 0.0), name)
    return words, {}


def names(terms: Iterable[str]) -> set[str]:
    """The Chinese terms that are names: tagged as proper nouns by jieba's dictionary, or unknown to it."""
    chinese = [t for t in terms if _CJK_TERM.match(t)]
    flags = values_of(_dictionary(), chinese, 1.0)
    return {t for t, flag in zip(chinese, flags.tolist(), strict=True) if flag > 0.0}


def _qualified(ordinal: str | None, value: str, unit: str | None) -> str:
    """``第`` + 33 + ``次`` -> ``#第33次``; 569 + ``例``... -> ``=569`` (only occurrence units are kept)."""
    if ordinal or (unit and unit in _OCCURRENCE_UNITS):
        return f"{OCCURRENCE}{ordinal or ''}{value}{unit if unit and unit in _OCCURRENCE_UNITS else ''}"
    return FIGURE + value


def fact_hash(fact: str) -> int:
    """The hash that orders a bottom-k sample of facts (what comparisons cut samples at)."""
    return xxhash.xxh3_64_intdigest(fact.encode("utf-8"))


def _numbers(text: str) -> set[str]:
    """The number, date and ordinal facts of a text (names aside); figures split by a break are joined
    first (see :data:`_SPLIT_FIGURE`)."""
    return {fact for _, _, fact in _number_facts(text)}


def _number_facts(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, fact) of every number, date and ordinal of a text; ``end`` includes what a look-ahead
    read."""
    for m in _ARABIC.finditer(text):
        yield m.start(), m.end(), _arabic_fact(m.group())
    for m in _CN_NUMERAL.finditer(text):
        ordinal, run, classifier = m.group(1), m.group(2), m.group(3)
        if not ordinal and not classifier:
            continue
        if run in ("一", "两") and not ordinal:  # 一个, 两国: far more often a word than a count
            continue
        fact = _chinese_fact(m.group(), classifier)
        if fact is not None:
            yield m.start(), max(m.end(), m.end(3)), fact
    for m in _CN_PART.finditer(text):
        value = chinese_number(m.group(1))
        if value is not None:
            yield m.start(), m.end(), f"{OCCURRENCE}第{value}"
    for m in _EN_DATE.finditer(text):
        month, day = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        yield m.start(), m.end(), f"{OCCURRENCE}{month} {int(day)}"
    for m in _EN_WORD.finditer(text):
        word = m.group()
        yield m.start(), m.end(), FIGURE + (str(_EN_NUMBERS[word]) if word in _EN_NUMBERS else word)


@lru_cache(maxsize=1 << 16)
def _arabic_fact(match: str) -> str:
    """The fact of one match of :data:`_ARABIC` (its groups follow from the matched text, and the same
    figures recur across documents: each is worked out once)."""
    m = _ARABIC.fullmatch(match)
    assert m is not None
    return _qualified(m.group(1), _arabic(m.group(2)), m.group(3))


@lru_cache(maxsize=1 << 16)
def _chinese_fact(match: str, classifier: str | None) -> str | None:
    """The fact of one match of :data:`_CN_NUMERAL` (``match``: its text, the classifier it looked ahead
    to aside), or None when the run is no numeral."""
    ordinal, run = ("第", match[1:]) if match.startswith("第") else (None, match)
    value = chinese_number(run)
    return None if value is None else _qualified(ordinal, str(value), classifier)


def _by_hash(items: Iterable[str], limit: int) -> tuple[str, ...]:
    return tuple(sorted(items, key=lambda f: (fact_hash(f), f))[:limit])


# -------------------------------------------------------------------------------------------- frames
#: Frames kept per document (bottom-k by skeleton hash, like the facts).
MAX_FRAMES = 64
_MASK_NUMBERS = re.compile(
    rf"\d+(?:[.,]\s*\d+)*|[{_CN_RUN}]+|\b(?:" + "|".join([*_EN_NUMBERS, *_MONTHS]) + r")\b"
)
_SPACE = re.compile(r"\s+")  # what a skeleton drops (as str.split() cuts on it)
_UNIT = re.compile(r"[^\n]+")


def _units(text: str) -> Iterator[str]:
    """Lines, cut into sentences: a table row or a bulletin line is a unit even without punctuation."""
    for line in _UNIT.finditer(text):
        yield from iter_sentences(line.group())


def _units_with_facts(text: str, longest_first: list[str]) -> list[tuple[str, set[str], list[str]]]:
    """Each unit of :func:`_units` with its number facts (:func:`_numbers` of the unit) and the names
    that may occur in it (all that do, longest first).

    The number patterns scan the whole text once, each match going to the unit it lies in: units are
    separated by line breaks or follow sentence-final punctuation, so no pattern reads across the gap,
    and a match that would (or a unit cut for length) sends the text the unit-by-unit way. Names (Chinese
    words only) cannot cross a gap either: each is searched for once in the whole text.
    """
    spans: list[tuple[int, int]] = []
    for line in _UNIT.finditer(text):
        got = sentence_spans(line.group())
        if got is None:
            return [(unit, _numbers(unit), longest_first) for unit in _units(text)]
        spans += [(line.start() + a, line.start() + b) for a, b in got]
    starts = [a for a, _ in spans]
    found: list[set[str]] = [set() for _ in spans]
    for start, end, fact in _number_facts(text):
        i = bisect_right(starts, start) - 1
        if i < 0 or end > spans[i][1]:
            return [(unit, _numbers(unit), longest_first) for unit in _units(text)]
        found[i].add(fact)
    named: list[list[str]] = [[] for _ in spans]
    for n in longest_first:
        pos = text.find(n)
        while pos >= 0:
            i = bisect_right(starts, pos) - 1
            named[i].append(n)
            pos = text.find(n, spans[i][1])
    return [(text[a:b], here, names_) for (a, b), here, names_ in zip(spans, found, named, strict=True)]


def analyse(
    text: str, terms: Iterable[str] = (), max_facts: int = MAX_FACTS, max_frames: int = MAX_FRAMES,
    latin: Iterable[str] = (), terms_are_names: bool = False,
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A text's facts and frames, in one pass over its lines and sentences.

    Facts: every number, date, ordinal and name of the text, bottom-``max_facts`` by hash. Frames: for
    each line or sentence that states a fact, its skeleton (the unit with every number and name masked)
    and what fills it, as ``skeleton hash << 32 | facts hash``; the ``max_frames`` of smallest skeleton
    hash. Two texts written from one template share skeletons; when a shared skeleton is filled with
    other facts ("全国政协十四届#次会议将于#月#日..." with 三 vs 四), they report different occurrences.
    ``latin``: the text's Latin-script names (:func:`latin_body_names`); they are facts, not frame masks.
    ``terms_are_names``: ``terms`` are :func:`names` already (a term table keeps each term's answer),
    so they are not looked up again.
    """
    found = set(terms) if terms_are_names else names(terms)
    longest_first = sorted(found, key=lambda n: (-len(n), n))  # 北京人民大会堂 before 北京
    facts: set[str] = {NAME + n for n in found} | {NAME + n for n in latin}
    out: set[int] = set()
    for unit, here, candidates in _units_with_facts(_SPLIT_FIGURE.sub(r"\1", text), longest_first):
        facts |= here
        for n in candidates:
            if n in unit:
                here.add(NAME + n)
                unit = unit.replace(n, "@")
        if not here:
            continue
        skeleton = "".join(_MASK_NUMBERS.sub("#", unit).split())  # split() cuts where \s+ matches
        filled = xxhash.xxh3_64_intdigest("\x1f".join(sorted(here)).encode("utf-8")) & 0xFFFFFFFF
        out.add((xxhash.xxh3_64_intdigest(skeleton.encode("utf-8")) & 0xFFFFFFFF) << 32 | filled)
    return _by_hash(facts, max_facts), tuple(sorted(out)[:max_frames])


# ------------------------------------------------------------------------------------ publication day
_DMY = re.compile(r"^\s*(\d{1,2})[- ]([A-Za-z]{3})[a-z]*[- ,]+(\d{4})\b")  # 1-APR-1987 11:19:44.38
_YMD = re.compile(r"^\s*(\d{4})[-/.年](\d{1,2})[-/.月](\d{1,2})")  # 2024/09/29, 2024年9月29日


_ISO_AS_IS = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")
_CLOCK = re.compile(r"\s+(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?\s*$")  # the wire form's time


def _published(value: str | None) -> dt.datetime | dt.date | None:
    """The publication time or day written in ``value`` (see :func:`publication_day`), no zone shift."""
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        pass
    m, ymd = _DMY.match(text), _YMD.match(text)
    if m or ymd:
        try:
            day = (dt.datetime.strptime(f"{m[1]} {m[2].title()} {m[3]}", "%d %b %Y").date() if m
                   else dt.date(int(ymd[1]), int(ymd[2]), int(ymd[3])) if ymd else None)
        except ValueError:
            return None
        clock = _CLOCK.match(text, m.end()) if m and day else None
        if clock and day:
            h, mi, sec, frac = clock.groups()
            try:
                return dt.datetime(day.year, day.month, day.day, int(h), int(mi), int(sec or 0),
                                   int((frac or "0").ljust(6, "0")))
            except ValueError:
                return day
        return day
    try:
        return email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None


def publication_day(value: str | None) -> str | None:
    """The day a document was published, as a DAY fact (``%1987-04-01``), or None when ``value`` is not a
    date this reads: ISO 8601 (``2024-09-29``, ``2024-09-29T19:00:00+08:00``), RFC 2822 (feeds), and the
    ``1-APR-1987 11:19:44.38`` of wire archives. The day is the one written (no time-zone shift)."""
    when = _published(value)
    day = when.date() if isinstance(when, dt.datetime) else when
    return f"{DAY}{day.isoformat()}" if day else None


def publication_time(value: str | None) -> str | None:
    """``value`` as ISO 8601, the form a search engine's date field takes, for every form
    :func:`publication_day` reads (``1-APR-1987 11:19:44.38`` -> ``1987-04-01T11:19:44.380000``); None when
    it reads none of them."""
    when = _published(value)
    if when is None:
        return None
    text = (value or "").strip()
    return text if _ISO_AS_IS.fullmatch(text) else when.isoformat()



# -------------------------------------------------------------------------------------- Latin names
_CASED_WORD = re.compile(r"[A-Z][A-Za-z0-9&'-]*")
_OPENS = re.compile(r"[.!?:;][\"')\]]*\s+$")  # what stands before the first word of a sentence
_CLOSES = re.compile(r"[.!?:;][\"')\]]*$")  # how a line that ends a sentence ends
_WRAPPED_LINE = 40  # characters: a shorter line is a row or a title, not prose wrapped mid-sentence


def latin_body_names(cased: str, body: str, stopwords: frozenset[str] = frozenset()) -> set[str]:
    """The Latin-script names of a text, lower-cased: words written with a capital inside a sentence
    (``the Sumitomo Bank Ltd``, ``lead manager Nomura International``) that are not stopwords, in the
    sentences that ``body`` (the boilerplate-stripped, normalised text) kept, so a wrapper's bylines and
    section names do not count. ``cased`` is the normalised text before lower-casing
    (``normalize(text, lower=False)``). Only a word's own sentence decides, never the rest of the text,
    so an excerpt's names are among its source's.

    Wire items written from one template (two banks raising the prime rate, two issuers' eurobonds)
    differ in little but these names; jieba's dictionary gives the Chinese ones."""
    out: set[str] = set()
    kept_lines = set(body.split("\n"))
    kept: set[str] | None = None  # the kept sentences, when a line was not kept whole
    opens = True  # the next line starts a sentence (hard-wrapped wires run sentences over lines)
    for line in cased.split("\n"):
        whole = line.lower() in kept_lines
        # the sentences the boilerplate stripper kept or dropped, cut as it cuts them
        pieces = [line] if whole else [p.strip() for p in SENTENCE_RE.findall(line) if p.strip()]
        if not whole and kept is None:
            kept = {p.strip() for x in kept_lines for p in SENTENCE_RE.findall(x) if p.strip()}
        for n, piece in enumerate(pieces):
            first = n == 0 and not opens
            if not whole and piece.lower() not in (kept or ()):
                continue
            for m in _CASED_WORD.finditer(piece):
                at = m.start()
                if (at == 0 and not first) or _OPENS.search(piece, max(0, at - 6), at):
                    continue
                name = m.group().rstrip("'-").lower()
                if len(name) >= 2 and name not in stopwords:
                    out.add(name)
        # after a dropped line, a closed sentence or a short line (a table row: "Shr 29 cts vs 26 cts")
        # a new sentence or row starts; a long unclosed line is prose wrapped in mid-sentence
        opens = not whole or bool(_CLOSES.search(line)) or len(line) <= _WRAPPED_LINE
    return out


# ------------------------------------------------------------------------------------------- titles
# A site or column name after the headline ("... - 新浪网", "..._网易新闻", "... | Reuters") is the
# page's, not the story's: two reposts carry different ones.
_SITE_SUFFIX = re.compile(r"\s*(?:[-_|\u2013\u2014\uff5c]+)\s*[^-_|\u2013\u2014\uff5c]{1,12}$")


# A company as wires mark it: its symbol (<NTRS>) or, for an unlisted one, its name (<Sterling Bancorp>).
_SYMBOL = re.compile(r"<([A-Za-z][A-Za-z0-9.&'-]{0,15}(?: [A-Za-z0-9.&'-]{1,15}){0,5})>")


def latin_names(title: str) -> set[str]:
    """Names of a Latin-script headline that are certain without a dictionary: companies in angle
    brackets, as wires give them (``<NTRS>``, ``<Sterling Bancorp>``), lower-cased. Capitalised words are
    not enough: a re-headlined copy names the same party otherwise (Tory / Conservative, Italy / Irish)."""
    return {f"<{m.lower()}>" for m in _SYMBOL.findall(title)}


_LATIN_WORD = re.compile(r"[a-z][a-z0-9&'-]*")


def headline_names(title: str, facts: tuple[str, ...]) -> tuple[str, ...]:
    """``facts`` with the Latin-script words of the headline ``title`` (normalised, lower-cased) that the
    document's own facts name, as TITLE names (up to :data:`MAX_TITLE_FACTS` title facts in all).

    A capitalised word alone is not a name (:func:`latin_names`), but one the body writes as a name is:
    a wire headline in capitals names its fund, state or issuer (``FRANKLIN OHIO SETS MONTHLY PAYOUT``)
    and the body spells it out (``Franklin Ohio Insured Tax-Free Income Fund``). Two notices of one
    template then have titles that name others, which :func:`title_conflict` reads."""
    words = {NAME + m.group().rstrip("'-") for m in _LATIN_WORD.finditer(title)}
    new = {TITLE + w for w in words if w in facts}
    if not new:
        return facts
    titled = {f for f in facts if f.startswith(TITLE)}
    room = MAX_TITLE_FACTS - len(titled)
    new -= titled
    return (*facts, *_by_hash(new, room)) if new and room > 0 else facts


def title_facts(title: str, terms: Iterable[str], latin: Iterable[str] = ()) -> tuple[str, ...]:
    """The proper names (among ``terms``, the title's content terms, and ``latin``: see
    :func:`latin_names`) and ordinals of a headline, as TITLE facts.

    Template news is re-headlined least of all where it differs: 《…》法文版 / 俄文版, 唐嫣 / 秦岚 at
    the airport, 第一次 / 第二次 meeting, RENT-A-CENTER / SHELDAHL stock splits. A trailing site name is
    dropped first."""
    head = _SITE_SUFFIX.sub("", title)
    # only names the dictionary knows: a headline's new words are mostly slang
    present = [n for n in terms if n in head]
    proper = values_of(_dictionary(), present, 0.0).tolist()  # one look-up for all: _proper of each
    found = {NAME + n for n, flag in zip(present, proper, strict=True) if flag > 0.0}
    found |= {NAME + n for n in latin if n in head}
    found |= _numbers(head)
    return tuple(TITLE + f for f in _by_hash(found, MAX_TITLE_FACTS))
