"""The client's serializers (es/servers.py): request bodies as the official client writes them."""

from __future__ import annotations

import pytest
from elastic_transport import NdjsonSerializer, SerializationError
from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.es.servers import OrjsonNdjsonSerializer

JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                max_size=3),
                    max_leaves=8)  # fmt: skip
LINE = st.one_of(st.dictionaries(st.text(max_size=4), JSON, max_size=4), st.text(max_size=12).map(str.strip),
                 st.binary(max_size=12).filter(lambda b: b"\n" not in b[:-1]))  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(LINE, max_size=6) | LINE.filter(lambda x: isinstance(x, (bytes, str))))
def test_ndjson_body_is_the_clients_own(lines):
    """Joined once, the body is the one the client's own NDJSON serializer writes: every line ends in one
    newline, JSON text passes as it is, a single str or bytes body too."""
    ours, theirs = OrjsonNdjsonSerializer(), NdjsonSerializer()
    theirs.json_dumps = ours.json_dumps  # the same JSON writer: only the joining is compared
    assert ours.dumps(lines) == theirs.dumps(lines)


def test_ndjson_line_that_cannot_be_written_is_named() -> None:
    with pytest.raises(SerializationError, match="Unable to serialize to NDJSON"):
        OrjsonNdjsonSerializer().dumps([{"a": 1}, {"b": object()}])
