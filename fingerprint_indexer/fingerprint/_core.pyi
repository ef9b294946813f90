"""Types of the compiled fingerprint pass (rust/src/lib.rs); fingerprint/native.py wraps it."""

class Core:
    def __init__(
        self, *, variants: list[str], stopwords: set[str], synonyms: dict[str, str], min_len: int,
        idf_path: str, dict_path: str, top_k: int, tf_power: float, max_share: float, chunk_every: int,
        max_chunks: int, lead_sentences: int, sketch_size: int, min_features: int, min_chunk_terms: int,
        min_chunk_sentences: int, max_sentence: int,
    ) -> None: ...
    def fold(
        self, body: str, *, facts: bool = False, cased: str = "", lower: str = "", max_facts: int = 64,
        max_frames: int = 64,
    ) -> tuple[
        int, list[int], list[tuple[str, float]], int, int, bytes, list[str],
        tuple[list[str], list[int]] | None,
    ] | None: ...
    def cut(self, text: str) -> list[str]: ...
    def sentence_spans(self, text: str) -> list[tuple[int, int]] | None: ...
    def idf_summary(self) -> tuple[int, float]: ...

def sketch_bytes(text: str, size: int) -> bytes: ...
def analyse(
    text: str, names: list[str], latin: list[str], max_facts: int, max_frames: int
) -> tuple[list[str], list[int]] | None: ...
def latin_body_names(cased: str, lower: str, body: str, stopwords: set[str]) -> set[str] | None: ...

UNICODE_VERSION: str
