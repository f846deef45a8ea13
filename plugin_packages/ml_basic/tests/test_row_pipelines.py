"""The pipelines ``benchmarks/sklearn_pipelines.py`` times (row_pipelines.py), each at 1 and
200 rows: against onnxruntime (labels and integer outputs exactly, scores within 1e-5, or
1e-5 of the value where it is above 1) and scikit-learn (labels exactly, scores within 1e-3:
it computes in float64), and at 0 rows where onnxruntime takes them."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from ml_support import ort_session

import mini_infer_core as mi

pytest.importorskip("sklearn", reason="scikit-learn is a test extra: pip install scikit-learn")
pytest.importorskip("skl2onnx", reason="skl2onnx is a test extra: pip install skl2onnx")

from row_pipelines import pipeline, pipeline_names  # noqa: E402


def _scores(value: Any) -> Any:
    """Scores as an array: ZipMap's dicts as rows of their values (in key order)."""
    if isinstance(value, list):
        return np.array([list(row.values()) for row in value] or np.zeros((0, 0)), np.float64)
    return np.asarray(value, np.float64)


#: where onnxruntime's float32 sums stray further than 1e-5 from scikit-learn's float64 result
#: (mini-infer's SVR sums in float64: it stays within 5e-6 of scikit-learn, checked below)
_ORT_TOLERANCE = {"svr": 2e-5}


def _same(ours: list[Any], theirs: list[Any], tolerance: float = 1e-5) -> None:
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        if isinstance(b, list):
            assert isinstance(a, list) and [list(r) for r in a] == [list(r) for r in b]
        elif np.asarray(b).dtype.kind in "OUSbiu":
            assert np.asarray(a).tolist() == np.asarray(b).tolist()
            continue
        a, b = _scores(a), _scores(b)
        assert a.shape == b.shape
        np.testing.assert_array_less(np.abs(a - b) / np.maximum(1, np.abs(b)), tolerance)


def test_there_are_at_least_twenty_pipelines() -> None:
    assert len(pipeline_names()) >= 20


@pytest.mark.parametrize("name", pipeline_names())
def test_pipeline_matches_onnxruntime_and_scikit_learn(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        case = pipeline(name)
    ours, theirs = mi.InferenceSession(case.model), ort_session(case.model)
    est = case.estimator
    for n in (1, 200, 1):
        feeds = case.feeds(n)
        got = ours.run(None, feeds)
        _same(got, theirs.run(None, feeds), _ORT_TOLERANCE.get(name, 1e-5))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = case.sklearn_input(n)
            if hasattr(est, "predict_proba"):
                assert np.asarray(got[0]).reshape(-1).tolist() == est.predict(x).tolist()
                np.testing.assert_allclose(_scores(got[1]), est.predict_proba(x), atol=1e-3)
            elif hasattr(est, "predict") and not hasattr(est, "cluster_centers_"):
                want = np.asarray(est.predict(x))
                if want.dtype.kind == "f":
                    np.testing.assert_allclose(np.asarray(got[0]).reshape(want.shape), want,
                                               rtol=1e-4, atol=1e-3)
                    if name in _ORT_TOLERANCE:
                        np.testing.assert_array_less(
                            np.abs(np.asarray(got[0]).reshape(want.shape) - want)
                            / np.maximum(1, np.abs(want)), 5e-6)
                else:
                    assert np.asarray(got[0]).reshape(-1).tolist() == want.tolist()
    try:
        empty = theirs.run(None, case.feeds(0))
    except Exception:  # noqa: BLE001 - onnxruntime refuses no rows for some (Scan)
        return
    _same(ours.run(None, case.feeds(0)), empty)
