"""Verification: whether a candidate is the same story, under one named policy.

- :mod:`.policy`: :class:`VerifyPolicy`, every threshold in one frozen object, and its tag;
- :mod:`.compare`: how two documents' facts, frames, days and headlines compare;
- :mod:`.rule`: the rule itself (:func:`check`, :func:`check_many`, :func:`joins`), one for every path.
"""

from fingerprint_indexer.fingerprint.evidence import Evidence
from fingerprint_indexer.verification.policy import DEFAULT_POLICY, STEPS, VerifyPolicy
from fingerprint_indexer.verification.rule import (
    Verdict,
    check,
    check_many,
    closest,
    closest_many,
    document_distance,
    explain,
    facts_conflict,
    joins,
    same_facts,
)

__all__ = ["DEFAULT_POLICY", "STEPS", "Evidence", "Verdict", "VerifyPolicy", "check", "check_many",
           "closest", "closest_many", "document_distance", "explain", "facts_conflict", "joins",
           "same_facts"]  # fmt: skip
