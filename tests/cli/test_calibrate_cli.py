"""``fingerprint-indexer calibrate`` on a tiny labelled set built in the test."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from fingerprint_indexer.cli.main import cli

BASE = "".join(
    f"第{i}位球员在比赛中得到{i * 3}分并且抢下{i + 2}个篮板球,主教练对他的表现非常满意。" for i in range(30)
)
OTHER = "".join(f"第{i}所学校今年招收{i * 9}名新生,校长表示将继续扩大国际交流项目的规模。" for i in range(30))


def _write(tmp: Path) -> tuple[Path, Path]:
    docs = [
        {"id": "a", "title": "t", "content": BASE},
        {"id": "b", "title": "t", "content": "凤凰网 > 体育 > 正文\n" + BASE + "\n责任编辑:李明"},
        {"id": "c", "title": "t", "content": OTHER},
    ]
    pairs = [{"a": "a", "b": "b", "label": 1}, {"a": "a", "b": "c", "label": 0}]
    d, p = tmp / "docs.jsonl", tmp / "pairs.jsonl"
    d.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in docs), encoding="utf-8")
    p.write_text("".join(json.dumps(x) + "\n" for x in pairs), encoding="utf-8")
    return p, d


def test_calibrate_tables_and_json(tmp_path: Path) -> None:
    pairs, docs = _write(tmp_path)
    res = CliRunner().invoke(cli, ["calibrate", str(pairs), str(docs), "--max-k", "8"])
    assert res.exit_code == 0, res.output
    assert "What a Hamming distance means" in res.output
    res = CliRunner().invoke(cli, ["calibrate", str(pairs), str(docs), "--json"])
    out = json.loads(res.output)
    assert out["pairs"] == 2 and out["duplicates"] == 1
    assert out["robust_recommendation"]["recall"] == 1.0
    assert out["robust_recommendation"]["precision"] == 1.0


def test_calibrate_reports_missing_ids_and_bad_lines(tmp_path: Path) -> None:
    pairs, docs = _write(tmp_path)
    pairs.write_text('{"a": "a", "b": "zz", "label": 1}\n', encoding="utf-8")
    res = CliRunner().invoke(cli, ["calibrate", str(pairs), str(docs)])
    assert res.exit_code != 0 and "not in" in res.output
    pairs.write_text('{"a": "a"}\n', encoding="utf-8")
    res = CliRunner().invoke(cli, ["calibrate", str(pairs), str(docs)])
    assert res.exit_code != 0 and "pairs.jsonl:1" in res.output
