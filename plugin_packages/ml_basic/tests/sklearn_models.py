"""Real scikit-learn models and pipelines, trained here on generated (or bundled) data and
converted with skl2onnx, with the inputs to run them on: what test_sklearn.py checks against
onnxruntime. Classifiers are converted without ZipMap (``zipmap: False``), so probabilities
come out as a tensor, except in the ZipMap cases (probabilities as a list of dicts, one per
row); the DictVectorizer pipelines take one dict per run (``feeds``, then each of ``more``)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

__all__ = ["SklearnCase", "cases", "case_names"]


@dataclass
class SklearnCase:
    name: str
    model: onnx.ModelProto
    feeds: dict[str, Any]
    #: further inputs to run the model on (a dict input is one row per run)
    more: list[dict[str, Any]] = field(default_factory=list)

    def runs(self) -> list[dict[str, Any]]:
        return [self.feeds, *self.more]


def _data(n: int = 400, features: int = 6, classes: int = 3, seed: int = 0
          ) -> tuple[Any, Any]:
    from sklearn.datasets import make_classification

    x, y = make_classification(n, features, n_informative=min(features, 4),
                               n_redundant=0, n_classes=classes, random_state=seed)
    return x.astype(np.float32), y


def _regression(n: int = 400, features: int = 6) -> tuple[Any, Any]:
    from sklearn.datasets import make_regression

    x, y = make_regression(n, features, noise=3.0, random_state=0)
    return x.astype(np.float32), y


def _convert(est: Any, x: Any, ml_opset: int = 3, zipmap: bool = False, **options: Any
             ) -> onnx.ModelProto:
    from skl2onnx import to_onnx

    opts = {id(est): {"zipmap": False, **options}} if hasattr(est, "classes_") else None
    if zipmap and opts is not None:
        del opts[id(est)]["zipmap"]  # skl2onnx's default: the graph ends in ZipMap
    if opts is None and options:
        opts = {id(est): options}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_onnx(est, x[:1], options=opts,
                       target_opset={"": 17, "ai.onnx.ml": ml_opset})


def _random_forest_classifier() -> SklearnCase:
    from sklearn.ensemble import RandomForestClassifier

    x, y = _data()
    est = RandomForestClassifier(50, random_state=0).fit(x, y)
    return SklearnCase("RandomForestClassifier", _convert(est, x), {"X": x})


def _random_forest_regressor() -> SklearnCase:
    from sklearn.ensemble import RandomForestRegressor

    x, y = _regression()
    est = RandomForestRegressor(40, random_state=0).fit(x, y)
    return SklearnCase("RandomForestRegressor", _convert(est, x), {"X": x})


_V5_MODES = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3,
             "BRANCH_EQ": 4, "BRANCH_NEQ": 5}


def as_tree_ensemble(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its TreeEnsembleRegressor (one weight per leaf, no base values) written
    as the TreeEnsemble of opset 5, which skl2onnx does not emit: the same trees, node arrays
    and leaf arrays instead of (tree, node) ids."""
    from onnx import helper, numpy_helper

    model = onnx.ModelProto.FromString(model.SerializeToString())
    (old,) = [n for n in model.graph.node if n.op_type == "TreeEnsembleRegressor"]
    a = {att.name: helper.get_attribute_value(att) for att in old.attribute}
    assert not a.get("base_values") and a.get("post_transform", b"NONE") == b"NONE"
    ids = list(zip(a["nodes_treeids"], a["nodes_nodeids"], strict=True))
    modes = [m.decode() for m in a["nodes_modes"]]
    where = {key: i for i, key in enumerate(ids)}
    leaves = [i for i, m in enumerate(modes) if m == "LEAF"]
    branches = [i for i, m in enumerate(modes) if m != "LEAF"]
    leaf_at = {i: k for k, i in enumerate(leaves)}
    branch_at = {i: k for k, i in enumerate(branches)}
    weight = {(t, n): (k, w) for t, n, k, w in zip(
        a["target_treeids"], a["target_nodeids"], a["target_ids"], a["target_weights"],
        strict=True)}
    assert len(weight) == len(leaves), "one weight per leaf"

    def child(i: int, key: str) -> tuple[int, int]:
        j = where[(ids[i][0], a[key][i])]
        return (leaf_at[j], 1) if modes[j] == "LEAF" else (branch_at[j], 0)

    true = [child(i, "nodes_truenodeids") for i in branches]
    false = [child(i, "nodes_falsenodeids") for i in branches]
    first: dict[int, int] = {}  # each tree's first node is its root (skl2onnx's order)
    for i, (t, _) in enumerate(ids):
        first.setdefault(t, i)
    assert all(modes[i] != "LEAF" for i in first.values()), "no single-leaf tree"
    roots = sorted((t, branch_at[i]) for t, i in first.items())
    aggregate = {b"AVERAGE": 0, b"SUM": 1, b"MIN": 2, b"MAX": 3}[
        a.get("aggregate_function", b"SUM")]
    node = helper.make_node(
        "TreeEnsemble", list(old.input), list(old.output), domain="ai.onnx.ml",
        n_targets=a.get("n_targets", 1), aggregate_function=aggregate, post_transform=0,
        tree_roots=[r for _, r in roots],
        nodes_featureids=[a["nodes_featureids"][i] for i in branches],
        nodes_splits=numpy_helper.from_array(
            np.array([a["nodes_values"][i] for i in branches], np.float32)),
        nodes_modes=numpy_helper.from_array(
            np.array([_V5_MODES[modes[i]] for i in branches], np.uint8)),
        nodes_truenodeids=[c for c, _ in true], nodes_trueleafs=[f for _, f in true],
        nodes_falsenodeids=[c for c, _ in false], nodes_falseleafs=[f for _, f in false],
        leaf_targetids=[weight[ids[i]][0] for i in leaves],
        leaf_weights=numpy_helper.from_array(
            np.array([weight[ids[i]][1] for i in leaves], np.float32)))
    index = list(model.graph.node).index(old)
    model.graph.node.remove(old)
    model.graph.node.insert(index, node)
    for opset in model.opset_import:
        opset.version = {"": 21, "ai.onnx.ml": 5}.get(opset.domain, opset.version)
    return model


def _random_forest_regressor_v5() -> SklearnCase:
    case = _random_forest_regressor()
    return SklearnCase("RandomForestRegressor as TreeEnsemble v5", as_tree_ensemble(case.model),
                       case.feeds)


def _extra_trees_regressor() -> SklearnCase:
    from sklearn.ensemble import ExtraTreesRegressor

    x, y = _regression()
    est = ExtraTreesRegressor(30, random_state=0).fit(x, np.stack([y, -2 * y], axis=1))
    return SklearnCase("ExtraTreesRegressor 2 targets", _convert(est, x), {"X": x})


def _gradient_boosting_classifier() -> SklearnCase:
    from sklearn.ensemble import GradientBoostingClassifier

    x, y = _data(classes=2)
    est = GradientBoostingClassifier(n_estimators=60, random_state=0).fit(x, y)
    return SklearnCase("GradientBoostingClassifier binary", _convert(est, x), {"X": x})


def _gradient_boosting_regressor() -> SklearnCase:
    from sklearn.ensemble import GradientBoostingRegressor

    x, y = _regression()
    est = GradientBoostingRegressor(n_estimators=80, random_state=0).fit(x, y)
    return SklearnCase("GradientBoostingRegressor", _convert(est, x), {"X": x})


@contextlib.contextmanager
def _bools_as_ints() -> Iterator[None]:
    """skl2onnx 1.20 hands scikit-learn 1.9's histogram trees' ``missing_go_to_left`` (numpy
    bools among ints) to ``onnx.helper.make_attribute``, which refuses them: make them the
    ints they mean while converting."""
    from onnx import helper

    original = helper.make_attribute

    def make_attribute(key: str, value: Any, *args: Any, **kw: Any) -> Any:
        if isinstance(value, (list, tuple)) and any(isinstance(v, (bool, np.bool_))
                                                    for v in value):
            value = [int(v) for v in value]
        return original(key, value, *args, **kw)

    helper.make_attribute = make_attribute  # type: ignore[assignment]
    try:
        yield
    finally:
        helper.make_attribute = original  # type: ignore[assignment]


def _hist_gradient_boosting_classifier() -> SklearnCase:
    from sklearn.ensemble import HistGradientBoostingClassifier

    x, y = _data(classes=3)
    x[::7, 1] = np.nan  # missing values go where training sent them
    est = HistGradientBoostingClassifier(max_iter=40, random_state=0).fit(x, y)
    with _bools_as_ints():
        model = _convert(est, x)
    return SklearnCase("HistGradientBoostingClassifier NaN", model, {"X": x})


def _decision_tree_strings() -> SklearnCase:
    from sklearn.tree import DecisionTreeClassifier

    x, y = _data(classes=3)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    est = DecisionTreeClassifier(max_depth=6, random_state=0).fit(x, labels)
    return SklearnCase("DecisionTreeClassifier string labels", _convert(est, x), {"X": x})


def _logistic_regression() -> SklearnCase:
    from sklearn.linear_model import LogisticRegression

    x, y = _data(classes=3)
    est = LogisticRegression(max_iter=500).fit(x, y)
    return SklearnCase("LogisticRegression multinomial", _convert(est, x), {"X": x})


def _logistic_regression_binary() -> SklearnCase:
    from sklearn.linear_model import LogisticRegression

    x, y = _data(classes=2)
    est = LogisticRegression(max_iter=500).fit(x, y)
    return SklearnCase("LogisticRegression binary", _convert(est, x), {"X": x})


def _linear_regression() -> SklearnCase:
    from sklearn.linear_model import LinearRegression

    x, y = _regression()
    est = LinearRegression().fit(x, y)
    return SklearnCase("LinearRegression", _convert(est, x), {"X": x})


def _svc_rbf() -> SklearnCase:
    from sklearn.svm import SVC

    x, y = _data(n=200, classes=3)
    est = SVC(kernel="rbf", probability=True, random_state=0).fit(x, y)
    return SklearnCase("SVC rbf probabilities", _convert(est, x), {"X": x})


def _svc_linear() -> SklearnCase:
    from sklearn.svm import SVC

    x, y = _data(n=200, classes=2)
    est = SVC(kernel="linear").fit(x, y)
    return SklearnCase("SVC linear binary", _convert(est, x), {"X": x})


def _svr() -> SklearnCase:
    from sklearn.svm import SVR

    x, y = _regression(n=200)
    est = SVR(kernel="rbf", C=50.0).fit(x, y / 50)
    return SklearnCase("SVR rbf", _convert(est, x), {"X": x})


def _knn() -> SklearnCase:
    from sklearn.neighbors import KNeighborsClassifier

    x, y = _data(n=300, classes=3)
    est = KNeighborsClassifier(n_neighbors=5).fit(x, y)
    return SklearnCase("KNeighborsClassifier", _convert(est, x), {"X": x[:100]})


def _column_transformer() -> SklearnCase:
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 300
    num = rng.standard_normal((n, 3)).astype(np.float32)
    cat = rng.choice(["red", "green", "blue", "grey"], size=(n, 2))
    y = ((num[:, 0] > 0) ^ (cat[:, 0] == "red")).astype(int) + (cat[:, 1] == "blue")
    import pandas as pd

    frame = pd.DataFrame({"a": num[:, 0], "b": num[:, 1], "c": num[:, 2],
                          "u": cat[:, 0], "v": cat[:, 1]})
    pipe = Pipeline([
        ("prep", ColumnTransformer([
            ("num", StandardScaler(), ["a", "b", "c"]),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["u", "v"])])),
        ("clf", LogisticRegression(max_iter=500))]).fit(frame, y)
    types = [(c, FloatTensorType([None, 1])) for c in "abc"] + \
            [(c, StringTensorType([None, 1])) for c in "uv"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_onnx(pipe, initial_types=types, options={id(pipe): {"zipmap": False}},
                        target_opset={"": 17, "ai.onnx.ml": 3})
    feeds: dict[str, Any] = {c: num[:, i:i + 1] for i, c in enumerate("abc")}
    unseen = cat.copy()
    unseen[::11, 1] = "purple"  # a category never seen in training: all zeros
    feeds.update({c: unseen[:, i:i + 1].astype(object) for i, c in enumerate("uv")})
    return SklearnCase("ColumnTransformer(Scaler+OneHot)+LogReg", model, feeds)


def _imputer_binarizer() -> SklearnCase:
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import Binarizer, Normalizer

    x, y = _data(classes=2)
    x[::5, 0] = np.nan
    x[::7, 3] = np.nan
    pipe = Pipeline([("impute", SimpleImputer(strategy="mean")),
                     ("norm", Normalizer(norm="l2")), ("bin", Binarizer(threshold=0.1)),
                     ("clf", LogisticRegression(max_iter=500))]).fit(x, y)
    return SklearnCase("Imputer+Normalizer+Binarizer+LogReg", _convert(pipe, x), {"X": x})


def _scaler_normalizer_svc() -> SklearnCase:
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MinMaxScaler, Normalizer
    from sklearn.svm import SVC

    x, y = _data(n=200, classes=3)
    pipe = Pipeline([("scale", MinMaxScaler()), ("norm", Normalizer(norm="max")),
                     ("svc", SVC(kernel="poly", degree=2))]).fit(x, y)
    return SklearnCase("MinMaxScaler+Normalizer(max)+SVC poly", _convert(pipe, x), {"X": x})


def _label_encoder() -> SklearnCase:
    from sklearn.preprocessing import LabelEncoder

    words = np.array(["spam", "eggs", "ham", "toast", "beans"])
    est = LabelEncoder().fit(words)
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import StringTensorType

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_onnx(est, initial_types=[("X", StringTensorType([None]))],
                        target_opset={"": 17, "ai.onnx.ml": 2})
    x = np.random.default_rng(0).choice(words, size=40).astype(object)
    return SklearnCase("LabelEncoder strings", model, {"X": x})


# -- ZipMap: probabilities as a list of dicts ---------------------------------------------------
def _zipmap_logistic_regression_strings() -> SklearnCase:
    from sklearn.linear_model import LogisticRegression

    x, y = _data(classes=3)
    labels = np.array(["cat", "dog", "emu"])[y]
    est = LogisticRegression(max_iter=500).fit(x, labels)
    return SklearnCase("LogisticRegression ZipMap string labels",
                       _convert(est, x, zipmap=True), {"X": x[:60]})


def _zipmap_logistic_regression_ints() -> SklearnCase:
    from sklearn.linear_model import LogisticRegression

    x, y = _data(classes=2)
    est = LogisticRegression(max_iter=500).fit(x, np.array([-4, 17])[y])
    return SklearnCase("LogisticRegression binary ZipMap int labels",
                       _convert(est, x, zipmap=True), {"X": x[:60]})


def _zipmap_random_forest_strings() -> SklearnCase:
    from sklearn.ensemble import RandomForestClassifier

    x, y = _data(classes=3)
    labels = np.array(["low", "mid", "high"])[y]
    est = RandomForestClassifier(20, random_state=0).fit(x, labels)
    return SklearnCase("RandomForestClassifier ZipMap string labels",
                       _convert(est, x, zipmap=True), {"X": x[:80]})


def _zipmap_random_forest_ints() -> SklearnCase:
    from sklearn.ensemble import RandomForestClassifier

    x, y = _data(classes=4, features=8)
    est = RandomForestClassifier(20, random_state=0).fit(x, np.array([3, 10, 42, 7])[y])
    return SklearnCase("RandomForestClassifier ZipMap int labels",
                       _convert(est, x, zipmap=True), {"X": x[:80]})


# -- DictVectorizer: one dict per run ----------------------------------------------------------
def _records(keys: list[Any], n: int, seed: int) -> list[dict[Any, float]]:
    """``n`` sparse records: each a few of ``keys`` with float values."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        chosen = rng.choice(len(keys), size=int(rng.integers(1, len(keys))), replace=False)
        out.append({keys[int(k)]: float(np.float32(rng.normal(0, 2))) for k in chosen})
    return out


def _dict_pipeline(name: str, keys: list[Any], key_type: Any, final: Any, target: Any,
                   unseen: Any, zipmap: bool = False) -> SklearnCase:
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import DictionaryType, FloatTensorType
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.pipeline import Pipeline

    train = _records(keys, 300, 0)
    pipe = Pipeline([("vec", DictVectorizer(sparse=False)), ("model", final)])
    pipe.fit(train, target(pipe.named_steps["vec"].fit_transform(train)))
    options = {id(final): {"zipmap": False}} if hasattr(final, "predict_proba") and \
        not zipmap else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_onnx(pipe, initial_types=[("X", DictionaryType(key_type([1]),
                                                                  FloatTensorType([1])))],
                        options=options, target_opset={"": 17, "ai.onnx.ml": 3})
    rows = _records(keys, 12, 1)
    rows[3][unseen] = 5.0  # a key the vocabulary lacks: ignored
    rows[5] = {keys[-1]: -1.5}  # one key (onnxruntime refuses an empty dict)
    return SklearnCase(name, model, {"X": rows[0]}, [{"X": r} for r in rows[1:]])


def _dict_vectorizer_linear_regression() -> SklearnCase:
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.linear_model import LinearRegression

    keys = ["age", "height", "weight", "income", "score", "visits"]
    return _dict_pipeline("DictVectorizer(str keys)+LinearRegression", keys, StringTensorType,
                          LinearRegression(), lambda x: x @ np.arange(1.0, 7.0) + 0.5,
                          "unknown")


def _dict_vectorizer_random_forest() -> SklearnCase:
    from skl2onnx.common.data_types import Int64TensorType
    from sklearn.ensemble import RandomForestClassifier

    keys = [11, 3, 250, 7, 42]
    return _dict_pipeline("DictVectorizer(int keys)+RandomForestClassifier ZipMap", keys,
                          Int64TensorType, RandomForestClassifier(15, random_state=0),
                          lambda x: (x[:, 0] + x[:, 2] > 0).astype(int) + (x[:, 4] > 1),
                          999, zipmap=True)


def _dict_vectorizer_logistic_regression() -> SklearnCase:
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.linear_model import LogisticRegression

    keys = ["red", "green", "blue", "alpha"]
    return _dict_pipeline("DictVectorizer(str keys)+LogisticRegression", keys, StringTensorType,
                          LogisticRegression(max_iter=500),
                          lambda x: np.array(["no", "yes"])[(x[:, 0] - x[:, 2] > 0).astype(int)],
                          "purple")


_CASES: dict[str, Callable[[], SklearnCase]] = {
    f.__name__.lstrip("_"): f for f in (
        _random_forest_classifier, _random_forest_regressor, _random_forest_regressor_v5,
        _extra_trees_regressor,
        _gradient_boosting_classifier, _gradient_boosting_regressor,
        _hist_gradient_boosting_classifier, _decision_tree_strings, _logistic_regression,
        _logistic_regression_binary, _linear_regression, _svc_rbf, _svc_linear, _svr, _knn,
        _column_transformer, _imputer_binarizer, _scaler_normalizer_svc, _label_encoder,
        _zipmap_logistic_regression_strings, _zipmap_logistic_regression_ints,
        _zipmap_random_forest_strings, _zipmap_random_forest_ints,
        _dict_vectorizer_linear_regression, _dict_vectorizer_random_forest,
        _dict_vectorizer_logistic_regression)}


def case_names() -> list[str]:
    return list(_CASES)


def cases(name: str) -> SklearnCase:
    """The named case, trained and converted."""
    return _CASES[name]()
