"""The per-tensor float32 QuantizeLinear/DequantizeLinear (quantize_linear.py) against onnx's
ReferenceEvaluator (the spec: bit for bit) and onnxruntime (within one quantum for
QuantizeLinear, whose division may be a multiplication there; exact for DequantizeLinear):
saturation at 0/255 and -128/127, extreme zero points, sizes around the block, empty tensors,
and the cases handed to cpu_basic (per axis); the compiled kernel's NHWC output (what the
builder negotiates before an integer convolution) against the reference transposed."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import quantize_linear
from mini_infer_cpu_native.quantize_linear import BLOCK
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core as mi
from mini_infer_core.plugin import PluginFieldCollection, TensorFormat
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.testing import plugin_kit

RNG = np.random.default_rng(31)
F = TensorFormat


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


def _q_plugin() -> Any:
    rec = mi.get_plugin_registry().get_creator("QuantizeLinear", "1", "mini_infer.cpu_native")
    assert rec is not None
    return adapter.create(rec.creator, "q", PluginFieldCollection([]))


#: (n, c, h, w): the stem's 3 colours (pixels past a 256-pixel block), channels past the
#: kernel's 16 rows, one pixel, one channel
NHWC_SHAPES = [(2, 3, 17, 19), (1, 20, 9, 31), (3, 5, 1, 1), (1, 1, 16, 17)]


@pytest.mark.parametrize("shape", NHWC_SHAPES)
@pytest.mark.parametrize("zp", [np.uint8(0), np.uint8(255), np.uint8(128), np.int8(-128),
                                np.int8(127), np.int8(0)])
def test_nhwc_output_is_the_reference_transposed(shape: tuple[int, ...], zp: np.generic,
                                                 count_calls: Any) -> None:
    """An NCHW float32 x quantized straight into an NHWC y (as the builder negotiates it
    before an integer convolution): the spec's bytes, transposed; saturating values and
    halves (round half to even) among them."""
    calls = count_calls(quantize_linear, "_quantize_f32", "kernel")
    scale = np.array(0.0173, np.float32)
    x = (RNG.standard_normal(shape) * 100 * scale).astype(np.float32)
    flat = x.reshape(-1)
    k = np.arange(flat.size // 4, dtype=np.float32) - flat.size // 8
    flat[: flat.size // 4] = (k + np.float32(0.5)) * scale
    flat[-1], flat[0] = 1e3, -1e3  # (the reference casts to int32 before it clips)
    model = _model("QuantizeLinear", TensorProto.FLOAT, list(shape), scale, np.array(zp))
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    (got,) = plugin_kit.run_plugin(_q_plugin(), [x, scale, np.array(zp)],
                                   formats=[F.LINEAR, F.LINEAR, F.LINEAR, F.HWC])
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert calls["kernel"] == 1
    info = np.iinfo(got.dtype)
    assert got.min() == info.min and got.max() == info.max


def test_nhwc_output_of_a_scale_the_kernel_does_not_take() -> None:
    """A negative scale (the spec divides by it all the same) goes to NumPy, then the NHWC
    copy."""
    x = RNG.standard_normal((1, 3, 5, 7)).astype(np.float32) * 4
    scale, zp = np.array(-0.05, np.float32), np.array(3, np.uint8)
    model = _model("QuantizeLinear", TensorProto.FLOAT, [1, 3, 5, 7], scale, zp)
    (got,) = plugin_kit.run_plugin(_q_plugin(), [x, scale, zp],
                                   formats=[F.LINEAR, F.LINEAR, F.LINEAR, F.HWC])
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, {"x": x})[0])


def test_nhwc_is_offered_for_per_tensor_float32_only() -> None:
    """Per axis (a scale of several values) or a rank other than 4 keeps LINEAR."""
    from mini_infer_core.plugin import DataType, PluginTensorDesc

    plugin = _q_plugin()

    def descs(scale: tuple[int, ...], shape: tuple[int, ...]) -> list[PluginTensorDesc]:
        return [PluginTensorDesc(shape, DataType.FLOAT, F.LINEAR),
                PluginTensorDesc(scale, DataType.FLOAT, F.LINEAR),
                PluginTensorDesc(scale, DataType.UINT8, F.LINEAR),
                PluginTensorDesc(shape, DataType.UINT8, F.HWC)]

    assert plugin.supports_format_combination(3, descs((), (1, 3, 4, 4)), 3)
    assert not plugin.supports_format_combination(3, descs((3,), (1, 3, 4, 4)), 3)
    assert not plugin.supports_format_combination(3, descs((), (3, 4, 4)), 3)
