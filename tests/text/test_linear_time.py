"""Every text path is linear in its input: pathological text costs four times as much at four times the size.

Work per character is bounded by comparing the CPU time of an input of n characters with one of 4n made
of the same repeated unit: linear code takes about 4x, the quadratic regexes this guards against took
16x or more (`is_code` on 64 K characters without punctuation took 36 s). Each figure is the best of
three runs, so a busy machine slows both sides rather than one, and a pair that misses the bound is
measured again, up to three times in all: a lost time slice on a shared machine passes on a later try,
a superlinear path misses the bound every time.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.text.boilerplate import is_code, strip_boilerplate
from fingerprint_indexer.text.clean import clean
from fingerprint_indexer.text.tokenize import Tokenizer

# The code pattern as it was before it was made linear: is_code must keep giving its answers.
OLD_CODE_RE = re.compile(
    r"function\s*\(|\bvar\s+[\w$]+\s*=|document\.|window\.|\w+\s*\{[^}]*:[^}]*;|^\s*[{}()\[\];,]+\s*$"
    r"|\}\s*\)\s*\(|\.(?:js|css|png|jpg|gif)\b|https?://|//[a-z0-9-]+\.[a-z]|[a-z-]+:\s*[^;]{0,40};\s*[a-z-]+:"
    r"|^/\*.*\*/$|\{\s*\}|^//|^(?:if|else|for|while|switch)\b[^{}]{0,80}\{$"  # comments, empty blocks, ifs
)
CODE_ALPHABET = "ab-_$ \n\t{}();:,.=/中文var"
PATHOLOGICAL = "中文ab -{}:;<>&#.\n/\"'=。!?pvar"
N = 8000

_fpr = Fingerprinter()
_tok = Tokenizer()
PATHS: dict[str, Callable[[str], object]] = {
    "is_code": is_code,
    "strip_boilerplate": strip_boilerplate,
    "clean_html": lambda s: clean(html=s),
    "tokenize": _tok.count,
    "fingerprint": _fpr.fingerprint,
}


def _cpu(func: Callable[[str], object], text: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        func(text)
        best = min(best, time.process_time() - start)
    return best


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=CODE_ALPHABET, max_size=40))
@example("a{:;")
@example("a {x{:};")
@example("a{ {c:d;")
def test_is_code_gives_the_answers_of_the_former_regex(line: str) -> None:
    expected = bool(OLD_CODE_RE.search(line)) and (
        len(line) <= 200 or sum(c.isascii() for c in line) >= 0.6 * len(line))
    assert is_code(line) == expected


def _assert_linear(path: str, unit: str, n: int = N, tries: int = 3) -> None:
    func = PATHS[path]
    seen = []
    for _ in range(tries):
        small, large = _cpu(func, _repeat(unit, n)), _cpu(func, _repeat(unit, 4 * n))
        if large <= 8 * small + 0.02:
            return
        seen.append(f"{small:.3f} s at n, {large:.3f} s at 4n")
    raise AssertionError(f"{path} on {unit!r} * n, each of {tries} tries: " + "; ".join(seen))


@settings(max_examples=12, deadline=None)
@given(st.text(alphabet=PATHOLOGICAL, min_size=1, max_size=4), st.sampled_from(sorted(PATHS)))
@example("中文新闻", "is_code")  # long text without punctuation
@example("abcdefgh", "is_code")
@example("a{:", "is_code")  # an unclosed CSS rule, over and over
@example("a{:", "fingerprint")
@example("中文新闻", "fingerprint")
def test_work_per_character_is_bounded(unit: str, path: str) -> None:
    if path == "clean_html" and "<" in unit:
        return  # the standard library's HTML parser: see the next test
    _assert_linear(path, unit)


@pytest.mark.slow  # times a quadratic parse, three tries
@pytest.mark.xfail(strict=True, reason="Python's html.parser rescans an unclosed tag from each "
                   "'<' at the end of input (CPython gh-135462); not fixed here without changing output")
def test_html_parser_on_unclosed_tags_is_linear() -> None:
    _assert_linear("clean_html", "<a ", 2000)
