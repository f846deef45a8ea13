"""``DequantizeLinear -> BatchNormalization [-> Relu|Clip] -> QuantizeLinear`` (per-tensor
parameters, an inference BatchNormalization of constants: DenseNet's after each Concat) becomes
mini-infer's ``QLinearChannelLookup`` of one 256-entry table per channel
(builder/qdq_lookup.py): every input value of every channel, saturating zero points of both
8-bit types, odd channel counts, against onnxruntime running the chain as written
(``ORT_DISABLE_ALL``: ONNX's semantics); NCHW (cpu_basic's kernel) and NHWC between two
integer convolutions (cpu_native's)."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core.plugin import PluginFieldCollection, TensorFormat
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.testing import plugin_kit

RNG = np.random.default_rng(2557)


def _ort(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any]:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def _bn(c: int) -> dict[str, np.ndarray]:
    return {"g": (RNG.standard_normal(c) * 1.5).astype(np.float32),
            "b": RNG.standard_normal(c).astype(np.float32),
            "m": (RNG.standard_normal(c) * 2).astype(np.float32),
            "v": (RNG.random(c) * 3 + 0.05).astype(np.float32)}


def _chain(c: int, dtype: Any, x_zero: int, y_zero: int, x_scale: float, y_scale: float,
           after: str | None) -> onnx.ModelProto:
    elem = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8
    inits = {"xs": np.array(x_scale, np.float32), "xz": np.array(x_zero, dtype),
             "ys": np.array(y_scale, np.float32), "yz": np.array(y_zero, dtype), **_bn(c)}
    if after == "Clip":
        inits |= {"lo": np.array(-0.3, np.float32), "hi": np.array(2.5, np.float32)}
    nodes = [helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("BatchNormalization", ["xd", "g", "b", "m", "v"], ["f"],
                              epsilon=1e-3)]
    if after == "Relu":
        nodes.append(helper.make_node("Relu", ["f"], ["f2"]))
    elif after == "Clip":
        nodes.append(helper.make_node("Clip", ["f", "lo", "hi"], ["f2"]))
    nodes.append(helper.make_node("QuantizeLinear", ["f2" if after else "f", "ys", "yz"], ["y"]))
    graph = helper.make_graph(
        nodes, "bn", [helper.make_tensor_value_info("xq", elem, [2, c, 8, 16])],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


PARAMS = [(np.uint8, 128, 0, 0.05, 0.01), (np.uint8, 0, 255, 0.1, 0.02),
          (np.uint8, 255, 128, 0.03, 0.04), (np.int8, 0, -128, 0.05, 0.01),
          (np.int8, -128, 127, 0.07, 0.03), (np.int8, 127, 3, 0.02, 0.05)]


def _every_value(c: int, dtype: Any) -> np.ndarray:
    """Each channel's 256 bit patterns, shuffled, once each (2 images of 8 x 16 pixels)."""
    x = np.stack([RNG.permutation(256) for _ in range(c)]).astype(np.uint8).view(dtype)
    return x.reshape(c, 2, 8, 16).transpose(1, 0, 2, 3).copy()


@pytest.mark.parametrize("after", [None, "Relu", "Clip"])
@pytest.mark.parametrize("c", [1, 5])
@pytest.mark.parametrize("dtype,x_zero,y_zero,x_scale,y_scale", PARAMS)
def test_every_value_of_every_channel_matches_onnxruntime(
        dtype: Any, x_zero: int, y_zero: int, x_scale: float, y_scale: float, c: int,
        after: str | None) -> None:
    model = _chain(c, dtype, x_zero, y_zero, x_scale, y_scale, after)
    x = _every_value(c, dtype)
    for ch in range(c):  # every pattern in every channel
        assert len(np.unique(x[:, ch])) == 256
    engine = mi.load(model)
    assert [nd.op_type for nd in engine.nodes] == ["QLinearChannelLookup"]
    (got,) = mi.InferenceSession(engine).run(None, {"xq": x})
    (want,) = _ort(model, {"xq": x})
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def _quantized_params(model: onnx.ModelProto) -> onnx.ModelProto:
    """BatchNormalization's scale and var as DequantizeLinear of int8 values, B and mean of
    int32 ones (as ``quantize_static`` writes DenseNet's, the var with a zero point)."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    nodes = []
    for name, dtype, zero in [("g", np.int8, 0), ("v", np.int8, -3), ("b", np.int32, 0),
                              ("m", np.int32, 7)]:
        v = inits.pop(name)
        scale = np.float32(np.abs(v).max() / (100 if dtype == np.int8 else 1e6))
        inits |= {f"{name}q": (np.rint(v / scale) + zero).astype(dtype),
                  f"{name}s": np.array(scale, np.float32), f"{name}z": np.array(zero, dtype)}
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}q", f"{name}s", f"{name}z"],
                                      [name]))
    del model.graph.initializer[:]
    model.graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in inits.items())
    rest = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend([*nodes, *rest])
    return model


@pytest.mark.parametrize("dtype,x_zero,y_zero,x_scale,y_scale", PARAMS[1::2])
def test_dequantized_parameters_as_quantize_static_writes_them(
        dtype: Any, x_zero: int, y_zero: int, x_scale: float, y_scale: float) -> None:
    model = _quantized_params(_chain(5, dtype, x_zero, y_zero, x_scale, y_scale, "Relu"))
    x = _every_value(5, dtype)
    engine = mi.load(model)
    assert [nd.op_type for nd in engine.nodes] == ["QLinearChannelLookup"]
    (got,) = mi.InferenceSession(engine).run(None, {"xq": x})
    (want,) = _ort(model, {"xq": x})
    np.testing.assert_array_equal(got, want)


def test_non_constant_parameters_keep_the_float_nodes() -> None:
    model = _chain(3, np.uint8, 3, 4, 0.05, 0.05, None)
    bn = model.graph.node[1]
    model.graph.initializer.pop(next(i for i, t in enumerate(model.graph.initializer)
                                     if t.name == "m"))
    model.graph.input.append(helper.make_tensor_value_info("m", TensorProto.FLOAT, [3]))
    assert bn.op_type == "BatchNormalization"
    ops = [nd.op_type for nd in mi.load(model).nodes]
    assert "QLinearChannelLookup" not in ops and "BatchNormalization" in ops, ops


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.4).astype(np.float32)


def _dense_block(dtype: Any) -> onnx.ModelProto:
    """QDQ by hand as quantize_static writes DenseNet: conv (7 channels) -> Q/DQ -> BN -> Relu
    -> Q/DQ -> conv, so the BN's 8-bit tensors may stay NHWC between the integer convs."""
    elem = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8
    zero = 0 if dtype == np.int8 else 128
    w1, w2 = _w(7, 3, 3, 3), _w(5, 7, 1, 1)
    s1, s2 = np.abs(w1).reshape(7, -1).max(1) / 127, np.abs(w2).reshape(5, -1).max(1) / 127
    inits = {
        "xs": np.array(0.04, np.float32), "xz": np.array(zero, dtype),
        "w1q": np.rint(w1 / s1[:, None, None, None]).astype(np.int8),
        "w1s": s1.astype(np.float32), "w1z": np.zeros(7, np.int8),
        "cs": np.array(0.05, np.float32), "cz": np.array(zero + 3, dtype),
        "rs": np.array(0.03, np.float32), "rz": np.array(-128 if dtype == np.int8 else 0, dtype),
        "w2q": np.rint(w2 / s2[:, None, None, None]).astype(np.int8),
        "w2s": s2.astype(np.float32), "w2z": np.zeros(5, np.int8), **_bn(7)}
    n = helper.make_node
    nodes = [
        n("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        n("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        n("DequantizeLinear", ["w1q", "w1s", "w1z"], ["w1"], axis=0),
        n("Conv", ["xd", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        n("QuantizeLinear", ["c1", "cs", "cz"], ["c1q"]),
        n("DequantizeLinear", ["c1q", "cs", "cz"], ["c1d"]),
        n("BatchNormalization", ["c1d", "g", "b", "m", "v"], ["bn"]),
        n("Relu", ["bn"], ["r"]),
        n("QuantizeLinear", ["r", "rs", "rz"], ["rq"]),
        n("DequantizeLinear", ["rq", "rs", "rz"], ["rd"]),
        n("DequantizeLinear", ["w2q", "w2s", "w2z"], ["w2"], axis=0),
        n("Conv", ["rd", "w2"], ["c2"]),
        n("QuantizeLinear", ["c2", "cs", "cz"], ["c2q"]),
        n("DequantizeLinear", ["c2q", "cs", "cz"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 9, 11])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    del elem
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_batch_norm_between_integer_convolutions_stays_8_bit(dtype: Any) -> None:
    model = _dense_block(dtype)
    engine = mi.load(model)
    ops = [nd.op_type for nd in engine.nodes]
    assert "QLinearChannelLookup" in ops and "BatchNormalization" not in ops, ops
    look = next(nd for nd in engine.nodes if nd.op_type == "QLinearChannelLookup")
    if importlib.util.find_spec("mini_infer_cpu_native") is not None and dtype == np.uint8:
        # its u8 integer convolutions and the tables take either format (the formats pass
        # picks one by its costs): no reformat between them, the lookup in the conv's format
        i = ops.index("QLinearChannelLookup")
        assert ops[i - 1:i + 2] == ["QLinearConv", "QLinearChannelLookup", "QLinearConv"], ops
        conv = engine.nodes[i - 1]
        assert engine.tensors[look.outputs[0]].format is engine.tensors[conv.outputs[0]].format
    for _ in range(2):
        x = RNG.standard_normal((2, 3, 9, 11)).astype(np.float32) * 2
        (got,) = mi.InferenceSession(engine).run(None, {"x": x})
        (want,) = _ort(model, {"x": x})
        np.testing.assert_allclose(got, want, rtol=0, atol=0.05 * 1.0001)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("ns,fmt", [("mini_infer.cpu_native", TensorFormat.HWC),
                                    ("mini_infer.cpu_native", TensorFormat.LINEAR),
                                    ("mini_infer.cpu", TensorFormat.LINEAR)])
def test_plugins_index_each_channels_table_nhwc_and_nchw(dtype: Any, ns: str,
                                                          fmt: TensorFormat) -> None:
    """cpu_native's compiled kernel and cpu_basic's NumPy one: channel ``c``'s table at each
    input's bit pattern, X NHWC (the tables along the last axis) and NCHW, odd channels."""
    if ns.endswith("native"):
        pytest.importorskip("mini_infer_cpu_native", reason="mini-infer-cpu-native not installed")
    rec = mi.get_plugin_registry().get_creator("QLinearChannelLookup", "1", ns)
    assert rec is not None
    plugin = adapter.create(rec.creator, "n", PluginFieldCollection([]))
    x = _every_value(5, dtype)
    table = RNG.integers(0, 256, (5, 256)).astype(np.uint8).view(dtype)
    (got,) = plugin_kit.run_plugin(plugin, [x, table], formats=[fmt, TensorFormat.LINEAR, fmt])
    want = table[np.arange(5)[None, :, None, None], x.view(np.uint8).astype(np.intp)]
    np.testing.assert_array_equal(got, want)
