"""Tree ensembles against onnxruntime: random ensembles in every configuration the legacy
operators have (modes, NaN rules, targets, aggregates, base values, the binary classifier's
rules), the opset-5 TreeEnsemble (also against onnx's ReferenceEvaluator), the compiled walk
against the NumPy one, and malformed ensembles refused at build time."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from mini_infer_ml_plugins.ops import _trees
from ml_support import assert_same, ml_model, run_mi, run_ort, run_ref
from onnx import helper, numpy_helper

import mini_infer_core as mi

MODES = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]


def random_trees(rng: np.random.Generator, n_trees: int, depth: int, features: int,
                 modes: list[str] | None = None, missing: bool = False) -> dict[str, Any]:
    """Legacy node attributes of ``n_trees`` random trees (leaves at random depths up to
    ``depth``) and ``leaves``: (tree id, node id) of every leaf."""
    a: dict[str, list[Any]] = {k: [] for k in (
        "nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values", "nodes_modes",
        "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true")}
    leaves = []
    for t in range(n_trees):
        todo, next_id = [(0, 0)], 1
        while todo:
            node, level = todo.pop()
            a["nodes_treeids"].append(t)
            a["nodes_nodeids"].append(node)
            if level >= depth or (level > 1 and rng.random() < 0.2):
                a["nodes_modes"].append("LEAF")
                a["nodes_featureids"].append(0)
                a["nodes_values"].append(0.0)
                a["nodes_truenodeids"].append(0)
                a["nodes_falsenodeids"].append(0)
                a["nodes_missing_value_tracks_true"].append(0)
                leaves.append((t, node))
                continue
            mode = modes[rng.integers(len(modes))] if modes else "BRANCH_LEQ"
            a["nodes_modes"].append(mode)
            a["nodes_featureids"].append(int(rng.integers(features)))
            value = float(rng.integers(-2, 3)) if mode in ("BRANCH_EQ", "BRANCH_NEQ") \
                else float(np.float32(rng.standard_normal()))
            a["nodes_values"].append(value)
            a["nodes_truenodeids"].append(next_id)
            a["nodes_falsenodeids"].append(next_id + 1)
            a["nodes_missing_value_tracks_true"].append(int(missing and rng.random() < 0.5))
            todo += [(next_id, level + 1), (next_id + 1, level + 1)]
            next_id += 2
    out: dict[str, Any] = dict(a)
    out["leaves"] = leaves
    return out


def inputs(rng: np.random.Generator, n: int, features: int, nan: bool = False,
           integers: bool = False) -> Any:
    x = rng.integers(-2, 3, size=(n, features)).astype(np.float32) if integers \
        else rng.standard_normal((n, features)).astype(np.float32)
    if nan:
        x[rng.random(x.shape) < 0.1] = np.nan
    return x


def regressor(rng: np.random.Generator, trees: dict[str, Any], targets: int, **attrs: Any
              ) -> dict[str, Any]:
    leaves = trees.pop("leaves")
    w: dict[str, list[Any]] = {"target_treeids": [], "target_nodeids": [], "target_ids": [],
                               "target_weights": []}
    for t, node in leaves:
        for k in range(targets):
            if targets > 1 and rng.random() < 0.3:
                continue  # not every leaf scores every target
            w["target_treeids"].append(t)
            w["target_nodeids"].append(node)
            w["target_ids"].append(k)
            w["target_weights"].append(float(np.float32(rng.standard_normal())))
    return {**trees, **w, "n_targets": targets, **attrs}


# -- TreeEnsembleRegressor --------------------------------------------------------------------
@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
@pytest.mark.parametrize("targets", [1, 3])
def test_regressor_aggregates_and_targets(aggregate: str, targets: int) -> None:
    rng = np.random.default_rng(targets)
    attrs = regressor(rng, random_trees(rng, 7, 5, 6), targets, aggregate_function=aggregate,
                      base_values=rng.standard_normal(targets).tolist())
    x = inputs(rng, 50, 6)
    check = ml_model("TreeEnsembleRegressor", [x], attrs)
    assert_same(run_mi(check, [x]), run_ort(check, [x]))


def test_regressor_every_branch_mode_and_missing_values() -> None:
    rng = np.random.default_rng(1)
    attrs = regressor(rng, random_trees(rng, 6, 6, 4, modes=MODES, missing=True), 2)
    x = inputs(rng, 200, 4, nan=True, integers=True)
    model = ml_model("TreeEnsembleRegressor", [x], attrs)
    assert_same(run_mi(model, [x]), run_ort(model, [x]))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32])
def test_regressor_of_double_and_integer_input(dtype: Any) -> None:
    """Integers compare with the thresholds as float32: onnxruntime (which has no integer
    kernel) on the same values as float32 is the oracle."""
    rng = np.random.default_rng(2)
    attrs = regressor(rng, random_trees(rng, 5, 4, 3), 1, post_transform="NONE")
    x = (inputs(rng, 40, 3) * 3).astype(dtype)
    ours = run_mi(ml_model("TreeEnsembleRegressor", [x], attrs), [x])
    xo = x if dtype == np.float64 else x.astype(np.float32)
    assert_same(ours, run_ort(ml_model("TreeEnsembleRegressor", [xo], attrs), [xo]))


def test_regressor_thresholds_as_double_tensor() -> None:
    rng = np.random.default_rng(3)
    attrs = regressor(rng, random_trees(rng, 4, 4, 3), 1)
    values = np.array(attrs.pop("nodes_values"), np.float64) + 1e-9
    attrs["nodes_values_as_tensor"] = values
    attrs["target_weights_as_tensor"] = np.array(attrs.pop("target_weights"), np.float64)
    x = inputs(rng, 30, 3).astype(np.float64)
    model = ml_model("TreeEnsembleRegressor", [x], attrs)
    assert_same(run_mi(model, [x]), run_ort(model, [x]))


# -- TreeEnsembleClassifier -------------------------------------------------------------------
def classifier(rng: np.random.Generator, trees: dict[str, Any], classes: list[int],
               weights: str, labels: Any, **attrs: Any) -> dict[str, Any]:
    leaves = trees.pop("leaves")
    n_trees = len(set(trees["nodes_treeids"]))
    w: dict[str, list[Any]] = {"class_treeids": [], "class_nodeids": [], "class_ids": [],
                               "class_weights": []}
    for t, node in leaves:
        for k in classes:
            w["class_treeids"].append(t)
            w["class_nodeids"].append(node)
            w["class_ids"].append(k)
            # probabilities that sum to about 1 over the trees, or margins
            value = rng.random() / n_trees if weights == "positive" \
                else rng.standard_normal() / 4
            w["class_weights"].append(float(np.float32(value)))
    key = "classlabels_strings" if isinstance(labels[0], str) else "classlabels_int64s"
    return {**trees, **w, key: labels, **attrs}


CLASSIFIERS = {
    # name: (class ids with weights, weights, labels, base values, post_transform)
    "multiclass": ([0, 1, 2], "positive", [3, 5, 9], None, "NONE"),
    "multiclass-softmax-strings": ([0, 1, 2, 3], "mixed", ["a", "b", "c", "d"],
                                   [0.1, -0.2, 0.3, 0.0], "SOFTMAX"),
    "binary-probability": ([1], "positive", [0, 1], None, "NONE"),
    "binary-class0-probability": ([0], "positive", [4, 7], None, "NONE"),
    "binary-margin-logistic": ([0], "mixed", [0, 1], [0.3], "LOGISTIC"),
    "binary-margin-strings": ([1], "mixed", ["no", "yes"], None, "NONE"),
    "binary-two-bases": ([0], "mixed", [0, 1], [0.25, 0.25], "LOGISTIC"),
    "binary-two-bases-class1": ([1], "mixed", [0, 1], [0.25, 0.25], "LOGISTIC"),
    "binary-both-classes": ([0, 1], "positive", [0, 1], None, "NONE"),
    "binary-both-classes-strings": ([0, 1], "positive", ["x", "y"], None, "NONE"),
}


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_classifier_configurations(name: str) -> None:
    classes, weights, labels, base, post = CLASSIFIERS[name]
    rng = np.random.default_rng(len(name))
    extra: dict[str, Any] = {"post_transform": post}
    if base is not None:
        extra["base_values"] = base
    attrs = classifier(rng, random_trees(rng, 9, 5, 5), classes, weights, labels, **extra)
    x = inputs(rng, 300, 5)
    model = ml_model("TreeEnsembleClassifier", [x], attrs, outputs=2)
    ours, theirs = run_mi(model, [x]), run_ort(model, [x])
    assert_same(ours, theirs)
    # onnxruntime never changes these labels: with weights for both classes the label is
    # the raw 1 when class 1 scores above 0, and two base values with class 1 weights only
    # score class 1 as base[1] + (class 0's score, 0)
    if name not in ("binary-two-bases-class1", "binary-both-classes",
                    "binary-both-classes-strings"):
        assert len(set(np.asarray(ours[0]).tolist())) >= 2, "the test never tells labels apart"


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX"])
def test_multiclass_finish_at_few_rows_matches_onnxruntime(post: str) -> None:
    """The compiled finish (class and transformed scores in one call) of a few rows, base
    values added first, against onnxruntime (0 rows: test_row_pipelines.py)."""
    rng = np.random.default_rng(7)
    attrs = classifier(rng, random_trees(rng, 7, 4, 5), [0, 1, 2, 3], "mixed",
                       [10, 20, 30, 40], post_transform=post, base_values=[0.2, -0.1, 0, 0.3])
    for rows in (1, 3, 1):
        x = inputs(rng, rows, 5)
        model = ml_model("TreeEnsembleClassifier", [x], attrs, outputs=2)
        assert_same(run_mi(model, [x]), run_ort(model, [x]))


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX"])
def test_compiled_and_numpy_classifier_finish_agree(post: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``_cml.classify`` against the NumPy form: ties (the first class), a NaN row (the
    first NaN, as argmax), large margins (softmax of -80 below the best)."""
    from mini_infer_ml_plugins.ops import trees

    if trees._cml is None:
        pytest.skip("mini-infer-ml-plugins was installed without its compiled part")
    s = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
    s[1] = [0.5, 0.5, 0.2, 0.5]
    s[2, 2] = np.nan
    s[3] = [80.0, 0.0, -1.0, 79.5]
    node = trees.TreeEnsembleClassifier("t", **classifier(
        np.random.default_rng(1), random_trees(np.random.default_rng(1), 2, 2, 2),
        [0, 1, 2, 3], "positive", [0, 1, 2, 3]))
    has = np.ones(s.shape, bool)
    has[0, 1] = has[4, 0] = False  # unscored: 0 in the scores, never chosen
    has[5] = False  # nothing scored: class 0, as NumPy's argmax of -inf
    s[4, 0] = 50.0
    x = np.zeros((6, 2), np.float32)
    for mask in (None, has):
        out = np.empty_like(s)
        chosen = node._finish(s, post, out, mask)
        assert chosen is not None
        with monkeypatch.context() as m:  # the NumPy form, through compute
            m.setattr(trees, "_cml", None)
            scored = np.ones(s.shape, bool) if mask is None else mask
            m.setattr(node, "_few_rows", lambda _x, scored=scored: (s.copy(), scored))
            want_out = (np.empty(6, np.int64), np.empty_like(s))
            node.compute(x, out=want_out, post_transform=post)
        assert chosen.tolist() == want_out[0].tolist() and chosen[1] == 0 and chosen[2] == 2
        np.testing.assert_allclose(out, want_out[1], rtol=1e-6, atol=1e-7)
    assert chosen[4] != 0 and chosen[5] == 0


def test_classifier_of_double_input_with_missing_values() -> None:
    rng = np.random.default_rng(5)
    attrs = classifier(rng, random_trees(rng, 6, 5, 4, modes=MODES, missing=True), [0, 1, 2],
                       "positive", [0, 1, 2])
    x = inputs(rng, 100, 4, nan=True, integers=True).astype(np.float64)
    model = ml_model("TreeEnsembleClassifier", [x], attrs, outputs=2)
    assert_same(run_mi(model, [x]), run_ort(model, [x]))


# -- TreeEnsemble (opset 5) -------------------------------------------------------------------
def v5(rng: np.random.Generator, n_trees: int, features: int, targets: int,
       dtype: Any, member: bool = False, **attrs: Any) -> dict[str, Any]:
    """A random opset-5 ensemble: node arrays, leaf arrays, roots."""
    nodes: dict[str, list[Any]] = {k: [] for k in (
        "nodes_featureids", "nodes_splits", "nodes_modes", "nodes_truenodeids",
        "nodes_trueleafs", "nodes_falsenodeids", "nodes_falseleafs",
        "nodes_missing_value_tracks_true")}
    leaf_targets: list[int] = []
    leaf_weights: list[float] = []
    roots: list[int] = []
    members: list[float] = []

    def grow(level: int) -> tuple[int, int]:
        if level >= 3 or (level > 0 and rng.random() < 0.25):
            leaf_targets.append(int(rng.integers(targets)))
            leaf_weights.append(float(rng.standard_normal()))
            return len(leaf_targets) - 1, 1
        index = len(nodes["nodes_featureids"])
        for key in nodes:
            nodes[key].append(0)
        mode = 6 if member and rng.random() < 0.4 else int(rng.integers(4))
        nodes["nodes_modes"][index] = mode
        nodes["nodes_featureids"][index] = int(rng.integers(features))
        nodes["nodes_splits"][index] = float(rng.standard_normal())
        nodes["nodes_missing_value_tracks_true"][index] = int(rng.random() < 0.5)
        if mode == 6:
            # no 0.0: onnx's reference ends a set at a member that is falsy
            members.extend([*rng.choice([-2.0, -1.0, 1.0, 2.0], size=2).tolist(), np.nan])
        t, t_leaf = grow(level + 1)
        f, f_leaf = grow(level + 1)
        nodes["nodes_truenodeids"][index], nodes["nodes_trueleafs"][index] = t, t_leaf
        nodes["nodes_falsenodeids"][index], nodes["nodes_falseleafs"][index] = f, f_leaf
        return index, 0

    for _ in range(n_trees):
        roots.append(grow(0)[0])  # level 0 always branches
    out: dict[str, Any] = {k: v for k, v in nodes.items() if k not in ("nodes_splits",
                                                                      "nodes_modes")}
    out["nodes_splits"] = numpy_helper.from_array(np.array(nodes["nodes_splits"], dtype))
    out["nodes_modes"] = numpy_helper.from_array(np.array(nodes["nodes_modes"], np.uint8))
    out["leaf_targetids"] = leaf_targets
    out["leaf_weights"] = numpy_helper.from_array(np.array(leaf_weights, dtype))
    out["tree_roots"] = roots
    out["n_targets"] = targets
    if members:
        out["membership_values"] = numpy_helper.from_array(np.array(members, dtype))
    return {**out, **attrs}


def v5_model(x: Any, attrs: dict[str, Any]) -> Any:
    model = ml_model("TreeEnsemble", [x], {}, ml_opset=5, opset=21)
    model.graph.node[0].attribute.extend(
        helper.make_attribute(k, v) for k, v in attrs.items())
    return model


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("aggregate", [0, 1, 2, 3])
def test_tree_ensemble_v5(dtype: Any, aggregate: int) -> None:
    rng = np.random.default_rng(aggregate)
    attrs = v5(rng, 6, 4, 2, dtype, aggregate_function=aggregate)
    x = inputs(rng, 60, 4, nan=True, integers=True).astype(dtype)
    model = v5_model(x, attrs)
    ours = run_mi(model, [x])
    assert_same(ours, run_ort(model, [x]))
    if aggregate in (0, 1):  # the reference starts MIN/MAX from the type's extremes
        assert_same(ours, run_ref(model, [x]))


def test_tree_ensemble_v5_set_membership() -> None:
    rng = np.random.default_rng(11)
    attrs = v5(rng, 5, 3, 1, np.float32, member=True)
    x = inputs(rng, 80, 3, nan=True, integers=True)
    model = v5_model(x, attrs)
    ours = run_mi(model, [x])
    assert_same(ours, run_ort(model, [x]))
    assert_same(ours, run_ref(model, [x]))


# -- the two walks, and malformed ensembles ---------------------------------------------------
@pytest.mark.skipif(not _trees.compiled_available(),
                    reason="the compiled walk (_ctrees) is not built here; only NumPy runs")
@pytest.mark.parametrize("modes", [None, MODES])
def test_compiled_and_numpy_walks_agree(modes: list[str] | None,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    attrs = regressor(rng, random_trees(rng, 40, 8, 6, modes=modes, missing=True), 3)
    forest = _trees.legacy_forest(attrs, "target", 3)
    x = inputs(rng, 3000, 6, nan=True, integers=modes is not None)
    for agg in (_trees.AGG_SUM, _trees.AGG_MIN, _trees.AGG_MAX):
        compiled = _trees.evaluate(forest, x, agg)
        monkeypatch.setattr(_trees, "_LIB", None)
        walked = _trees.evaluate(forest, x, agg)
        monkeypatch.undo()
        np.testing.assert_array_equal(compiled[1], walked[1])
        np.testing.assert_allclose(compiled[0], walked[0], rtol=1e-5, atol=1e-5)


def test_numpy_walk_matches_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_trees, "_LIB", None)
    rng = np.random.default_rng(9)
    attrs = regressor(rng, random_trees(rng, 12, 6, 5, modes=MODES, missing=True), 2,
                      aggregate_function="AVERAGE")
    x = inputs(rng, 500, 5, nan=True, integers=True)
    model = ml_model("TreeEnsembleRegressor", [x], attrs)
    assert_same(run_mi(model, [x]), run_ort(model, [x]))


def test_a_child_that_does_not_exist_fails_the_build() -> None:
    rng = np.random.default_rng(4)
    attrs = regressor(rng, random_trees(rng, 2, 3, 3), 1)
    attrs["nodes_truenodeids"][0] = 99
    x = inputs(rng, 4, 3)
    with pytest.raises(mi.BuildError, match="node 99 of tree 0 does not exist"):
        run_mi(ml_model("TreeEnsembleRegressor", [x], attrs), [x])


def test_too_few_features_is_an_execution_error() -> None:
    rng = np.random.default_rng(6)
    attrs = regressor(rng, random_trees(rng, 3, 3, 5), 1)
    x = inputs(rng, 4, 5)
    model = ml_model("TreeEnsembleRegressor", [x], attrs)
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "F"
    with pytest.raises(mi.ExecutionError, match="features"):
        run_mi(model, [x[:, :2]])
