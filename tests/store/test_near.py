"""The look-ups every store shares (fingerprint_indexer.store.near)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from fingerprint_indexer.store.near import LookAhead


@settings(max_examples=100, deadline=None)
@given(held=st.dictionaries(st.integers(0, 30), st.lists(st.integers(), min_size=1, max_size=3), max_size=12),
       ahead=st.lists(st.integers(0, 40), max_size=40), asked=st.lists(st.integers(0, 40), max_size=10))
def test_look_ahead_answers_as_the_look_up_would(held, ahead, asked):
    """Keys asked ahead and later ones alike get the look-up's answer (an empty one for a key it does not
    hold); each key is looked up once; ``none_found`` is true only of keys asked that found nothing."""
    calls: list[list[int]] = []

    def lookup(keys: Sequence[int]) -> dict[int, list[int]]:
        calls.append(list(keys))
        return {q: held[key] for q, key in enumerate(keys) if key in held}

    look: LookAhead[int, list[int]] = LookAhead(lookup, [])
    look.ahead(ahead)
    assert look.none_found(ahead) is not any(key in held for key in ahead)
    assert look(asked) == [held.get(key, []) for key in asked]
    looked_up = [key for keys in calls for key in keys]
    assert sorted(looked_up) == sorted(set(ahead) | set(asked))  # each once
    assert look.none_found([*ahead, 41]) is False  # a key never asked counts as found
