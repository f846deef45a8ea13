"""QuantizeLinear per tensor in its compiled pass (``mi_qquant_f32``, ``_qquant.c``), NCHW and
with an NHWC y (``TensorFormat.HWC``: a quantized CNN's NHWC region begins at its input's
QuantizeLinear), bit for bit against onnxruntime and onnx's ReferenceEvaluator (the spec; on
finite x: it casts an infinity to 0): saturation at both ends of uint8 and int8, the zero
points at the ends, halves (round half to even), infinities, one channel, three (the
image's), more channels than a tile holds, batches, 1 and 2 threads."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import quantize_linear
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from quant_support import ELEM, S8, U8

import mini_infer_core as mi
from mini_infer_core.plugin import PluginField, PluginFieldCollection, TensorFormat
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.testing import plugin_kit

RNG = np.random.default_rng(77)
F = TensorFormat

#: (n, c, h, w): an image (pooled at 2 threads), one channel, odd sizes, more channels than a
#: tile's pixels (8 KiB / c), a partial last tile, batches, 1x1
SHAPES = [(1, 3, 224, 224), (2, 5, 7, 9), (1, 1, 13, 13), (1, 64, 20, 20), (1, 200, 3, 3),
          (3, 3, 1, 1), (2, 3, 61, 67)]
ZEROS = {U8: (0, 255, 128), S8: (-128, 127, 0)}


def _plugin() -> Any:
    rec = mi.get_plugin_registry().get_creator("QuantizeLinear", "1", "mini_infer.cpu_native")
    assert rec is not None
    fields = PluginFieldCollection([PluginField.from_value("axis", 1),
                                    PluginField.from_value("saturate", 1),
                                    PluginField.from_value("block_size", 0)])
    return adapter.create(rec.creator, "q", fields)


def _oracles(x: np.ndarray, scale: np.ndarray, zp: np.ndarray, op: str = "QuantizeLinear",
             **attrs: Any) -> list[np.ndarray]:
    """onnxruntime's ``op`` (no graph optimization) and the ONNX reference's."""
    out = ELEM[zp.dtype] if op == "QuantizeLinear" else TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "s", "z"], ["y"], **attrs)], "g",
        [helper.make_tensor_value_info("x", ELEM[x.dtype], list(x.shape))],
        [helper.make_tensor_value_info("y", out, None)],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    (want,) = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    with np.errstate(invalid="ignore"):  # its cast of the infinities
        (spec,) = ReferenceEvaluator(model).run(None, {"x": x})
    return [want, spec]


def _x(shape: tuple[int, ...], scale: float) -> np.ndarray:
    """Values across and far beyond the range (saturating both ways), exact halves of the
    scale (a power of two: the division is exact, so rounding half to even decides), and
    infinities."""
    x = (RNG.standard_normal(shape) * 200 * scale).astype(np.float32)
    flat = x.reshape(-1)
    k = flat.size // 4
    flat[:k] = (RNG.integers(-300, 300, k) + 0.5).astype(np.float32) * np.float32(scale)
    if flat.size > 8:
        flat[-3:] = [np.inf, -np.inf, 0.0]
    return x


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [U8, S8])
def test_nhwc_and_nchw_match_onnxruntime(isa: str, threads: int, dtype: Any,
                                         shape: tuple[int, ...], count_calls: Any) -> None:
    """At every level of the integer GEMM this CPU runs (AVX-512 from avx512vnni on: its
    16-value quantizing pass; below, the C loops)."""
    calls = count_calls(quantize_linear, "_quant", "kernel")
    for zp in ZEROS[dtype]:
        for scale in (0.25, 0.0078125, 1.5):
            x = _x(shape, scale)
            s, z = np.array(scale, np.float32), np.array(zp, dtype)
            want, spec = _oracles(x, s, z)
            for fmt in (F.HWC, F.LINEAR):
                (got,) = plugin_kit.run_plugin(_plugin(), [x, s, z],
                                               formats=[F.LINEAR, F.LINEAR, F.LINEAR, fmt])
                finite = np.isfinite(x)
                np.testing.assert_array_equal(got[finite], spec[finite], err_msg=f"{zp} {fmt}")
                np.testing.assert_array_equal(got, want, err_msg=f"{zp} {scale} {fmt}")
    assert calls["kernel"] == 2 * 3 * len(ZEROS[dtype])


def test_nhwc_takes_one_scale_and_float_x_only() -> None:
    """Y may be NHWC only for a per-tensor quantization of float32 x into 8 bits, rank 4."""
    plugin = _plugin()

    def takes(x: tuple[tuple[int, ...], Any], s: tuple[int, ...], y: tuple[Any, int]) -> bool:
        descs = [mi.plugin.PluginTensorDesc(x[0], x[1], F.LINEAR),
                 mi.plugin.PluginTensorDesc(s, mi.plugin.DataType.FLOAT, F.LINEAR),
                 mi.plugin.PluginTensorDesc(s, y[0], F.LINEAR),
                 mi.plugin.PluginTensorDesc((1, 3, 4, 4)[:y[1]], y[0], F.HWC)]
        return bool(plugin.supports_format_combination(3, descs, 3))

    D = mi.plugin.DataType
    assert takes(((1, 3, 4, 4), D.FLOAT), (), (D.UINT8, 4))
    assert takes(((1, 3, 4, 4), D.FLOAT), (1,), (D.INT8, 4))
    assert not takes(((1, 3, 4, 4), D.FLOAT), (3,), (D.UINT8, 4))  # per channel
    assert not takes(((1, 3, 4), D.FLOAT), (), (D.UINT8, 3))  # rank 3
    assert not takes(((1, 3, 4, 4), D.HALF), (), (D.UINT8, 4))


def _qdq_conv(dtype: Any) -> onnx.ModelProto:
    """x -> Q/DQ -> Conv 3x3 (5 channels, s8 per-channel weights) -> Q/DQ: quantize_static's
    first layer, so its QuantizeLinear may write the integer conv's NHWC x directly."""
    zero = 0 if dtype == np.int8 else 128
    w = (RNG.standard_normal((5, 3, 3, 3)) * 0.4).astype(np.float32)
    ws = np.abs(w).reshape(5, -1).max(1) / 127
    inits = {"xs": np.array(0.03, np.float32), "xz": np.array(zero, dtype),
             "wq": np.rint(w / ws[:, None, None, None]).astype(np.int8),
             "ws": ws.astype(np.float32), "wz": np.zeros(5, np.int8),
             "cs": np.array(0.05, np.float32), "cz": np.array(zero + 3, dtype)}
    n = helper.make_node
    nodes = [n("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             n("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             n("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0),
             n("Conv", ["xd", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             n("QuantizeLinear", ["c", "cs", "cz"], ["cq"]),
             n("DequantizeLinear", ["cq", "cs", "cz"], ["y"])]
    graph = helper.make_graph(
        nodes, "stem", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 17, 19])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("dtype", [U8, S8])
def test_input_quantize_writes_the_convolutions_nhwc_x(dtype: Any) -> None:
    """The graph input's QuantizeLinear writes the integer convolution's NHWC x: no Reformat
    step between them; the output is onnxruntime's within one quantum. The formats by the
    cost model (timed, a group this small may go either way)."""
    model = _qdq_conv(dtype)
    engine = mi.load(model, config=mi.BuilderConfig(time_tactics=False))
    ops = [nd.op_type for nd in engine.nodes]
    i = ops.index("QuantizeLinear")
    assert ops[i + 1] == "QLinearConv", ops
    q = engine.nodes[i]
    assert engine.tensors[q.outputs[0]].format is F.HWC
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])
    for _ in range(2):
        x = RNG.standard_normal((2, 3, 17, 19)).astype(np.float32) * 3
        (got,) = mi.InferenceSession(engine).run(None, {"x": x})
        (want,) = sess.run(None, {"x": x})
        np.testing.assert_allclose(got, want, rtol=0, atol=0.05 * 1.0001)


def _axis_plugin(op: str, axis: int) -> Any:
    rec = mi.get_plugin_registry().get_creator(op, "1", "mini_infer.cpu_native")
    assert rec is not None
    fields = [PluginField.from_value("axis", axis), PluginField.from_value("block_size", 0)]
    if op == "QuantizeLinear":
        fields.append(PluginField.from_value("saturate", 1))
    return adapter.create(rec.creator, op, PluginFieldCollection(fields))


#: (shape, axis): NNCF's per-channel activations (axis 1), a batch, the axis counted from the
#: end, axis 0 of a matrix, small planes (7 x 7: MobileNetV2's last maps) and planes of 1
AXES = [((1, 6, 40, 40), 1), ((2, 3, 33, 35), 1), ((3, 4, 1100), -2), ((5, 1030), 0),
        ((1, 8, 4, 4), 1), ((2, 40, 7, 7), 1), ((2, 4, 1024), 2)]


@pytest.mark.parametrize(("shape", "axis"), AXES)
@pytest.mark.parametrize("dtype", [U8, S8])
def test_per_axis_quantize_and_dequantize_match_onnxruntime(
        isa: str, threads: int, dtype: Any, shape: tuple[int, ...], axis: int,
        count_calls: Any) -> None:
    """One scale and zero point per channel of ``axis``: QuantizeLinear's and
    DequantizeLinear's one compiled call over the planes give onnxruntime's bytes and floats
    bit for bit (the reference's too, on finite x), zero points at the ends of the type,
    scales from 1/128 to 1.5, saturation both ways, halves and infinities."""
    channels = shape[axis]
    lo, hi = (0, 255) if dtype == U8 else (-128, 127)
    zp = np.array([(lo, hi, (lo + hi) // 2)[i % 3] for i in range(channels)], dtype)
    scale = np.array([(0.25, 0.0078125, 1.5)[i % 3] for i in range(channels)], np.float32)
    x = _x(shape, 0.25)
    assert quantize_linear._per_axis(x, scale, zp, np.empty(shape, dtype), axis, 0) is not None
    calls = count_calls(quantize_linear, "_quant", "kernel")
    dcalls = count_calls(quantize_linear, "_dequant", "kernel")
    want, spec = _oracles(x, scale, zp, axis=axis)
    (got,) = plugin_kit.run_plugin(_axis_plugin("QuantizeLinear", axis), [x, scale, zp])
    finite = np.isfinite(x)
    np.testing.assert_array_equal(got[finite], spec[finite])
    np.testing.assert_array_equal(got, want)
    assert calls["kernel"] == 1  # every plane in one compiled call, whatever their size
    q = want
    want, spec = _oracles(q, scale, zp, "DequantizeLinear", axis=axis)
    (got,) = plugin_kit.run_plugin(_axis_plugin("DequantizeLinear", axis), [q, scale, zp])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, spec)
    assert dcalls["kernel"] == 1
