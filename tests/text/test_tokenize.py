from pathlib import Path

import pytest

from fingerprint_indexer.text.synonyms import SynonymFileError, load_synonyms, synonyms_id
from fingerprint_indexer.text.tokenize import Tokenizer, slices


def test_mixed_chinese_and_english_tokens() -> None:
    toks = list(Tokenizer().tokens("苹果公司发布了iphone 15和macos系统,售价999美元"))
    assert "苹果公司" in toks or "苹果" in toks
    assert "iphone" in toks
    assert "macos" in toks
    assert "999" in toks
    assert "了" not in toks and "和" not in toks


def test_stopwords_and_single_characters_dropped() -> None:
    toks = list(Tokenizer().tokens("the market and the economy 我们 认为 经济 增长"))
    assert sorted(toks) == sorted(["market", "economy", "经济", "增长"])


def test_latin_only_text_skips_jieba_and_keeps_inner_punctuation() -> None:
    toks = list(Tokenizer().tokens("profits rose 3.5% at u.s. firm covid-19 don't"))
    assert toks == ["profits", "rose", "3.5", "u.s", "firm", "covid-19"]


def test_synonyms_map_variants_to_canonical(tmp_path: Path) -> None:
    f = tmp_path / "syn.txt"
    f.write_text("# comment\n北京华联\t华联商厦\nＵＳＡ\tunited-states\n", encoding="utf-8")
    syn = load_synonyms(f)
    assert syn == {"北京华联": "华联商厦", "usa": "united-states"}
    toks = list(Tokenizer(synonyms=syn).tokens("北京华联今天开业,usa"))
    assert "华联商厦" in toks and "北京华联" not in toks
    assert "united-states" in toks
    assert synonyms_id(syn) != synonyms_id({}) == "none"


def test_bad_synonym_line_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "syn.txt"
    f.write_text("a\tb\nno tab here\n", encoding="utf-8")
    with pytest.raises(SynonymFileError, match=r"syn.txt:2"):
        load_synonyms(f)


def test_chunking_preserves_text_and_tokens() -> None:
    text = ("第一行新闻内容关于经济增长\n" * 5000) + "最后一行"
    chunks = list(slices(text, size=1000))
    assert "".join(chunks) == text
    assert all(len(c) <= 1000 for c in chunks)
    t = Tokenizer()
    whole = Tokenizer(engine="jieba").count(text)
    assert t.count(text) == whole
    assert whole["经济增长"] + whole["经济"] >= 5000


def test_empty_text() -> None:
    assert Tokenizer().count("") == {}


@pytest.mark.parametrize("text", [
    "苹果公司发布了iPhone 15和macOS系统，售价999美元，2018.10.30上市",
    "北京时间今晚，国足在世预赛中以2比0战胜对手，武磊梅开二度。",
    "",
])
def test_both_segmenters_give_the_same_terms(text: str) -> None:
    from fingerprint_indexer.text.clean import normalize

    t = normalize(text)
    assert Tokenizer(engine="jieba").count(t) == Tokenizer(engine="auto").count(t)


def test_unknown_engine_rejected() -> None:
    with pytest.raises(ValueError, match="unknown segmenter"):
        Tokenizer(engine="spacy")
