"""The compact word tables and their per-user cache: the same values as the source, whatever the cache."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fingerprint_indexer.fingerprint import facts
from fingerprint_indexer.text.lexicon import CACHE_ENV, Lexicon, cache_path, word_hash
from fingerprint_indexer.text.weights import IdfFileError, IdfTable, jieba_file

words = st.dictionaries(st.text(min_size=1, max_size=6), st.floats(allow_nan=False), max_size=40)


@given(words, st.lists(st.text(max_size=6), max_size=10))
def test_lexicon_answers_as_the_mapping(d: dict[str, float], probes: list[str]) -> None:
    for lex in (Lexicon.from_mapping(d), Lexicon.from_bytes(Lexicon.from_mapping(d).to_bytes({"k": 1}))[0]):
        assert dict(lex.items()) == d
        asked = [*d, *probes]
        got = lex.values_of(asked, -7.5).tolist()
        assert got == [d.get(w, -7.5) for w in asked]
        assert [w in lex for w in asked] == [w in d for w in asked]


def test_words_sharing_a_hash_are_told_apart_by_their_bytes() -> None:
    # two entries filed under one hash (what a collision would look like): only the word itself matches
    h = word_hash("二")
    lex = Lexicon(np.array([h, h], dtype=np.uint64), np.array([1.0, 2.0]), np.array([0, 3, 6]),
                  "一二".encode())
    assert lex.get("二") == 2.0
    assert "一" not in lex  # its own hash is not in the table
    assert lex.values_of(["二", "三"], 0.0).tolist() == [2.0, 0.0]


def test_damaged_lexicon_files_are_refused() -> None:
    data = Lexicon.from_mapping({"经济": 2.5, "北京": 7.25}).to_bytes({})
    for bad in (b"", data[:-1], data[:-3] + bytes([data[-3] ^ 1]) + data[-2:], b"x" + data[1:]):
        with pytest.raises(ValueError):
            Lexicon.from_bytes(bad)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def _same(a: IdfTable, b: IdfTable) -> None:
    assert (a.name, a.default, len(a.idf)) == (b.name, b.default, len(b.idf))
    terms = list(b.idf)
    assert a.weights(terms).tobytes() == b.weights(terms).tobytes()  # bit for bit
    assert a.weight("没有这个词的词") == b.weight("没有这个词的词") == b.default


def test_jieba_table_from_the_cache_has_the_parsed_weights(cache: Path) -> None:
    source = jieba_file("analyse", "idf.txt")
    parsed = IdfTable.parse(source.read_bytes(), source)
    built = IdfTable.load(source)  # parses and writes the cache
    assert cache_path("idf", source).is_file()
    _same(built, parsed)
    cached = IdfTable.load(source)
    assert isinstance(cached.idf, Lexicon)  # read back from the cache
    _same(cached, parsed)
    terms = list(parsed.idf)
    assert IdfTable.load(source).weights(terms).tolist() == [parsed.idf[t] for t in terms]


def test_corrupt_stale_or_unwritable_cache_falls_back_on_the_source(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "idf.txt"
    source.write_text("经济 2.5\n北京 7.25\n上海 6.0\n", encoding="utf-8")
    first = IdfTable.load(source)
    path = cache_path("idf", source)
    data = path.read_bytes()
    for damaged in (b"", data[: len(data) // 2], data[:-1] + bytes([data[-1] ^ 0xFF]), b"\0" * len(data)):
        path.write_bytes(damaged)
        _same(IdfTable.load(source), first)
        assert path.read_bytes() == data  # rebuilt
    source.write_text("经济 3.5\n北京 7.25\n", encoding="utf-8")  # edited: the cache is stale
    os.utime(source, ns=(1, 1))
    assert IdfTable.load(source).weight("经济") == 3.5
    assert IdfTable.load(source).name != first.name
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    # a cache directory that cannot be created: nothing is cached, nothing fails
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    table = IdfTable.load(source)
    assert table.weight("经济") == 3.5 and isinstance(table.idf, dict)


def test_a_malformed_source_is_still_an_error(cache: Path, tmp_path: Path) -> None:
    p = tmp_path / "bad.txt"
    p.write_text("word notanumber\n", encoding="utf-8")
    with pytest.raises(IdfFileError, match=r"bad\.txt:1"):
        IdfTable.load(p)
    assert not cache_path("idf", p).exists()


def test_names_from_the_cached_dictionary(cache: Path) -> None:
    facts._dictionary.cache_clear()
    try:
        for _ in range(2):  # built, then read from the cache
            got = facts.names(["北京", "上海", "经济", "阿巴阿巴阿巴", "abc"])
            assert got == {"北京", "上海", "阿巴阿巴阿巴"}
            facts._dictionary.cache_clear()
        assert cache_path("names", jieba_file("dict.txt")).is_file()
    finally:
        facts._dictionary.cache_clear()
