from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fingerprint_indexer.text.weights import IdfFileError, IdfTable, fit_idf, jieba_idf, top_terms


def test_jieba_table_loads_with_median_default() -> None:
    t = jieba_idf()
    assert t.name == "jieba"
    assert len(t.idf) > 200_000
    assert t.weight("一二三四五六七八九十不存在的词") == t.default
    assert t.weight("经济") < t.default  # a common word weighs less than an unknown one


def test_fit_save_load_roundtrip(tmp_path: Path) -> None:
    table, n = fit_idf([["a", "b"], ["a", "c"], ["a"]])
    assert n == 3
    assert table.weight("a") < table.weight("b") == table.weight("c")
    path = tmp_path / "idf.txt"
    table.save(path, n)
    loaded = IdfTable.load(path)
    assert loaded.name.startswith("file-")
    assert loaded.weight("b") == pytest.approx(table.weight("b"), abs=1e-6)
    assert IdfTable.load(path).name == loaded.name  # stable identity for the version string


def test_min_df_drops_rare_terms() -> None:
    table, _ = fit_idf([["a", "b"], ["a"]], min_df=2)
    assert set(table.idf) == {"a"}


def test_bad_idf_file(tmp_path: Path) -> None:
    p = tmp_path / "bad.txt"
    p.write_text("word notanumber\n", encoding="utf-8")
    with pytest.raises(IdfFileError, match=r"bad\.txt:1"):
        IdfTable.load(p)
    p.write_text("# only a comment\n", encoding="utf-8")
    with pytest.raises(IdfFileError, match=r"no IDF entries"):
        IdfTable.load(p)


def test_top_terms_deterministic_tie_break() -> None:
    idf = IdfTable.from_mapping({"x": 1.0, "y": 1.0, "z": 2.0}, "t")
    assert top_terms({"y": 1, "x": 1, "z": 1}, idf, 2) == [("z", 2 / 3), ("x", 1 / 3)]
    assert top_terms({}, idf, 5) == []


@given(st.dictionaries(st.text("abcdefghij", min_size=1, max_size=3), st.integers(1, 50), min_size=1,
                       max_size=40), st.sampled_from([0.1, 0.2, 0.3, 0.5]))
def test_capped_weights_keep_order_and_none_outweighs_its_share(counts: dict[str, int], share: float) -> None:
    table = IdfTable.from_mapping({t: 1.0 + (i % 3) for i, t in enumerate(sorted(counts))}, "t")
    plain = top_terms(counts, table, tf_power=3.0)
    capped = top_terms(counts, table, tf_power=3.0, max_share=share)
    assert [t for t, _ in capped] == [t for t, _ in plain]
    weights = [w for _, w in capped]
    assert weights == sorted(weights, reverse=True)
    total = sum(weights)
    if len(counts) * share >= 1.0:
        assert max(weights) <= share * total * (1 + 1e-9)
    else:  # too few terms for any cap: all weigh the same
        assert max(weights) == pytest.approx(min(weights))


def test_one_dominant_term_no_longer_decides_the_fingerprint() -> None:
    counts = {"writer": 40, **{f"w{i}": 2 for i in range(12)}}
    table = IdfTable.from_mapping(dict.fromkeys(counts, 5.0), "t")
    plain = dict(top_terms(counts, table, tf_power=3.0))
    capped = dict(top_terms(counts, table, tf_power=3.0, max_share=0.2))
    assert plain["writer"] / sum(plain.values()) > 0.99
    assert capped["writer"] / sum(capped.values()) == pytest.approx(0.2)
