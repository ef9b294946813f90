"""The sidecar's request models read a document as the CLI's readers do."""

from __future__ import annotations

from fingerprint_indexer.documents import Document
from fingerprint_indexer.sidecar.models import DocumentIn


def test_date_stands_for_published_at_as_in_files() -> None:
    body = {"id": "r1", "content": "Hog prices opened 0.50 dlr higher.", "date": "7-APR-1987 09:30:20.22"}
    assert DocumentIn.model_validate(body).to_document() == Document.from_mapping(body)
    assert DocumentIn.model_validate(body).to_document().published_at == "7-APR-1987 09:30:20.22"
    both = {**body, "published_at": "1987-04-08"}
    assert DocumentIn.model_validate(both).to_document().published_at == "1987-04-08"
    # a ``date`` that is not text is someone else's field: kept in the source, not read as a day
    other = {**body, "date": {"year": 1987}}
    assert DocumentIn.model_validate(other).to_document().published_at is None
    assert DocumentIn.model_validate(other).source()["date"] == {"year": 1987}
