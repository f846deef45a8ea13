"""Every ai.onnx.ml operator except the tree ensembles (test_trees.py), one node at a time
through the engine, against onnxruntime and, where its semantics are onnxruntime's, onnx's
ReferenceEvaluator."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from ml_support import assert_same, ml_model, run_mi, run_ort, run_ref
from onnx import helper, numpy_helper

import mini_infer_core as mi

RNG = np.random.default_rng(0)


def rand(*shape: int, dtype: Any = np.float32) -> Any:
    return RNG.standard_normal(shape).astype(dtype)


def check(op: str, inputs: list[Any], attrs: dict[str, Any], *, outputs: int = 1,
          ml_opset: int = 3, ref: bool = True, ort: bool = True, **kw: Any) -> list[Any]:
    """Our outputs against onnxruntime's (``ort``; False where it has no kernel for these
    types) and the reference's (``ref``; False where its semantics differ)."""
    model = ml_model(op, inputs, attrs, outputs=outputs, ml_opset=ml_opset)
    ours = run_mi(model, inputs)
    if ort:
        assert_same(ours, run_ort(model, inputs), **kw)
    if ref:
        assert_same(ours, run_ref(model, inputs), **kw)
    return ours


def strings(*values: str) -> Any:
    return np.array(values, dtype=object)


# -- per-feature transforms -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_binarizer(dtype: Any) -> None:
    x = (rand(5, 4) * 3).astype(dtype)
    y = check("Binarizer", [x], {"threshold": 0.5}, ort=dtype == np.float32)
    assert y[0].dtype == dtype and set(np.unique(y[0]).tolist()) <= {0, 1}


@pytest.mark.parametrize("per_feature", [True, False])
def test_imputer_floats(per_feature: bool) -> None:
    x = rand(6, 3)
    x[[0, 2, 5], [1, 0, 2]] = np.nan
    values = [1.5, -2.0, 7.0] if per_feature else [3.25]
    y = check("Imputer", [x], {"imputed_value_floats": values,
                               "replaced_value_float": float("nan")})
    assert not np.isnan(y[0]).any()


def test_imputer_int64_replaces_a_sentinel() -> None:
    x = RNG.integers(-2, 3, size=(5, 4)).astype(np.int64)
    check("Imputer", [x], {"imputed_value_int64s": [10, 20, 30, 40], "replaced_value_int64": 0},
          ref=False)  # onnx's reference imputes only floats


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_scaler(dtype: Any) -> None:
    x = (rand(7, 3) * 10).astype(dtype)
    ref = dtype == np.float32  # the reference answers in X's type; the schema says FLOAT
    check("Scaler", [x], {"offset": [0.5, -1.0, 2.0], "scale": [2.0, 0.25, -1.5]}, ref=ref)
    check("Scaler", [x], {"offset": [1.0], "scale": [3.0]}, ref=ref)


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_normalizer(norm: str, dtype: Any) -> None:
    x = (rand(6, 4) * 5).astype(dtype)
    x[2] = 0  # a row of zeros is copied, not divided
    check("Normalizer", [x], {"norm": norm}, ref=False)  # the reference divides zero rows


def test_normalizer_of_one_row() -> None:
    check("Normalizer", [rand(5)], {"norm": "L2"}, ref=False)


def test_array_feature_extractor() -> None:
    x = rand(4, 6)
    check("ArrayFeatureExtractor", [x, np.array([4, 0, 4], np.int64)], {})
    check("ArrayFeatureExtractor", [x, np.array([[1, 5]], np.int64)], {})
    check("ArrayFeatureExtractor", [rand(2, 3, 5), np.array([2], np.int64)], {})
    check("ArrayFeatureExtractor", [rand(5), np.array([3, 1], np.int64)], {})
    check("ArrayFeatureExtractor", [strings("a", "b", "c").reshape(1, 3),
                                    np.array([2, 0], np.int64)], {}, ref=False)
    check("ArrayFeatureExtractor", [rand(1, 6), np.array([5], np.int64)], {})
    check("ArrayFeatureExtractor", [rand(0, 6), np.array([5, 1], np.int64)], {}, ref=False)


def test_array_feature_extractor_names_an_index_out_of_range() -> None:
    x = rand(3, 4)
    model = ml_model("ArrayFeatureExtractor", [x, np.array([1, 4], np.int64)], {})
    with pytest.raises(mi.ExecutionError, match="index 4 is out of range"):
        run_mi(model, [x, np.array([1, 4], np.int64)])
    with pytest.raises(mi.ExecutionError, match="index -1 is out of range"):
        run_mi(model, [x, np.array([1, -1], np.int64)])


def test_feature_vectorizer_cuts_and_pads() -> None:
    a, b, c = rand(5, 2), rand(5, 3), rand(5, 1)
    check("FeatureVectorizer", [a, b, c], {"inputdimensions": [2, 2, 3]}, ref=False)
    check("FeatureVectorizer", [a, c], {"inputdimensions": [2, 1]}, ref=False)


def test_feature_vectorizer_of_mixed_types() -> None:
    """onnxruntime binds every input to one type; its answer for the same values as float32
    inputs is the oracle for int64 and float64 ones."""
    a = rand(4, 2)
    b = RNG.integers(-9, 9, size=(4, 3)).astype(np.int64)
    c = rand(4, 2, dtype=np.float64).astype(np.float32).astype(np.float64)
    attrs = {"inputdimensions": [2, 3, 2]}
    ours = run_mi(ml_model("FeatureVectorizer", [a, b, c], attrs), [a, b, c])
    floats = [a, b.astype(np.float32), c.astype(np.float32)]
    assert_same(ours, run_ort(ml_model("FeatureVectorizer", floats, attrs), floats))


# -- maps between labels ----------------------------------------------------------------------
def test_one_hot_encoder_ints_and_strings() -> None:
    x = np.array([[1, 5, 3], [9, 1, 1]], np.int64)
    y = check("OneHotEncoder", [x], {"cats_int64s": [1, 3, 5, 7], "zeros": 1})
    assert y[0].shape == (2, 3, 4) and y[0][1, 0].sum() == 0  # 9 is no category
    check("OneHotEncoder", [strings("b", "z", "a")], {"cats_strings": ["a", "b", "c"]},
          ref=False)
    check("OneHotEncoder", [np.array([[2.0, 0.0]], np.float32)], {"cats_int64s": [0, 1, 2]})


def test_one_hot_encoder_of_many_strings_in_one_pass() -> None:
    """Enough rows for the one-pass lookup (``_LOOKED_UP_AT_ONCE``): unknown and repeated
    values, against onnxruntime and scikit-learn's OneHotEncoder(handle_unknown="ignore");
    with zeros=0 the first unknown string is refused by name."""
    from mini_infer_ml_plugins.ops.encoders import _LOOKED_UP_AT_ONCE
    from sklearn.preprocessing import OneHotEncoder

    cats = ["blue", "green", "grey", "red"]
    rng = np.random.default_rng(4)
    x = rng.choice([*cats, "purple", ""], size=(3 * _LOOKED_UP_AT_ONCE, 1)).astype(object)
    y = check("OneHotEncoder", [x], {"cats_strings": cats, "zeros": 1}, ref=False)
    want = OneHotEncoder(categories=[cats], handle_unknown="ignore").fit(x).transform(x)
    np.testing.assert_array_equal(y[0].reshape(len(x), -1), want.toarray())
    model = ml_model("OneHotEncoder", [x], {"cats_strings": cats, "zeros": 0})
    first = next(v for v in x[:, 0] if v not in cats)
    with pytest.raises(mi.ExecutionError, match=f"{first!r} is not one of the categories"):
        run_mi(model, [x])


def test_one_hot_encoder_refuses_an_unknown_value_when_zeros_is_0() -> None:
    x = np.array([[1, 4]], np.int64)
    model = ml_model("OneHotEncoder", [x], {"cats_int64s": [1, 2], "zeros": 0})
    with pytest.raises(mi.ExecutionError, match="not one of the categories"):
        run_mi(model, [x])


def test_one_hot_encoder_of_strings_in_place() -> None:
    """String categories written straight into the output: rows of two columns, an unknown
    and a repeated value, against onnxruntime; with zeros=0 an unknown string is refused
    by name."""
    x = np.array([["b", "z"], ["a", "a"], ["c", "b"]], dtype=object)
    y = check("OneHotEncoder", [x], {"cats_strings": ["a", "b", "c"], "zeros": 1}, ref=False)
    assert y[0].shape == (3, 2, 3) and y[0][0, 1].sum() == 0 and y[0][1].sum() == 2
    model = ml_model("OneHotEncoder", [x], {"cats_strings": ["a", "b", "c"], "zeros": 0})
    with pytest.raises(mi.ExecutionError, match="'z' is not one of the categories"):
        run_mi(model, [x])


def test_category_mapper_both_ways() -> None:
    cats = {"cats_strings": ["cat", "dog", "eel"], "cats_int64s": [7, 3, 11],
            "default_int64": -5, "default_string": "none"}
    check("CategoryMapper", [strings("dog", "cow", "eel", "cat").reshape(2, 2)], cats,
          ref=False)
    check("CategoryMapper", [np.array([11, 3, 4], np.int64)], cats, ref=False)


def test_label_encoder_opset_1() -> None:
    attrs = {"classes_strings": ["x", "y", "z"], "default_int64": 42, "default_string": "?"}
    check("LabelEncoder", [strings("z", "w", "x")], attrs, ml_opset=1, ref=False)
    check("LabelEncoder", [np.array([2, 0, 5], np.int64)], attrs, ml_opset=1, ref=False)


def test_label_encoder_lists() -> None:
    check("LabelEncoder", [strings("b", "a", "q")],
          {"keys_strings": ["a", "b"], "values_floats": [0.5, -2.0], "default_float": 9.0},
          ml_opset=2)
    check("LabelEncoder", [np.array([[3, 1], [2, 8]], np.int64)],
          {"keys_int64s": [1, 2, 3], "values_strings": ["one", "two", "three"]}, ml_opset=2)
    check("LabelEncoder", [np.array([0.5, 1.5, -1.0], np.float32)],
          {"keys_floats": [0.5, -1.0], "values_int64s": [10, 20], "default_int64": 7},
          ml_opset=2)


@pytest.mark.parametrize("keys,values,ort", [
    (np.int64, np.float64, True), (np.float32, np.int64, True), (np.float64, np.float64, True),
    (np.int16, np.float64, False), (np.int32, np.int16, False), (object, np.int64, False)])
def test_label_encoder_tensors(keys: Any, values: Any, ort: bool) -> None:
    """Opset 4's tensor attributes (onnxruntime serves some type pairs only)."""
    k = np.array([1, 3, 5]).astype(keys) if keys is not object else strings("1", "3", "5")
    x = np.array([5, 2, 1, 3]).astype(keys) if keys is not object else strings("5", "2", "1")
    model = ml_model("LabelEncoder", [x], {}, ml_opset=4)
    model.graph.node[0].attribute.extend([
        helper.make_attribute("keys_tensor", numpy_helper.from_array(k)),
        helper.make_attribute("values_tensor",
                              numpy_helper.from_array(np.array([25, 50, 75]).astype(values))),
        helper.make_attribute("default_tensor",
                              numpy_helper.from_array(np.array([-1]).astype(values)))])
    ours = run_mi(model, [x])
    if ort:
        assert_same(ours, run_ort(model, [x]))
    assert_same(ours, run_ref(model, [x]))
    assert ours[0].dtype == values


# -- linear models ----------------------------------------------------------------------------
@pytest.mark.parametrize("post", ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"])
def test_linear_classifier_multiclass(post: str) -> None:
    x = rand(8, 4)
    attrs = {"coefficients": rand(12).tolist(), "intercepts": rand(3).tolist(),
             "classlabels_ints": [4, 7, 9], "post_transform": post}
    if post == "PROBIT":  # probit of a probability: scores in (0, 1)
        x = np.abs(x) * 0.05
        attrs["coefficients"] = (np.abs(rand(12)) * 0.3).tolist()
        attrs["intercepts"] = [0.2, 0.3, 0.1]
    check("LinearClassifier", [x], attrs, outputs=2, ref=post in ("NONE", "SOFTMAX"))


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC"])
def test_linear_classifier_one_row_two_labels(post: str) -> None:
    x = rand(9, 3)
    check("LinearClassifier", [x], {"coefficients": [0.5, -1.0, 2.0], "intercepts": [0.1],
                                    "classlabels_strings": ["no", "yes"],
                                    "post_transform": post}, outputs=2, ref=False)


def test_linear_classifier_of_int_input_and_string_labels() -> None:
    x = RNG.integers(-3, 4, size=(6, 2)).astype(np.int64)
    check("LinearClassifier", [x], {"coefficients": [1.0, -1.0, 0.5, 0.5, -2.0, 0.0],
                                    "intercepts": [0.0, 0.1, 0.2],
                                    "classlabels_strings": ["a", "b", "c"]}, outputs=2)


def test_linear_regressor() -> None:
    x = rand(7, 3)
    check("LinearRegressor", [x], {"coefficients": rand(6).tolist(), "intercepts": [1.0, -1.0],
                                   "targets": 2})
    # onnxruntime serves float32 only; the reference answers float64, the schema says FLOAT
    x64 = x.astype(np.float64)
    model = ml_model("LinearRegressor", [x64], {"coefficients": [1.0, 2.0, 3.0],
                                                "intercepts": [0.5]})
    (ours,), (ref,) = run_mi(model, [x64]), run_ref(model, [x64])
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, ref, rtol=1e-6)


# -- SVMs -------------------------------------------------------------------------------------
def _svc(k: int, per_class: list[int], features: int, kernel: str, proba: bool
         ) -> dict[str, Any]:
    vectors = sum(per_class)
    pairs = k * (k - 1) // 2
    attrs: dict[str, Any] = {
        "classlabels_ints": list(range(10, 10 + k)), "vectors_per_class": per_class,
        "support_vectors": rand(vectors * features).tolist(),
        "coefficients": rand((k - 1) * vectors).tolist(), "rho": rand(pairs).tolist(),
        "kernel_type": kernel, "kernel_params": [0.3, 0.5, 3.0]}
    if proba:
        attrs["prob_a"] = (-np.abs(rand(pairs)) - 0.5).tolist()
        attrs["prob_b"] = (rand(pairs) * 0.1).tolist()
    return attrs


@pytest.mark.parametrize("kernel", ["RBF", "LINEAR", "POLY", "SIGMOID"])
@pytest.mark.parametrize("proba", [True, False])
def test_svm_classifier_three_classes(kernel: str, proba: bool) -> None:
    x = rand(10, 4)
    check("SVMClassifier", [x], _svc(3, [2, 3, 2], 4, kernel, proba), outputs=2,
          ref=False, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC"])
def test_svm_classifier_binary_without_probabilities(post: str) -> None:
    x = rand(12, 3)
    attrs = _svc(2, [3, 2], 3, "RBF", False)
    attrs["post_transform"] = post
    check("SVMClassifier", [x], attrs, outputs=2, ref=False, rtol=1e-3, atol=1e-4)


def test_svm_classifier_linear_mode() -> None:
    x = rand(8, 3)
    check("SVMClassifier", [x], {"classlabels_strings": ["p", "q", "r"],
                                 "coefficients": rand(9).tolist(), "rho": [0.25],
                                 "kernel_type": "LINEAR", "kernel_params": [0.0, 0.0, 0.0]},
          outputs=2, ref=False)


@pytest.mark.parametrize("kernel", ["RBF", "LINEAR", "POLY"])
def test_svm_regressor(kernel: str) -> None:
    x = rand(9, 4)
    attrs = {"support_vectors": rand(5 * 4).tolist(), "coefficients": rand(5).tolist(),
             "rho": [0.3], "n_supports": 5, "kernel_type": kernel,
             "kernel_params": [0.2, 0.1, 2.0]}
    check("SVMRegressor", [x], attrs, ref=False, rtol=1e-3, atol=1e-4)
    check("SVMRegressor", [x], {**attrs, "one_class": 1}, ref=False)


def test_svm_regressor_linear_mode() -> None:
    x = rand(6, 3)
    check("SVMRegressor", [x], {"coefficients": [1.0, -2.0, 0.5], "rho": [0.1],
                                "kernel_params": [0.0, 0.0, 0.0]}, ref=False)


def _label_lookup(classes: Any) -> Any:
    """scores [N, C] -> ArgMax -> ArrayFeatureExtractor(classes): naive Bayes' label lookup
    as skl2onnx writes it (the index is computed, so the engine binds the gather), and the
    same with the index shifted by an input (Add), to reach past the classes."""
    g = helper.make_graph(
        [helper.make_node("ArgMax", ["s"], ["i"], axis=1),
         helper.make_node("Add", ["i", "shift"], ["j"]),
         helper.make_node("ArrayFeatureExtractor", ["classes", "j"], ["label"],
                          domain="ai.onnx.ml")],
        "lookup",
        [helper.make_tensor_value_info("s", onnx.TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("shift", onnx.TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("label", numpy_helper.from_array(classes).data_type,
                                       None)],
        [numpy_helper.from_array(classes, "classes")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("ai.onnx.ml", 3)])


@pytest.mark.parametrize("classes", [np.array([10, 20, 30, 40], np.int64),
                                     np.array([0.5, -1.5, 2.5, 9.0], np.float32),
                                     np.array([[7, 8, 9, 6]], np.int32),
                                     np.array(["a", "bb", "c", "d"], dtype=object)],
                         ids=["int64", "float32", "int32-2d", "strings"])
@pytest.mark.parametrize("rows", [0, 1, 5])
def test_array_feature_extractor_after_argmax(classes: Any, rows: int) -> None:
    """The bound gather (``_cml.take``) of integer, float and string labels (four: the
    shifted index reaches the last) at 0, 1 and 5 rows, against onnxruntime and
    scikit-learn's own lookup (``classes[argmax]``)."""
    model = _label_lookup(classes)
    for shift in (0, 1):
        feeds = {"s": rand(rows, 3), "shift": np.array([shift], np.int64)}
        ours = run_mi(model, feeds)
        if rows:  # onnxruntime refuses an empty index ("num_indices = 0")
            assert_same(ours, run_ort(model, feeds))
        if shift == 0:  # scikit-learn's predict: classes_[argmax]
            want = classes.reshape(-1)[feeds["s"].argmax(axis=1)]
            assert np.asarray(ours[0]).reshape(-1).tolist() == want.tolist()


def test_bound_array_feature_extractor_names_an_index_out_of_range() -> None:
    model = _label_lookup(np.array([10, 20, 30], np.int64))
    s = np.array([[0.0, 0.0, 1.0]], np.float32)  # ArgMax 2, shifted to 3
    session = mi.InferenceSession(model)
    session.run(None, {"s": s, "shift": np.array([0], np.int64)})
    with pytest.raises(mi.ExecutionError, match="index 3 is out of range"):
        session.run(None, {"s": s, "shift": np.array([1], np.int64)})
    with pytest.raises(mi.ExecutionError, match="index -1 is out of range"):
        session.run(None, {"s": s, "shift": np.array([-3], np.int64)})
