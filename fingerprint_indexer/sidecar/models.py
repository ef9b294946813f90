"""Request and response bodies of the ``/v1`` API (they also make the OpenAPI document)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from fingerprint_indexer.documents import Document, date_alias
from fingerprint_indexer.sidecar.worker import INDEX_NAME

MAX_ID_BYTES = 512  # Elasticsearch's limit on _id


def _unicode(value: str) -> str:
    """Reject lone surrogates (JSON can spell them as escapes; they are not text and cannot be stored)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text is not valid Unicode (it contains a lone surrogate)") from None
    return value


def _id(value: str | int) -> str | int:
    if isinstance(value, str):
        _unicode(value)
        if not value or len(value.encode()) > MAX_ID_BYTES:
            raise ValueError(f"id must be 1 to {MAX_ID_BYTES} bytes")
    return value


def check_unicode_tree(value: Any, where: str = "") -> None:
    """Every string (and key) inside a JSON value must be valid Unicode."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{where or 'value'} is not valid Unicode (lone surrogate)") from None
    elif isinstance(value, dict):
        for k, v in value.items():
            check_unicode_tree(k, where)
            check_unicode_tree(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for v in value:
            check_unicode_tree(v, where)


Text = Annotated[str, AfterValidator(_unicode)]
DocId = Annotated[StrictInt | str, AfterValidator(_id)]
IndexName = Annotated[str, Field(pattern=INDEX_NAME.pattern, max_length=255)]


class DocumentIn(BaseModel):
    """A news document. Fields other than these are kept and written to Elasticsearch as given."""

    model_config = ConfigDict(extra="allow", json_schema_extra={
        "example": {"id": "n1", "title": "Headline", "content": "Body text of the article ..."}})

    id: DocId
    title: Text | None = None
    content: Text | None = None
    html: Text | None = None
    url: Text | None = None
    published_at: Text | None = None
    images: list[str] | None = Field(
        None, max_length=64,
        description="Pictures of the story as base64 bytes (JPEG, PNG, WebP, GIF): their fingerprints are "
                    "added to the fields (image_keys, images) and written with the document in place of "
                    "the bytes. Evidence beside the text: no decision reads them.")

    @model_validator(mode="after")
    def _has_text(self) -> DocumentIn:
        if self.content is None and self.html is None and self.title is None:
            raise ValueError("a document needs at least one of 'content', 'html' or 'title'")
        check_unicode_tree(self.model_extra or {})
        return self

    def to_document(self) -> Document:
        published_at = self.published_at
        if published_at is None:
            published_at = date_alias(self.model_extra or {})
        return Document(id=str(self.id), title=self.title or "", content=self.content, html=self.html,
                        url=self.url, published_at=published_at)

    def source(self) -> dict[str, Any]:
        """The Elasticsearch source: every given field except the id (which becomes ``_id``) and the
        pictures' bytes (their fingerprints are among the added fields)."""
        return {k: v for k, v in self.model_dump(exclude_none=True).items() if k not in ("id", "images")}


class IngestRequest(BaseModel):
    """One document (``document``) or a batch (``documents``)."""

    model_config = ConfigDict(extra="forbid")

    document: DocumentIn | None = None
    documents: list[DocumentIn] | None = Field(None, min_length=1, max_length=100_000)
    index: StrictBool = Field(False, description="Also write the documents into Elasticsearch.")
    index_name: IndexName | None = Field(None, description="Elasticsearch index (default: the service's).")
    on_duplicate: Literal["tag", "skip"] | None = Field(
        None, description="tag: index duplicates with duplicate_of; skip: do not index them.")

    @model_validator(mode="after")
    def _one_of(self) -> IngestRequest:
        if (self.document is None) == (self.documents is None):
            raise ValueError("give exactly one of 'document' or 'documents'")
        return self

    def docs(self) -> list[DocumentIn]:
        return [self.document] if self.document is not None else list(self.documents or [])


class IndexOutcome(BaseModel):
    status: int
    result: str | None = None
    error: dict[str, Any] | None = None


class IngestResult(BaseModel):
    id: str
    fingerprint: str
    decision: Literal["new", "exact_duplicate", "near_duplicate"]
    duplicate_of: str | None
    distance: int | None
    cluster_id: str
    replaces: str | None = Field(None, description="The group's previous canonical, when this document "
                                 "replaced it (keep=longest|newest); that document now points at this one.")
    degenerate: bool
    policy: str = Field(description="The tag of the verification policy that made the decision.")
    fields: dict[str, Any] = Field(description="Fields to add to the document in Elasticsearch.")
    index: IndexOutcome | None = Field(None, description="Outcome of the Elasticsearch write (index: true).")


class IngestResponse(BaseModel):
    took_ms: int
    errors: bool = Field(description="True when any Elasticsearch write failed (see each result).")
    results: list[IngestResult]


class TextIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: Text | None = None
    html: Text | None = None

    @model_validator(mode="after")
    def _one(self) -> TextIn:
        if self.text is None and self.html is None:
            raise ValueError("give 'text' or 'html'")
        return self


class FingerprintRequest(TextIn):
    with_terms: StrictBool = True


class FingerprintResponse(BaseModel):
    fingerprint: str
    blocks: list[str]
    content_digest: str
    keyword_digest: str
    degenerate: bool
    n_tokens: int
    version: str
    top_terms: list[tuple[str, float]] | None = None
    fields: dict[str, Any]


class SimilarRequest(BaseModel):
    """Raw text or HTML (near-duplicate documents), or a picture (documents with the same photo)."""

    model_config = ConfigDict(extra="forbid")

    text: Text | None = None
    html: Text | None = None
    image: str | None = Field(None, description="A picture as base64 bytes (JPEG, PNG, WebP, GIF): the "
                              "documents with a picture of the same photo are listed in 'images'.")
    index_name: IndexName | None = None
    k: int | None = Field(None, ge=0, le=63)

    @model_validator(mode="after")
    def _one(self) -> SimilarRequest:
        if (self.text is None and self.html is None) == (self.image is None):
            raise ValueError("give 'text' or 'html', or else 'image'")
        return self


class PictureMatch(BaseModel):
    """A document's picture of the same photo: document id, picture name, window distance, whether the
    pixels are the same, and a small JPEG of it (base64) when one was kept."""

    id: str
    image: str
    distance: int
    exact: bool
    thumbnail: str | None = None


class Neighbour(BaseModel):
    id: str
    distance: int
    cluster_id: str | None
    duplicate_of: str | None


class Rejected(BaseModel):
    """A look-alike candidate the verification rule turned down, and why (e.g. ``facts differ: 569 vs
    465``)."""

    id: str
    distance: int
    cluster_id: str | None
    duplicate_of: str | None
    rejected_at: str = Field(description="The step of the verification rule that rejected it: text, title, "
                             "ordinals, facts or frames.")
    rejected_because: str


class SimilarResponse(BaseModel):
    index: str
    id: str | None = None
    fingerprint: str
    k: int
    matches: list[Neighbour]
    rejected: list[Rejected] = Field(default_factory=list)
    images: list[PictureMatch] = Field(default_factory=list)


class RelatedEntry(BaseModel):
    id: str
    title: str | None = None
    score: float
    cluster_id: str | None = None
    similar_reports: int = Field(description="Other reports of the same story in the index (its cluster); "
                                             "those among the neighbours found are listed in members.")
    members: list[str] = Field(description="This story's reports among the neighbours found, best first.")


class RelatedResponse(BaseModel):
    index: str
    id: str
    related: list[RelatedEntry]
    duplicates: list[Neighbour]


class Probe(BaseModel):
    status: str
    checks: dict[str, Any] = {}
