from pathlib import Path

import pytest

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
