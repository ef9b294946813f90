import gzip
import io
from pathlib import Path

import pytest

from fingerprint_indexer.io.readers import InputError, read_documents, read_jsonl


def test_jsonl_with_html_and_int_ids(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_text('{"id": 1, "title": "t", "content": "c"}\n\n{"id": "x", "html": "<p>h</p>"}\n',
                 encoding="utf-8")
    docs = list(read_documents([str(p)]))
    assert [d.id for d in docs] == ["1", "x"]
    assert docs[1].html == "<p>h</p>"


def test_gzip_jsonl(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl.gz"
    with gzip.open(p, "wt", encoding="utf-8") as f:
        f.write('{"id": "1", "content": "新闻"}\n')
    assert [d.content for d in read_documents([str(p)])] == ["新闻"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "malformed JSON"),
        ('{"title": "no id", "content": "x"}', "'id'"),
        ('{"id": "1", "content": 5}', "'content' must be a string"),
        ('{"id": "1"}', "none of 'content'"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text('{"id": "ok", "content": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"bad.jsonl:2: .*{message}"):
        list(read_documents([str(p)]))


def test_skip_errors_reports_and_continues(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text('{"id": "1", "content": "a"}\n{oops\n{"id": "3", "content": "c"}\n', encoding="utf-8")
    seen: list[InputError] = []
    docs = list(read_documents([str(p)], skip_errors=True, on_error=seen.append))
    assert [d.id for d in docs] == ["1", "3"]
    assert [e.line for e in seen] == [2]


def test_undecodable_bytes_named(tmp_path: Path) -> None:
    p = tmp_path / "latin.jsonl"
    p.write_bytes(b'{"id": "1", "content": "ok"}\n{"id": "2", "content": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"latin.jsonl:2: not valid UTF-8"):
        list(read_documents([str(p)]))
    t = tmp_path / "bad.txt"
    t.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InputError, match=r"bad.txt: not valid UTF-8"):
        list(read_documents([str(t)]))


def test_folder_of_text_and_html(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "b.txt").write_text("文本", encoding="utf-8")
    (tmp_path / "sub" / "a.html").write_text("<p>网页</p>", encoding="utf-8")
    (tmp_path / "ignored.bin").write_bytes(b"\x00")
    docs = list(read_documents([str(tmp_path)]))
    assert sorted(d.id for d in docs) == ["a.html", "b.txt"]
    assert next(d for d in docs if d.id == "a.html").html == "<p>网页</p>"


def test_missing_path() -> None:
    with pytest.raises(InputError, match="no such file"):
        list(read_documents(["/nonexistent/file.jsonl"]))


def test_stdin_stream() -> None:
    docs = list(read_jsonl(io.BytesIO(b'{"id": "1", "content": "x"}\n'), "<stdin>"))
    assert docs[0].id == "1"
