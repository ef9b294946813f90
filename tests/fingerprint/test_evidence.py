"""Evidence's band keys and a fingerprint's evidence are made once, on first read, and kept as attributes."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

from fingerprint_indexer.fingerprint.evidence import Evidence, cached_attribute
from fingerprint_indexer.fingerprint.fingerprinter import Fingerprinter
from fingerprint_indexer.fingerprint.sketch import band_keys


@dataclass(frozen=True)
class _Counted:
    n: int

    @cached_attribute
    def double(self) -> list[int]:
        _Counted.calls += 1  # type: ignore[attr-defined]
        return [2 * self.n]


def test_a_cached_attribute_is_made_once_per_instance_and_kept_out_of_equality():
    _Counted.calls = 0  # type: ignore[attr-defined]
    a, b = _Counted(3), _Counted(3)
    assert a.double is a.double and a.double == [6]
    assert _Counted.calls == 1  # type: ignore[attr-defined]
    assert a == b and hash(a) == hash(b)  # b has none made yet
    assert b.double == [6] and _Counted.calls == 2  # type: ignore[attr-defined]
    assert isinstance(_Counted.double, cached_attribute)


def test_evidence_band_keys_and_a_results_evidence_are_kept_through_pickling():
    text = "今天上午，市政府召开新闻发布会，介绍了全市交通建设的最新进展和明年的工作计划。" * 4
    res = Fingerprinter().fingerprint(text=text, doc_id="d1")
    ev = res.evidence
    assert ev is res.evidence and ev == Evidence(res.fingerprints, res.sketch, res.facts, res.frames)
    assert ev.band_keys is ev.band_keys and ev.band_keys == band_keys(res.sketch) and ev.band_keys
    again = pickle.loads(pickle.dumps(res))
    assert again == res and again.evidence == ev and again.evidence.band_keys == ev.band_keys
