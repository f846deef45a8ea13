"""The cuda Gemm absorbs a Relu after it (the schema's fusion, ``__relu__``) and still
computes what onnxruntime computes: on the NumPy path, on the GPU branch with the kernels
compiled for the host (a bias row or column and the Relu in one ``bias_act`` launch; other
C shapes by ufuncs), and (marked ``gpu``) on a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from cuda_support import NumpyDevice, cupy_or_skip, registry
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

pytest.importorskip("mini_infer_cpu_plugins", reason="the host plugins fold constants")

rng = np.random.default_rng(3)

#: (name, Gemm attributes, shape of A, shape of B, shape of C or None)
CASES = [
    ("bias-row", {"transB": 1}, (4, 6), (5, 6), (5,)),
    ("bias-column", {"beta": 1.0}, (4, 6), (6, 5), (4, 1)),
    ("full-c-beta", {"beta": 0.5, "alpha": 2.0}, (4, 6), (6, 5), (4, 5)),
    ("no-c", {"transA": 1}, (6, 4), (6, 5), None),
]


def _model(attrs: dict[str, Any], a: tuple[int, ...], b: tuple[int, ...],
           c: tuple[int, ...] | None) -> Any:
    inits = [numpy_helper.from_array(rng.standard_normal(b).astype(np.float32), "b")]
    inputs = ["a", "b"]
    if c is not None:
        inits.append(numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "c"))
        inputs.append("c")
    graph = helper.make_graph(
        [helper.make_node("Gemm", inputs, ["g"], **attrs), helper.make_node("Relu", ["g"], ["y"])],
        "gemm_relu", [helper.make_tensor_value_info("a", TensorProto.FLOAT, a)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def _check(case: tuple[Any, ...], cuda: Any) -> None:
    _, attrs, a, b, c = case
    model = _model(attrs, a, b, c)
    feeds = {"a": rng.standard_normal(a).astype(np.float32)}
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    sess = mi.InferenceSession(model, config=mi.BuilderConfig(device="cuda"),
                               registry=registry(cuda))
    assert [(n.op_type, n.device) for n in sess.engine.nodes] == [("Gemm", "cuda")]
    got = sess.run(None, feeds)[0]
    assert (want == 0).any()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gemm_relu_on_the_numpy_path_matches_onnxruntime(case: Any) -> None:
    _check(case, NumpyDevice("cuda"))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gemm_relu_on_the_host_compiled_gpu_branch_matches_onnxruntime(
        case: Any, emulated_gpu: Any) -> None:
    _check(case, NumpyDevice("cuda"))


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gemm_relu_on_the_gpu_matches_onnxruntime(case: Any) -> None:
    cupy_or_skip()
    _check(case, None)
