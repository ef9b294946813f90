"""The adjusted Rand index used for the dedupe clusters in docs/quality.md, on known values."""

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "eval_quality.py"
spec = importlib.util.spec_from_file_location("eval_quality", SCRIPT)
assert spec is not None and spec.loader is not None
eval_quality = importlib.util.module_from_spec(spec)
sys.modules["eval_quality"] = eval_quality  # its dataclasses look their module up while being defined
spec.loader.exec_module(eval_quality)


@pytest.mark.parametrize(
    ("truth", "pred", "expected"),
    [
        ([0, 0, 1, 1], [5, 5, 7, 7], 1.0),  # same partition, other labels
        ([0, 0, 1, 1], [0, 1, 0, 1], -0.5),
        ([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2], 0.242424),  # as sklearn.metrics.adjusted_rand_score
    ],
)
def test_adjusted_rand_index(truth: list[int], pred: list[int], expected: float) -> None:
    assert eval_quality.adjusted_rand_index(truth, pred) == pytest.approx(expected, abs=1e-6)
