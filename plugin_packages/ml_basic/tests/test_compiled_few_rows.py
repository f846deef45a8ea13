"""The compiled few-row paths of the linear models, Normalizer and Scaler (``ops/_cml.c``):
against onnxruntime at 0, 1 and several rows and on repeated runs of one session (labels
exactly, scores within 1e-5), against their NumPy form, and against scikit-learn's
LogisticRegression (multinomial and binary, string and integer labels)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from mini_infer_ml_plugins.ops import features, linear
from ml_support import assert_same, ml_model, ort_session
from sklearn_models import _bools_as_ints

import mini_infer_core as mi

RNG = np.random.default_rng(27)

CASES: list[tuple[str, dict[str, Any], int]] = [
    ("LinearClassifier", {"coefficients": RNG.standard_normal(12).tolist(),
                          "intercepts": [0.1, -0.2, 0.3], "classlabels_ints": [4, 7, 9],
                          "post_transform": post}, 2)
    for post in ("NONE", "LOGISTIC", "SOFTMAX")
] + [
    ("LinearClassifier", {"coefficients": [0.5, -1.0, 2.0, 0.25], "intercepts": [0.1],
                          "classlabels_strings": ["no", "yes"], "post_transform": post}, 2)
    for post in ("NONE", "LOGISTIC")
] + [
    ("LinearClassifier", {"coefficients": RNG.standard_normal(8).tolist(),
                          "intercepts": [0.0, 0.0], "classlabels_strings": ["a", "b"]}, 2),
    ("LinearRegressor", {"coefficients": RNG.standard_normal(4).tolist(),
                         "intercepts": [1.5]}, 1),
    ("LinearRegressor", {"coefficients": RNG.standard_normal(12).tolist(),
                         "intercepts": [1.0, -1.0, 0.5], "targets": 3}, 1),
    ("Normalizer", {"norm": "MAX"}, 1), ("Normalizer", {"norm": "L1"}, 1),
    ("Normalizer", {"norm": "L2"}, 1),
    ("Scaler", {"offset": [0.5, -1.0, 2.0, 0.0], "scale": [2.0, 0.25, -1.5, 1.0]}, 1),
    ("Scaler", {"offset": [1.0], "scale": [3.0]}, 1),
]


def _rows(n: int) -> Any:
    x = RNG.standard_normal((n, 4)).astype(np.float32)
    if n > 2:
        x[1] = 0  # a zero row: Normalizer copies it
        x[2, 1] = np.nan
    return x


@pytest.mark.parametrize("op, attrs, outputs", CASES,
                         ids=[f"{op}-{i}" for i, (op, _, _) in enumerate(CASES)])
def test_compiled_path_matches_onnxruntime(op: str, attrs: dict[str, Any], outputs: int
                                           ) -> None:
    model = ml_model(op, [_rows(3)], attrs, outputs=outputs)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    ours, theirs = mi.InferenceSession(model), ort_session(model)
    for n in (1, 6, 1, 0, 6):  # one session, shapes changing and recurring
        x = _rows(n)
        want = theirs.run(None, {"x0": x})
        assert_same(ours.run(None, {"x0": x}), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op, attrs, outputs", CASES,
                         ids=[f"{op}-{i}" for i, (op, _, _) in enumerate(CASES)])
def test_compiled_and_numpy_forms_agree(op: str, attrs: dict[str, Any], outputs: int,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if linear._cml is None:
        pytest.skip("the compiled part of mini-infer-ml-plugins was not built (no C compiler)")
    x = _rows(9)
    model = ml_model(op, [x], attrs, outputs=outputs)
    compiled = mi.InferenceSession(model).run(None, {"x0": x})
    monkeypatch.setattr(linear, "_cml", None)
    monkeypatch.setattr(features, "_cml", None)
    numpy_form = mi.InferenceSession(model).run(None, {"x0": x})
    assert_same(compiled, numpy_form, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("classes, strings", [(3, False), (2, True), (2, False), (4, True)])
def test_logistic_regression_against_scikit_learn(classes: int, strings: bool) -> None:
    pytest.importorskip("skl2onnx", reason="skl2onnx is a test extra: pip install skl2onnx")
    from skl2onnx import to_onnx
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    x, y = make_classification(300, 5, n_informative=4, n_redundant=0, n_classes=classes,
                               random_state=1)
    x = x.astype(np.float32)
    labels = np.array(["w", "x", "y", "z"])[y] if strings else y * 5 - 3
    est = LogisticRegression(max_iter=500).fit(x, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_onnx(est, x[:1], options={id(est): {"zipmap": False}},
                        target_opset={"": 17, "ai.onnx.ml": 3})
    sess = mi.InferenceSession(model)
    for n in (1, 50, 0):
        got_labels, got_probs = sess.run(None, {"X": x[:n]})
        if n == 0:  # scikit-learn refuses no rows
            assert got_labels.shape == (0,) and got_probs.shape == (0, classes)
            continue
        assert got_labels.tolist() == est.predict(x[:n]).tolist()
        np.testing.assert_allclose(got_probs, est.predict_proba(x[:n]).reshape(n, -1),
                                   atol=1e-5)


@pytest.mark.parametrize("kind", ["one tree", "forest", "boosting (base values, SOFTMAX)",
                                  "hist boosting (NaN)"])
@pytest.mark.parametrize("strings", [False, True], ids=["int labels", "string labels"])
def test_bound_tree_classifier_against_scikit_learn(kind: str, strings: bool,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """TreeEnsembleClassifier's bound few-row step (walk, base values, classify and label
    lookup made once, ``trees._classify_rows``) against scikit-learn and onnxruntime at 1, 3
    and 0 rows, with missing values; string labels take ``compute`` (counted: the bound
    step runs only for integer labels)."""
    pytest.importorskip("skl2onnx", reason="skl2onnx is a test extra: pip install skl2onnx")
    from mini_infer_ml_plugins.ops import trees
    from skl2onnx import to_onnx
    from sklearn.datasets import make_classification
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.tree import DecisionTreeClassifier

    x, y = make_classification(300, 6, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=3)
    x = x.astype(np.float32)
    if kind.startswith("hist"):
        x[::5, 1] = np.nan
    labels = np.array(["cat", "dog", "eel"])[y] if strings else y * 10 + 1
    est = {"one tree": DecisionTreeClassifier(max_depth=5, random_state=0),
           "forest": RandomForestClassifier(8, max_depth=5, random_state=0),
           "boosting (base values, SOFTMAX)": GradientBoostingClassifier(
               n_estimators=10, random_state=0),
           "hist boosting (NaN)": HistGradientBoostingClassifier(max_iter=10, random_state=0),
           }[kind].fit(x[:250], labels[:250])
    with warnings.catch_warnings(), _bools_as_ints():
        warnings.simplefilter("ignore")
        model = to_onnx(est, x[:1], options={id(est): {"zipmap": False}},
                        target_opset={"": 17, "ai.onnx.ml": 3})
    bound = {"runs": 0}
    real = trees._classify_rows

    def counted(*args: Any) -> None:
        bound["runs"] += 1
        real(*args)

    monkeypatch.setattr(trees, "_classify_rows", counted)
    sess, theirs = mi.InferenceSession(model), ort_session(model)
    held = x[250:]
    for n in (1, 3, 1, 0):
        got = sess.run(None, {"X": held[:n]})
        if n:  # onnxruntime and scikit-learn refuse no rows: ours gives none
            assert_same(got, theirs.run(None, {"X": held[:n]}), rtol=1e-5, atol=1e-5)
            assert got[0].tolist() == est.predict(held[:n]).tolist()
            np.testing.assert_allclose(got[1], est.predict_proba(held[:n]), atol=1e-5)
        else:
            assert got[0].shape == (0,) and got[1].shape == (0, 3)
    assert (bound["runs"] > 0) == (not strings)


@pytest.mark.parametrize("kind", ["one tree", "forest (AVERAGE)", "boosting (base value)",
                                  "hist boosting (NaN)"])
def test_bound_tree_regressor_against_scikit_learn(kind: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """TreeEnsembleRegressor's few-row step bound to the compiled walk straight into its
    output (``_Trees.bound_regression``, counted) against scikit-learn and onnxruntime at
    1, 3, 1 and 0 rows of one session, with missing values."""
    pytest.importorskip("skl2onnx", reason="skl2onnx is a test extra: pip install skl2onnx")
    from mini_infer_ml_plugins.ops import trees
    from skl2onnx import to_onnx
    from sklearn.datasets import make_regression
    from sklearn.ensemble import (
        GradientBoostingRegressor,
        HistGradientBoostingRegressor,
        RandomForestRegressor,
    )
    from sklearn.tree import DecisionTreeRegressor

    x, y = make_regression(300, 6, noise=2.0, random_state=5)
    x = x.astype(np.float32)
    if kind.startswith("hist"):
        x[::4, 2] = np.nan
    est = {"one tree": DecisionTreeRegressor(max_depth=6, random_state=0),
           "forest (AVERAGE)": RandomForestRegressor(8, max_depth=6, random_state=0),
           "boosting (base value)": GradientBoostingRegressor(n_estimators=20,
                                                              random_state=0),
           "hist boosting (NaN)": HistGradientBoostingRegressor(max_iter=20, random_state=0),
           }[kind].fit(x[:250], y[:250] / 10)
    with warnings.catch_warnings(), _bools_as_ints():
        warnings.simplefilter("ignore")
        model = to_onnx(est, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})
    made = {"walks": 0}
    real = trees.walk_call

    def counted(*args: Any) -> Any:
        call = real(*args)
        made["walks"] += call is not None
        return call

    monkeypatch.setattr(trees, "walk_call", counted)
    sess, theirs = mi.InferenceSession(model), ort_session(model)
    held = np.ascontiguousarray(x[250:])
    for n in (1, 3, 1, 0):
        got = sess.run(None, {"X": held[:n]})
        if n:  # onnxruntime and scikit-learn refuse no rows: ours gives none
            assert_same(got, theirs.run(None, {"X": held[:n]}), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(got[0].reshape(-1), est.predict(held[:n]), rtol=1e-4,
                                       atol=1e-4)
        else:
            assert got[0].size == 0
    assert made["walks"] > 0
