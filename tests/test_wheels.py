"""Real wheels in a fresh virtual environment: discovery, listing, a missing distribution."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import Venv, make_venv
from onnx import TensorProto, helper, numpy_helper

pytestmark = pytest.mark.slow


def test_fresh_venv_lists_cpu_plugins_with_distribution_and_version(fresh_venv: Venv) -> None:
    proc = fresh_venv.cli("plugins", "--json")
    data = json.loads(proc.stdout)
    creators = [c for c in data["creators"] if c["distribution"] == "mini-infer-cpu-plugins"]
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


@pytest.fixture(scope="module")
def native_venv(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, Path]) -> Venv:
    """Core, cpu_basic and the compiled cpu_native wheel (built here with the C compiler)."""
    return make_venv(tmp_path_factory, wheels, "core", "cpu", "native")


def test_compiled_plugins_outrank_numpy_ones_and_their_engine_needs_them(
        native_venv: Venv, tmp_path: Path) -> None:
    data = json.loads(native_venv.cli("plugins", "--json").stdout)
    native = {c["op_type"]: c for c in data["creators"]
              if c["distribution"] == "mini-infer-cpu-native"}
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
