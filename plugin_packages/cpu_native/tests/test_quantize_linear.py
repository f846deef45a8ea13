"""The per-tensor float32 QuantizeLinear/DequantizeLinear (quantize_linear.py) against onnx's
ReferenceEvaluator (the spec: bit for bit) and onnxruntime (within one quantum for
QuantizeLinear, whose division may be a multiplication there; exact for DequantizeLinear):
saturation at 0/255 and -128/127, extreme zero points, sizes around the block, empty tensors,
and the cases handed to cpu_basic (per axis)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from mini_infer_cpu_native.quantize_linear import BLOCK
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core as mi

RNG = np.random.default_rng(31)


def _model(op: str, x_type: int, shape: list[int], scale: np.ndarray, zp: np.ndarray,
           axis: int = 1) -> Any:
    out_type = TensorProto.FLOAT if op == "DequantizeLinear" else \
        helper.np_dtype_to_tensor_dtype(zp.dtype)
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "s", "z"], ["y"], axis=axis)], "q",
        [helper.make_tensor_value_info("x", x_type, shape)],
        [helper.make_tensor_value_info("y", out_type, shape)],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "z")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)


def _ours(model: Any, x: np.ndarray) -> tuple[np.ndarray, list[str]]:
    engine = mi.load(model)
    (y,) = mi.InferenceSession(engine).run(None, {"x": x})
    return y, [nd.plugin_namespace for nd in engine.nodes]


@pytest.mark.parametrize("size", [0, 1, 7, BLOCK - 1, BLOCK, 2 * BLOCK + 5])
@pytest.mark.parametrize("zp", [np.uint8(0), np.uint8(128), np.uint8(255), np.int8(-128),
                                np.int8(0), np.int8(127)])
def test_quantize_linear(size: int, zp: np.generic) -> None:
    scale = np.array(0.5 if size % 2 else 0.0173, np.float32)
    x = (RNG.standard_normal(size) * 100 * scale).astype(np.float32)
    k = np.arange(size // 8, dtype=np.float32) - size // 16
    x[: size // 8] = (k + np.float32(0.5)) * scale  # halves: round half to even
    model = _model("QuantizeLinear", TensorProto.FLOAT, [size], scale, np.array(zp))
    got, where = _ours(model, x)
    assert where == ["mini_infer.cpu_native"]
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want)
    theirs = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.dtype == theirs.dtype
    assert np.all(np.abs(got.astype(np.int32) - theirs.astype(np.int32)) <= 1)
    if size > 100:  # saturation happened at both ends
        info = np.iinfo(got.dtype)
        assert got.min() == info.min or zp == info.min
        assert got.max() == info.max


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("size", [0, 5, BLOCK + 3])
def test_dequantize_linear(dtype: type, size: int) -> None:
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max + 1, size).astype(dtype)
    for zp in (info.min, 0 if info.min < 0 else 17, info.max):
        model = _model("DequantizeLinear", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                       [size], np.array(0.031, np.float32), np.array(zp, dtype))
        got, where = _ours(model, x)
        assert where == ["mini_infer.cpu_native"]
        want = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.testing.assert_array_equal(got, want)
        if size:  # the reference refuses an empty x
            np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, {"x": x})[0])


def test_per_axis_goes_to_cpu_basic_and_is_right() -> None:
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    model = _model("QuantizeLinear", TensorProto.FLOAT, [2, 3, 4],
                   np.array([0.1, 0.2, 0.3], np.float32), np.array([0, 10, 250], np.uint8))
    got, _ = _ours(model, x)
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, {"x": x})[0])
