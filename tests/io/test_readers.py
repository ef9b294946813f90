import gzip
import io
from pathlib import Path

import pytest
from support.corpus import EN_BBC, iter_records

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
    assert sorted(d.id for d in docs) == ["b.txt", "sub/a.html"]
    assert next(d for d in docs if d.id == "sub/a.html").html == "<p>网页</p>"


def test_folder_ids_are_paths_relative_to_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Same file names in different subfolders stay different documents; other files are named."""
    for sub in ("business", "sport"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "001.txt").write_text(f"{sub} story", encoding="utf-8")
    (tmp_path / "notes.md").write_text("not read", encoding="utf-8")
    docs = list(read_documents([str(tmp_path)]))
    assert [(d.id, d.content) for d in docs] == [("business/001.txt", "business story"),
                                                 ("sport/001.txt", "sport story")]
    note = "1 files are not JSONL, text or HTML and were not read (first: notes.md)"
    assert note in capsys.readouterr().err
    assert [d.id for d in read_documents([str(tmp_path / "sport" / "001.txt")])] == ["001.txt"]
    both = [str(tmp_path / "business" / "001.txt"), str(tmp_path / "sport" / "001.txt")]
    with pytest.raises(InputError, match=r"sport/001.txt: id '001.txt' is already the id of .*business/001"):
        list(read_documents(both))
    seen: list[InputError] = []
    assert [d.id for d in read_documents(both + both[:1], skip_errors=True, on_error=seen.append)] == [
        "001.txt", "001.txt"]  # the same file again is the same document again; the other is reported
    assert len(seen) == 1


@pytest.mark.corpus
def test_bbc_tree_keeps_every_document(tmp_path: Path) -> None:
    """The BBC corpus as its original folder tree (business/001.txt, sport/001.txt, ...): all 2,225 read."""
    records = list(iter_records(EN_BBC))
    for rec in records:
        path = tmp_path / rec["id"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rec["content"], encoding="utf-8")
    docs = list(read_documents([str(tmp_path)]))
    assert len(records) == 2225
    assert sorted(d.id for d in docs) == sorted(r["id"] for r in records)


def test_lone_surrogate_escape_is_named_and_skippable(tmp_path: Path) -> None:
    p = tmp_path / "sur.jsonl"
    p.write_text('{"id": "1", "content": "ok"}\n{"id": "2", "content": "bad \\udc80 text"}\n'
                 '{"id": "3", "content": "fine"}\n{"id": "\\ud800", "content": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"sur.jsonl:2: field 'content' holds a lone surrogate escape "
                                         r"\(\\udc80 at character 4\)"):
        list(read_documents([str(p)]))
    seen: list[InputError] = []
    docs = list(read_documents([str(p)], skip_errors=True, on_error=seen.append))
    assert [d.id for d in docs] == ["1", "3"]
    assert [(e.line, "'id'" in e.message) for e in seen] == [(2, False), (4, True)]


def test_missing_path() -> None:
    with pytest.raises(InputError, match="no such file"):
        list(read_documents(["/nonexistent/file.jsonl"]))


def test_stdin_stream() -> None:
    docs = list(read_jsonl(io.BytesIO(b'{"id": "1", "content": "x"}\n'), "<stdin>"))
    assert docs[0].id == "1"


def test_date_stands_for_published_at_when_it_is_absent() -> None:
    from fingerprint_indexer.documents import Document, DocumentError

    assert Document.from_mapping({"id": 1, "content": "x", "date": "1-APR-1987"}).published_at == "1-APR-1987"
    both = {"id": 1, "content": "x", "date": "1-APR-1987", "published_at": "1987-04-02"}
    assert Document.from_mapping(both).published_at == "1987-04-02"
    # ``date`` is not a field of ours: a value that is not text belongs to someone else and is passed over
    for other in (19870401, {"y": 1987}, ["1987"], True):
        assert Document.from_mapping({"id": 1, "content": "x", "date": other}).published_at is None
    with pytest.raises(DocumentError, match="published_at"):
        Document.from_mapping({"id": 1, "content": "x", "published_at": 19870401})
