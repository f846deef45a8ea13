"""``mini_infer_core.testing.bench.openvino_runner``: the OpenVINO anchor the benchmarks share
(``benchmarks/zoo.py``, ``benchmarks/quantized.py``), checked against onnxruntime."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mini_infer_core.testing.bench import openvino_runner, ort_session


def _conv_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])],
        "conv_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 9, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _feeds() -> dict[str, Any]:
    return {"x": np.random.default_rng(1).standard_normal((2, 3, 9, 7)).astype(np.float32)}


def _rel(a: Any, b: Any) -> float:
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / np.linalg.norm(b))


@pytest.mark.parametrize("as_file", [False, True])
def test_f32_matches_onnxruntime(tmp_path: Path, as_file: bool) -> None:
    pytest.importorskip("openvino", reason="OpenVINO is an optional anchor (pip install openvino)")
    model = _conv_model()
    source: Any = model
    if as_file:
        source = tmp_path / "conv.onnx"
        onnx.save(model, str(source))
    run = openvino_runner(source, threads=1, precision="f32")
    assert run is not None
    expected = ort_session(model, threads=1).run(None, _feeds())[0]
    got = run(_feeds())
    assert list(got) == ["y"]
    assert got["y"].shape == expected.shape
    assert _rel(got["y"], expected) < 1e-5


def test_default_precision_runs_near_onnxruntime() -> None:
    """OpenVINO's default may be bf16 (AVX512_BF16/AMX CPUs): close, not exact."""
    pytest.importorskip("openvino", reason="OpenVINO is an optional anchor (pip install openvino)")
    model = _conv_model()
    run = openvino_runner(model, threads=2, precision=None)
    assert run is not None
    expected = ort_session(model, threads=1).run(None, _feeds())[0]
    assert _rel(run(_feeds())["y"], expected) < 3e-2


def test_none_without_openvino(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino raises ImportError
    assert openvino_runner(_conv_model(), threads=1) is None
