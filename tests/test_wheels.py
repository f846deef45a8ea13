"""Real wheels in a fresh virtual environment: discovery, listing, a missing distribution."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import Venv, make_venv, ort_run
from onnx import TensorProto, helper, numpy_helper

pytestmark = pytest.mark.slow


def _listing(venv: Venv, distribution: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``mini-infer plugins --json`` run in ``venv``: the whole listing, and the creators that
    ``distribution`` registers."""
    data = json.loads(venv.cli("plugins", "--json").stdout)
    return data, [c for c in data["creators"] if c["distribution"] == distribution]


def test_fresh_venv_lists_cpu_plugins_with_distribution_and_version(fresh_venv: Venv) -> None:
    data, creators = _listing(fresh_venv, "mini-infer-cpu-plugins")
    ops = {c["op_type"] for c in creators}
    assert {"Conv", "Gemm", "Relu", "MaxPool", "BatchNormalization", "LRN"} <= ops
    assert all(c["distribution_version"] == "0.1.0" for c in creators)
    dist = {d["name"]: d for d in data["distributions"]}["mini-infer-cpu-plugins"]
    assert (dist["version"], dist["status"]) == ("0.1.0", "loaded")


def test_engine_fails_to_load_once_its_plugin_distribution_is_uninstalled(
        fresh_venv: Venv, small_cnn: onnx.ModelProto, tmp_path: Path) -> None:
    model, engine = tmp_path / "m.onnx", tmp_path / "m.engine"
    onnx.save(small_cnn, str(model))
    fresh_venv.cli("build", str(model), "-o", str(engine))
    fresh_venv.cli("run", str(engine), "--shape", "x=1,3,8,8")
    fresh_venv.pip("uninstall", "-y", "mini-infer-cpu-plugins")
    proc = fresh_venv.cli("run", str(engine), check=False)
    assert proc.returncode == 2
    assert "pip install mini-infer-cpu-plugins==0.1.0" in proc.stderr
    assert "PluginNotFoundError" in proc.stderr


def _venv_fixture(name: str, doc: str, *keys: str) -> Any:
    """A module-scoped fixture ``name``: a new virtual environment with the wheels ``keys``."""
    def fixture(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path]) -> Venv:
        return make_venv(tmp_path_factory, wheels, *keys)
    fixture.__doc__ = doc
    return pytest.fixture(scope="module", name=name)(fixture)


native_venv = _venv_fixture(
    "native_venv",
    "Core, cpu_basic and the compiled cpu_native wheel (built here with the C compiler).",
    "core", "cpu", "native")
ml_venv = _venv_fixture(
    "ml_venv",
    "Core, cpu_basic and the ai.onnx.ml wheel (its tree walk compiled here where it can be).",
    "core", "cpu", "ml")


def test_compiled_plugins_outrank_numpy_ones_and_their_engine_needs_them(
        native_venv: Venv, tmp_path: Path) -> None:
    _, creators = _listing(native_venv, "mini-infer-cpu-native")
    native = {c["op_type"]: c for c in creators}
    assert {"Conv", "MaxPool", "AveragePool"} <= set(native)
    assert all(c["priority"] > 0 for c in native.values())
    w = np.random.default_rng(0).standard_normal((4, 1, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], group=4, pads=[1, 1, 1, 1])], "dw",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")])
    model, engine = tmp_path / "dw.onnx", tmp_path / "dw.engine"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model))
    native_venv.cli("build", str(model), "-o", str(engine))
    native_venv.cli("run", str(engine))
    native_venv.pip("uninstall", "-y", "mini-infer-cpu-native")
    proc = native_venv.cli("run", str(engine), check=False)
    assert proc.returncode == 2
    assert "pip install mini-infer-cpu-native==0.1.0" in proc.stderr


def _tree_pipeline() -> onnx.ModelProto:
    """Scaler then a two-tree TreeEnsembleRegressor (ai.onnx.ml opset 3)."""
    ml = "ai.onnx.ml"
    nodes = [
        helper.make_node("Scaler", ["x"], ["s"], domain=ml, offset=[1.0, -1.0, 0.0],
                         scale=[0.5, 2.0, 1.0]),
        helper.make_node(
            "TreeEnsembleRegressor", ["s"], ["y"], domain=ml, n_targets=1,
            aggregate_function="SUM", base_values=[0.25],
            nodes_treeids=[0, 0, 0, 1, 1, 1], nodes_nodeids=[0, 1, 2, 0, 1, 2],
            nodes_featureids=[0, 0, 0, 2, 0, 0], nodes_values=[0.1, 0, 0, -0.3, 0, 0],
            nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_GT", "LEAF", "LEAF"],
            nodes_truenodeids=[1, 0, 0, 1, 0, 0], nodes_falsenodeids=[2, 0, 0, 2, 0, 0],
            target_treeids=[0, 0, 1, 1], target_nodeids=[1, 2, 1, 2], target_ids=[0] * 4,
            target_weights=[1.0, -2.0, 10.0, 20.0]),
    ]
    graph = helper.make_graph(
        nodes, "trees", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(ml, 3)])
    model.ir_version = 8
    return model


def test_ml_plugins_are_listed_run_a_pipeline_and_their_engine_needs_them(
        ml_venv: Venv, tmp_path: Path) -> None:
    data, creators = _listing(ml_venv, "mini-infer-ml-plugins")
    ml = {c["op_type"] for c in creators}
    assert {"TreeEnsembleRegressor", "TreeEnsemble", "LinearClassifier", "SVMClassifier",
            "Scaler", "LabelEncoder", "OneHotEncoder"} <= ml
    dist = {d["name"]: d for d in data["distributions"]}["mini-infer-ml-plugins"]
    assert (dist["version"], dist["status"]) == ("0.1.0", "loaded")
    model, engine, out = tmp_path / "t.onnx", tmp_path / "t.engine", tmp_path / "out"
    onnx.save(_tree_pipeline(), str(model))
    x = np.random.default_rng(0).standard_normal((64, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    ml_venv.cli("build", str(model), "-o", str(engine))
    ml_venv.cli("run", str(engine), "--input", f"x={tmp_path / 'x.npy'}",
                "--output-dir", str(out))
    (want,) = ort_run(_tree_pipeline(), {"x": x})
    np.testing.assert_allclose(np.load(out / "y.npy"), want, rtol=1e-6)
    ml_venv.pip("uninstall", "-y", "mini-infer-ml-plugins")
    proc = ml_venv.cli("run", str(engine), check=False)
    assert proc.returncode == 2
    assert "pip install mini-infer-ml-plugins==0.1.0" in proc.stderr
