"""SVMClassifier's probabilities (Platt scaling and libsvm's pairwise coupling), compiled
(``ops/_cml.c``, with the one-vs-one decision values and votes) and in NumPy: scikit-learn's
SVC(probability=True) converted by skl2onnx, 2, 3 and 5 classes, integer and string labels,
0, 1 and many rows, against onnxruntime (labels exactly, probabilities within 1e-5),
scikit-learn (labels, probabilities within 1e-3: it computes in float64) and each other."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from mini_infer_ml_plugins.ops import svm
from ml_support import assert_same, ort_session

import mini_infer_core as mi

pytest.importorskip("sklearn", reason="scikit-learn is a test extra: pip install scikit-learn")
pytest.importorskip("skl2onnx", reason="skl2onnx is a test extra: pip install skl2onnx")


def _svc(classes: int, strings: bool, kernel: str = "rbf") -> tuple[Any, Any, Any]:
    from skl2onnx import to_onnx
    from sklearn.datasets import make_classification
    from sklearn.svm import SVC

    x, y = make_classification(260, 6, n_informative=4, n_redundant=0, n_classes=classes,
                               random_state=classes)
    x = x.astype(np.float32)
    labels = np.array(["ant", "bee", "cow", "dog", "eel"])[y] if strings else y * 3 - 2
    est = SVC(kernel=kernel, probability=True, random_state=0).fit(x[:200], labels[:200])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_onnx(est, x[:1], options={id(est): {"zipmap": False}},
                        target_opset={"": 17, "ai.onnx.ml": 3})
    return est, model, np.ascontiguousarray(x[200:])


@pytest.mark.parametrize("classes", [2, 3, 5])
@pytest.mark.parametrize("strings", [False, True], ids=["int-labels", "string-labels"])
@pytest.mark.parametrize("rows", [1, 60])
def test_svc_probabilities_match_onnxruntime_and_scikit_learn(classes: int, strings: bool,
                                                              rows: int) -> None:
    est, model, x = _svc(classes, strings)
    feeds = {"X": x[:rows]}
    labels, probs = mi.InferenceSession(model).run(None, feeds)
    assert_same([labels, probs], ort_session(model).run(None, feeds), rtol=0, atol=1e-5)
    assert labels.tolist() == est.predict(x[:rows]).tolist()
    np.testing.assert_allclose(probs, est.predict_proba(x[:rows]), atol=1e-3)


@pytest.mark.parametrize("kernel", ["rbf", "poly", "sigmoid", "linear"])
def test_the_compiled_and_numpy_probabilities_agree(kernel: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    if svm._cml is None:
        pytest.skip("the compiled part of mini-infer-ml-plugins was not built (no C compiler)")
    _, model, x = _svc(4, False, kernel)
    compiled = mi.InferenceSession(model).run(None, {"X": x})
    monkeypatch.setattr(svm, "_cml", None)
    numpy_form = mi.InferenceSession(model).run(None, {"X": x})
    assert compiled[0].tolist() == numpy_form[0].tolist()
    np.testing.assert_allclose(compiled[1], numpy_form[1], rtol=0, atol=2e-6)


def test_no_rows_give_no_probabilities() -> None:
    _, model, x = _svc(3, True)
    labels, probs = mi.InferenceSession(model).run(None, {"X": x[:0]})
    assert labels.shape == (0,) and probs.shape == (0, 3) and probs.dtype == np.float32
    want = ort_session(model).run(None, {"X": x[:0]})
    assert want[1].shape == (0, 3)


def test_compiled_rbf_kernel_matches_the_numpy_product(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_cml.rbf`` (the few-row RBF kernel, |x - v|^2 summed directly) against the NumPy
    expansion |x|^2 + |v|^2 - 2 x.v at 0, 1 and 7 rows, a row equal to a support vector
    among them (kernel 1)."""
    if svm._cml is None:
        pytest.skip("the compiled part of mini-infer-ml-plugins was not built (no C compiler)")
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((30, 6)).astype(np.float32)
    node = svm.SVMRegressor("s", kernel_type="RBF", kernel_params=[0.3, 0.0, 3.0],
                            support_vectors=vectors.reshape(-1).tolist(), n_supports=30,
                            coefficients=[1.0] * 30, rho=[0.0])
    for rows in (0, 1, 7):
        x = rng.standard_normal((rows, 6)).astype(np.float32)
        if rows:
            x[-1] = vectors[3]
        got = node.kernel_dot(x, node.support.reshape(30, -1), "RBF")
        with monkeypatch.context() as m:
            m.setattr(svm, "_cml", None)
            want = node.kernel_dot(x, node.support.reshape(30, -1), "RBF")
        assert got.shape == want.shape == (rows, 30) and got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
        if rows:
            assert got[-1, 3] == 1.0


@pytest.mark.parametrize("classes", [2, 3, 5])
@pytest.mark.parametrize("strings", [False, True], ids=["int labels", "string labels"])
def test_bound_rbf_classifier_step(classes: int, strings: bool,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound few-row step (``svm._classify``: RBF values, pairwise decisions,
    probabilities, votes and labels made once) against onnxruntime and scikit-learn at 1, 3
    and 1 rows of one session; string labels take ``compute`` (counted)."""
    est, model, x = _svc(classes, strings)
    runs = {"bound": 0}
    real = svm._classify

    def counted(*args: Any) -> None:
        runs["bound"] += 1
        real(*args)

    monkeypatch.setattr(svm, "_classify", counted)
    ours, theirs = mi.InferenceSession(model), ort_session(model)
    for n in (1, 3, 1):
        got = ours.run(None, {"X": x[:n]})
        assert_same(got, theirs.run(None, {"X": x[:n]}), rtol=1e-5, atol=1e-5)
        assert got[0].tolist() == est.predict(x[:n]).tolist()
        np.testing.assert_allclose(got[1], est.predict_proba(x[:n]), atol=1e-3)
    assert (runs["bound"] > 0) == (not strings)


def test_bound_rbf_regressor_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """SVR (RBF) bound over one and three rows (``svm._regress``, counted) against
    onnxruntime and scikit-learn."""
    from skl2onnx import to_onnx
    from sklearn.datasets import make_regression
    from sklearn.svm import SVR

    x, y = make_regression(230, 5, noise=2.0, random_state=0)
    x = x.astype(np.float32)
    est = SVR(C=10.0).fit(x[:200], y[:200] / 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_onnx(est, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})
    runs = {"bound": 0}
    real = svm._regress

    def counted(*args: Any) -> None:
        runs["bound"] += 1
        real(*args)

    monkeypatch.setattr(svm, "_regress", counted)
    ours, theirs = mi.InferenceSession(model), ort_session(model)
    held = np.ascontiguousarray(x[200:])
    for n in (1, 3, 1):
        got = ours.run(None, {"X": held[:n]})
        assert_same(got, theirs.run(None, {"X": held[:n]}), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[0].reshape(-1), est.predict(held[:n]), rtol=1e-4,
                                   atol=1e-4)
    assert runs["bound"] > 0
