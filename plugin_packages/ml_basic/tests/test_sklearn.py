"""Real scikit-learn models and pipelines converted with skl2onnx (sklearn_models.py): labels
exactly and scores at rtol 1e-4 against onnxruntime (probabilities from ZipMap as lists of
dicts, pipelines that start with DictVectorizer fed dicts); one built into an engine file that
another process loads and runs, and one with a dict input and a list-of-dicts output run from
an engine file read back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from ml_support import assert_same, ort_session, run_ort

import mini_infer_core as mi

pytest.importorskip("sklearn", reason="scikit-learn is a test extra: pip install scikit-learn")
pytest.importorskip("skl2onnx", reason="skl2onnx is a test extra: pip install skl2onnx")

from sklearn_models import as_tree_ensemble, case_names, cases  # noqa: E402

ML_OPS = {"LinearClassifier", "LinearRegressor", "SVMClassifier", "SVMRegressor",
          "TreeEnsembleClassifier", "TreeEnsembleRegressor", "TreeEnsemble", "Scaler",
          "Normalizer", "Imputer", "Binarizer", "OneHotEncoder", "LabelEncoder",
          "ArrayFeatureExtractor", "FeatureVectorizer", "CategoryMapper", "ZipMap",
          "DictVectorizer"}


def test_there_are_enough_pipelines() -> None:
    assert len(case_names()) >= 12


@pytest.mark.parametrize("name", case_names())
def test_sklearn_model_matches_onnxruntime(name: str) -> None:
    case = cases(name)
    used = {n.op_type for n in case.model.graph.node if n.domain == "ai.onnx.ml"}
    assert used and used <= ML_OPS, f"{name} uses {used}"
    ours, theirs = mi.InferenceSession(case.model), ort_session(case.model)
    for feeds in case.runs():
        assert_same(ours.run(None, feeds), theirs.run(None, feeds), rtol=1e-4, atol=1e-5)


def test_the_models_cover_every_kernel_family() -> None:
    """Across the cases every family is exercised, so that a broken kernel cannot hide."""
    used: set[str] = set()
    for name in case_names():
        used |= {n.op_type for n in cases(name).model.graph.node
                 if n.domain == "ai.onnx.ml"}
    assert {"LinearClassifier", "LinearRegressor", "SVMClassifier", "SVMRegressor",
            "TreeEnsembleClassifier", "TreeEnsembleRegressor", "TreeEnsemble", "Scaler",
            "Normalizer", "Imputer", "Binarizer", "OneHotEncoder", "LabelEncoder", "ZipMap",
            "DictVectorizer"} <= used


def test_the_opset5_rewrite_is_the_same_forest() -> None:
    """The TreeEnsemble case is only as good as its rewrite: onnxruntime gives the legacy
    node's answer for it too."""
    case = cases("random_forest_regressor")
    legacy = run_ort(case.model, case.feeds)
    rewritten = run_ort(as_tree_ensemble(case.model), case.feeds)
    np.testing.assert_allclose(rewritten[0], legacy[0], rtol=1e-5, atol=1e-5)


_RUN_ENGINE = """
import sys
import numpy as np
import mini_infer_core as mi
sess = mi.InferenceSession(sys.argv[1])
feeds = dict(np.load(sys.argv[2], allow_pickle=False))
for i, out in enumerate(sess.run(None, feeds)):
    np.save(f"{sys.argv[3]}{i}.npy", np.asarray(out))
"""


def test_engine_built_here_runs_in_another_process(tmp_path: Path) -> None:
    case = cases("random_forest_classifier")
    model_path, engine_path = tmp_path / "rf.onnx", tmp_path / "rf.engine"
    onnx.save(case.model, str(model_path))
    engine = mi.load(str(model_path))
    engine.save(str(engine_path))
    np.savez(tmp_path / "feeds.npz", **case.feeds)
    subprocess.run([sys.executable, "-c", _RUN_ENGINE, str(engine_path),
                    str(tmp_path / "feeds.npz"), str(tmp_path / "out")], check=True,
                   capture_output=True, text=True, timeout=300)
    outs: list[Any] = [np.load(tmp_path / f"out{i}.npy") for i in range(2)]
    assert_same(outs, run_ort(case.model, case.feeds), rtol=1e-4, atol=1e-5)


def test_a_dict_in_and_dicts_out_through_an_engine_file(tmp_path: Path) -> None:
    """DictVectorizer's map input and ZipMap's sequence of maps output, from an engine
    written to disk and read back: the kinds survive the file, every run matches
    onnxruntime, and a wrong input is refused with the type expected."""
    case = cases("dict_vectorizer_random_forest")
    path = tmp_path / "dicts.engine"
    mi.InferenceSession(case.model).save_engine(path)
    sess, theirs = mi.InferenceSession(str(path)), ort_session(case.model)
    assert [i.type for i in sess.get_inputs()] == ["map(int64,tensor(float))"]
    (probs,) = [o for o in sess.get_outputs() if o.type.startswith("seq")]
    assert probs.type == "seq(map(int64,tensor(float)))"
    for feeds in case.runs():
        assert_same(sess.run(None, feeds), theirs.run(None, feeds), rtol=1e-4, atol=1e-5)
    with pytest.raises(mi.MiniInferError, match=r"map\(int64,tensor\(float\)\).*a dict"):
        sess.run(None, {"X": np.zeros(5, np.float32)})
