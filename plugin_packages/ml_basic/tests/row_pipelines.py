"""scikit-learn pipelines as a service scores them: one row per request, or a batch of 200,
converted with skl2onnx as a user converts them (``to_onnx``, ZipMap left in where the name
says so). What ``benchmarks/sklearn_pipelines.py`` times against onnxruntime and
``test_row_pipelines.py`` checks against onnxruntime and scikit-learn at 0, 1 and 200 rows.

Each pipeline is trained here on generated data (nothing is downloaded) and comes with 200
rows of held-out inputs; :meth:`RowPipeline.feeds` gives the first ``n`` of them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from sklearn_models import _bools_as_ints

__all__ = ["ROWS", "RowPipeline", "pipeline", "pipeline_names"]

#: the rows of each pipeline's inputs (the batch size the benchmark times)
ROWS = 200


@dataclass
class RowPipeline:
    name: str
    model: onnx.ModelProto
    #: the fitted scikit-learn estimator (the second oracle)
    estimator: Any
    #: input name -> ROWS rows
    inputs: dict[str, Any]
    #: what scikit-learn takes for the same rows, given the first n
    sklearn_input: Callable[[int], Any]

    def feeds(self, n: int) -> dict[str, Any]:
        return {k: v[:n] for k, v in self.inputs.items()}


def _classification(n: int, features: int = 8, classes: int = 3, seed: int = 0
                    ) -> tuple[Any, Any]:
    from sklearn.datasets import make_classification

    x, y = make_classification(n + ROWS, features, n_informative=min(features, 5),
                               n_redundant=0, n_classes=classes, random_state=seed)
    return x.astype(np.float32), y


def _regression(n: int, features: int = 8) -> tuple[Any, Any]:
    from sklearn.datasets import make_regression

    x, y = make_regression(n + ROWS, features, noise=3.0, random_state=0)
    return x.astype(np.float32), y / 10


def _to_onnx(est: Any, x: Any, zipmap: bool = False, **kw: Any) -> onnx.ModelProto:
    from skl2onnx import to_onnx

    final = est.steps[-1][1] if hasattr(est, "steps") else est
    options = None if zipmap or not hasattr(final, "predict_proba") else \
        {id(final): {"zipmap": False}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_onnx(est, x[:1], options=options,
                       target_opset={"": 17, "ai.onnx.ml": 3}, **kw)


def _tabular(name: str, est: Any, x: Any, y: Any, train: int, zipmap: bool = False
             ) -> RowPipeline:
    """``est`` fitted on the first ``train`` rows, the ROWS after them held out."""
    est.fit(x[:train], y[:train])
    held = np.ascontiguousarray(x[train:train + ROWS])
    return RowPipeline(name, _to_onnx(est, x, zipmap), est, {"X": held}, lambda n: held[:n])


def _on_classes(name: str, est: Any, train: int = 400, zipmap: bool = False) -> RowPipeline:
    """``est`` fitted on ``train`` rows of the 3-class task (``_classification``)."""
    x, y = _classification(train)
    return _tabular(name, est, x, y, train, zipmap=zipmap)


def _on_values(name: str, est: Any, train: int = 400) -> RowPipeline:
    """``est`` fitted on ``train`` rows of the regression task (``_regression``)."""
    x, y = _regression(train)
    return _tabular(name, est, x, y, train)


def _decision_tree_zipmap() -> RowPipeline:
    from sklearn.tree import DecisionTreeClassifier

    return _on_classes("decision tree + ZipMap", DecisionTreeClassifier(max_depth=8,
                       random_state=0), zipmap=True)


def _random_forest_classifier() -> RowPipeline:
    from sklearn.ensemble import RandomForestClassifier

    return _on_classes("random forest classifier",
                       RandomForestClassifier(100, max_depth=10, random_state=0))


def _random_forest_regressor() -> RowPipeline:
    from sklearn.ensemble import RandomForestRegressor

    return _on_values("random forest regressor",
                      RandomForestRegressor(100, max_depth=10, random_state=0))


def _gradient_boosting() -> RowPipeline:
    from sklearn.ensemble import GradientBoostingClassifier

    return _on_classes("gradient boosting", GradientBoostingClassifier(
        n_estimators=100, random_state=0))


def _svc_rbf() -> RowPipeline:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    return _on_classes("SVC (RBF)", make_pipeline(StandardScaler(), SVC(
        probability=True, random_state=0)), 300)


def _logistic_regression_zipmap() -> RowPipeline:
    from sklearn.linear_model import LogisticRegression

    return _on_classes("logistic regression + ZipMap", LogisticRegression(max_iter=500),
                       zipmap=True)


def _mlp_classifier() -> RowPipeline:
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = _classification(400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # not converged: it does not matter here
        return _tabular("MLP classifier", make_pipeline(StandardScaler(), MLPClassifier(
            (64, 32), max_iter=200, random_state=0)), x, y, 400)


def _knn() -> RowPipeline:
    from sklearn.neighbors import KNeighborsClassifier

    return _on_classes("k-NN", KNeighborsClassifier(5), 500)


def _tfidf_text() -> RowPipeline:
    from onnx import helper
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    rng = np.random.default_rng(0)
    pets = "cat dog kitten puppy bird fish leash vet food toy".split()
    money = "stock bond price market fund bank loan rate cash tax".split()
    common = "the a of and to in is for on with".split()

    def doc(topic: list[str]) -> str:
        return " ".join(rng.choice(topic + common, size=int(rng.integers(4, 14))))

    topics = rng.integers(0, 2, 300 + ROWS)
    docs = [doc(money if t else pets) for t in topics]
    pipe = make_pipeline(TfidfVectorizer(), LogisticRegression(max_iter=500))
    pipe.fit(docs[:300], topics[:300])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_onnx(pipe, initial_types=[("input", StringTensorType([None, 1]))],
                        options={id(pipe.steps[-1][1]): {"zipmap": False}},
                        target_opset={"": 17, "ai.onnx.ml": 3})
    for node in model.graph.node:  # onnxruntime's default, en_US.UTF-8, is often not
        if node.op_type == "StringNormalizer":  # installed; the text is ASCII
            del node.attribute[:]
            node.attribute.extend([helper.make_attribute("case_change_action", "LOWER"),
                                   helper.make_attribute("locale", "C.UTF-8")])
    held = np.array(docs[300:], dtype=object).reshape(-1, 1)
    return RowPipeline("TF-IDF + linear text model", model, pipe, {"input": held},
                       lambda n: held[:n, 0])


def _scaler_linear_regression() -> RowPipeline:
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return _on_values("scaler + linear regression",
                      make_pipeline(StandardScaler(), LinearRegression()))


def _imputer_scaler_ridge() -> RowPipeline:
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = _regression(400)
    x[::5, 1] = np.nan
    x[::7, 4] = np.nan
    return _tabular("imputer + scaler + ridge", make_pipeline(
        SimpleImputer(), StandardScaler(), Ridge()), x, y, 400)


def _one_hot_logistic_regression() -> RowPipeline:
    import pandas as pd
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 400 + ROWS
    num = rng.standard_normal((n, 3)).astype(np.float32)
    cat = rng.choice(["red", "green", "blue", "grey"], size=(n, 2)).astype(object)
    y = ((num[:, 0] > 0) ^ (cat[:, 0] == "red")).astype(int) + (cat[:, 1] == "blue")
    cat[400::13, 1] = "purple"  # a category never seen in training: all zeros
    cols = {"a": num[:, 0:1], "b": num[:, 1:2], "c": num[:, 2:3], "u": cat[:, 0:1],
            "v": cat[:, 1:2]}
    frame = pd.DataFrame({k: v[:, 0] for k, v in cols.items()})
    pipe = Pipeline([
        ("prep", ColumnTransformer([
            ("num", StandardScaler(), ["a", "b", "c"]),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["u", "v"])])),
        ("clf", LogisticRegression(max_iter=500))]).fit(frame[:400], y[:400])
    types = [(c, FloatTensorType([None, 1])) for c in "abc"] + \
            [(c, StringTensorType([None, 1])) for c in "uv"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_onnx(pipe, initial_types=types, target_opset={"": 17, "ai.onnx.ml": 3})
    held = {k: np.ascontiguousarray(v[400:]) for k, v in cols.items()}
    return RowPipeline("one-hot + scaler + logistic regression + ZipMap", model, pipe, held,
                       lambda k: frame[400:400 + k])


def _normalizer_logistic_regression() -> RowPipeline:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    x, y = _classification(400, classes=4)
    return _tabular("normalizer + logistic regression (4 classes)", make_pipeline(
        Normalizer(), LogisticRegression(max_iter=500)), x, y, 400)


def _linear_svc() -> RowPipeline:
    from sklearn.svm import LinearSVC

    x, y = _classification(400, classes=4)
    return _tabular("linear SVC", LinearSVC(), x, y, 400)


def _linear_regression() -> RowPipeline:
    from sklearn.linear_model import LinearRegression

    return _on_values("linear regression", LinearRegression())


def _svr() -> RowPipeline:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR

    x, y = _regression(300)
    return _tabular("scaler + SVR (RBF)", make_pipeline(StandardScaler(), SVR(C=10.0)),
                    x, y, 300)


def _extra_trees() -> RowPipeline:
    from sklearn.ensemble import ExtraTreesRegressor

    return _on_values("extra trees regressor", ExtraTreesRegressor(
        50, max_depth=12, random_state=0))


def _hist_gradient_boosting() -> RowPipeline:
    from sklearn.ensemble import HistGradientBoostingClassifier

    x, y = _classification(400)
    x[::6, 2] = np.nan  # missing values go where training sent them
    est = HistGradientBoostingClassifier(max_iter=50, random_state=0)
    with _bools_as_ints():
        return _tabular("HistGradientBoosting (NaN)", est, x, y, 400)


def _gaussian_nb() -> RowPipeline:
    from sklearn.naive_bayes import GaussianNB

    return _on_classes("Gaussian naive Bayes", GaussianNB())


def _pca_logistic_regression() -> RowPipeline:
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    x, y = _classification(400, features=12)
    return _tabular("PCA + logistic regression", make_pipeline(
        PCA(5), LogisticRegression(max_iter=500)), x, y, 400)


def _minmax_knn_regressor() -> RowPipeline:
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler

    return _on_values("min-max scaler + k-NN regressor", make_pipeline(
        MinMaxScaler(), KNeighborsRegressor(4)), 300)


def _gradient_boosting_regressor() -> RowPipeline:
    from sklearn.ensemble import GradientBoostingRegressor

    return _on_values("gradient boosting regressor", GradientBoostingRegressor(
        n_estimators=100, random_state=0))


def _binarizer_bernoulli_nb() -> RowPipeline:
    from sklearn.naive_bayes import BernoulliNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Binarizer

    return _on_classes("binarizer + Bernoulli naive Bayes", make_pipeline(
        Binarizer(threshold=0.2), BernoulliNB()))


def _sgd_binary() -> RowPipeline:
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler

    x, y = _classification(400, classes=2)
    return _tabular("max-abs scaler + SGD binary + ZipMap", make_pipeline(
        MaxAbsScaler(), SGDClassifier(loss="log_loss", random_state=0)), x, y, 400,
        zipmap=True)


def _decision_tree_regressor() -> RowPipeline:
    from sklearn.tree import DecisionTreeRegressor

    return _on_values("decision tree regressor", DecisionTreeRegressor(
        max_depth=8, random_state=0))


def _kmeans() -> RowPipeline:
    from sklearn.cluster import KMeans

    x, _ = _classification(400)
    est = KMeans(6, n_init=3, random_state=0).fit(x[:400])
    held = np.ascontiguousarray(x[400:])
    return RowPipeline("k-means", _to_onnx(est, x), est, {"X": held}, lambda n: held[:n])


_PIPELINES: dict[str, Callable[[], RowPipeline]] = {
    f.__name__.lstrip("_"): f for f in (
        _decision_tree_zipmap, _random_forest_classifier, _random_forest_regressor,
        _gradient_boosting, _svc_rbf, _logistic_regression_zipmap, _mlp_classifier, _knn,
        _tfidf_text, _scaler_linear_regression, _imputer_scaler_ridge,
        _one_hot_logistic_regression, _normalizer_logistic_regression, _linear_svc,
        _linear_regression, _svr,
        _extra_trees, _hist_gradient_boosting, _gaussian_nb, _pca_logistic_regression,
        _minmax_knn_regressor, _gradient_boosting_regressor, _binarizer_bernoulli_nb,
        _sgd_binary, _decision_tree_regressor, _kmeans)}


def pipeline_names() -> list[str]:
    return list(_PIPELINES)


def pipeline(name: str) -> RowPipeline:
    """The named pipeline, trained and converted."""
    return _PIPELINES[name]()
