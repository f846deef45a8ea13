"""QDQ fusion of what sits between the products (builder/qdq_ops.py): models quantized by
onnxruntime's ``quantize_static`` (QDQ, u8 activations, s8 per-channel weights) with residual
Adds, squeeze-and-excitation blocks (GlobalAveragePool, Sigmoid, Mul), pooling, Concat and
LeakyRelu run with those operators as ``com.microsoft`` QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat and
QLinearLeakyRelu and MaxPool on uint8, and give onnxruntime's outputs within a quantum of the
output; a device without those plugins keeps the float nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from helpers import make_model, qdq_output_scale, quantize_qdq
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

RNG = np.random.default_rng(2527)
SHAPE = (2, 4, 12, 12)


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.4).astype(np.float32)


def _float_model() -> onnx.ModelProto:
    """conv -> relu -> (conv) + residual -> SE (GAP, 1x1 conv, Sigmoid, Mul) -> MaxPool,
    AveragePool -> Concat -> LeakyRelu -> conv."""
    inits = {"w1": _w(8, 4, 3, 3), "b1": _w(8), "w2": _w(8, 8, 3, 3), "b2": _w(8),
             "w3": _w(8, 8, 1, 1), "b3": _w(8), "w4": _w(5, 16, 3, 3), "b4": _w(5)}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["a"]),
        helper.make_node("GlobalAveragePool", ["a"], ["g"]),
        helper.make_node("Conv", ["g", "w3", "b3"], ["s"]),
        helper.make_node("Sigmoid", ["s"], ["sg"]),
        helper.make_node("Mul", ["a", "sg"], ["se"]),
        helper.make_node("MaxPool", ["se"], ["mp"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("AveragePool", ["se"], ["ap"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Concat", ["mp", "ap"], ["cat"], axis=1),
        helper.make_node("LeakyRelu", ["cat"], ["lr"], alpha=0.1),
        helper.make_node("Conv", ["lr", "w4", "b4"], ["y"], pads=[1, 1, 1, 1]),
    ]
    return make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])


@pytest.fixture(scope="module")
def quantized(tmp_path_factory: pytest.TempPathFactory) -> onnx.ModelProto:
    tmp: Path = tmp_path_factory.mktemp("qdq_ops")
    return quantize_qdq(_float_model(), tmp,
                        [RNG.standard_normal(SHAPE).astype(np.float32) for _ in range(4)],
                        per_channel=True, extra_options={"ActivationSymmetric": False})


def _run(model: onnx.ModelProto, x: np.ndarray) -> tuple[list[Any], list[str]]:
    engine = mi.load(model)
    got = mi.InferenceSession(engine).run(None, {"x": x})
    return got, [nd.op_type for nd in engine.nodes]


def test_between_ops_become_integer_and_match_onnxruntime(quantized: onnx.ModelProto) -> None:
    ops_in = {n.op_type for n in quantized.graph.node}
    assert {"Add", "Mul", "Sigmoid", "GlobalAveragePool", "MaxPool", "AveragePool", "Concat",
            "LeakyRelu"} <= ops_in  # quantize_static put them between QDQ pairs
    def ort_at(level: ort.GraphOptimizationLevel) -> ort.InferenceSession:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = level
        return ort.InferenceSession(quantized.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])

    # onnxruntime unoptimized runs the graph as written (float between the QDQ pairs);
    # optimized, its own integer kernels, which differ from that by a quantum or two
    plain = ort_at(ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    fused = ort_at(ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    q = qdq_output_scale(quantized)
    for _ in range(3):
        x = RNG.standard_normal(SHAPE).astype(np.float32)
        got, ops = _run(quantized, x)
        (want,) = plain.run(None, {"x": x})
        np.testing.assert_allclose(got[0], want, rtol=0, atol=q * 1.0001)
        (theirs,) = fused.run(None, {"x": x})
        spread = float(np.abs(theirs - want).max())
        np.testing.assert_allclose(got[0], theirs, rtol=0, atol=max(q, spread) * 1.0001)
    for op in ("QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearGlobalAveragePool",
               "QLinearAveragePool", "QLinearConcat", "QLinearLeakyRelu", "QMaxPool"):
        assert op in ops, (op, ops)
    # no float operator is left between the integer ones: only the graph's edges
    assert ops.count("DequantizeLinear") == 1 and ops.count("QuantizeLinear") == 1, ops
    assert not {"Add", "Mul", "Sigmoid", "GlobalAveragePool", "AveragePool", "Concat",
                "LeakyRelu"} & set(ops), ops


def test_without_the_integer_plugins_the_float_nodes_stay(quantized: onnx.ModelProto) -> None:
    from mini_infer_core.builder.rewrite import rewrite
    from mini_infer_core.importer import parse_onnx

    network = parse_onnx(quantized)
    ops = [n.op_type for n in rewrite(network, integer=lambda op: "::" not in op)[0].nodes]
    assert "QLinearAdd" not in ops and "Add" in ops and "Concat" in ops
    assert "MaxPool" in ops  # MaxPool of the 8-bit tensor needs no contrib operator
    ops = [n.op_type for n in rewrite(network)[0].nodes]
    assert "QLinearAdd" in ops and "Add" not in ops


def _same_as_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[str]:
    """Our engine's one output on ``feeds`` equals onnxruntime's, bit for bit; the engine's
    operators."""
    engine = mi.load(model)
    (got,) = mi.InferenceSession(engine).run(None, feeds)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_array_equal(got, want)
    return [nd.op_type for nd in engine.nodes]


def _hand_maxpool(x_zero: int, y_zero: int, dtype: Any) -> onnx.ModelProto:
    elem = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8
    inits = {"s": np.array(0.05, np.float32), "zx": np.array(x_zero, dtype),
             "zy": np.array(y_zero, dtype)}
    nodes = [helper.make_node("DequantizeLinear", ["xq", "s", "zx"], ["xd"]),
             helper.make_node("MaxPool", ["xd"], ["m"], kernel_shape=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["m", "s", "zy"], ["y"])]
    return make_model(
        nodes, [helper.make_tensor_value_info("xq", elem, [1, 3, 5, 5])],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])


@pytest.mark.parametrize("dtype,x_zero,y_zero,fused", [
    (np.uint8, 0, 0, True), (np.uint8, 255, 255, True), (np.int8, -128, -128, True),
    (np.int8, 127, 127, True), (np.uint8, 3, 4, False)])
def test_maxpool_on_8_bits_where_the_parameters_agree(dtype: Any, x_zero: int, y_zero: int,
                                                      fused: bool) -> None:
    """The padding reads nothing (all-negative int8 windows at the border); a zero point that
    differs keeps the float MaxPool between the pair."""
    model = _hand_maxpool(x_zero, y_zero, dtype)
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, int(info.max) + 1, (1, 3, 5, 5)).astype(dtype)
    x[0, 0] = info.min  # a saturated channel
    ops = _same_as_onnxruntime(model, {"xq": x})
    assert (ops == ["QMaxPool"]) == fused, ops


def test_mixed_types_keep_their_float_nodes() -> None:
    """An Add of int8 and uint8 graph inputs, a Relu and a uint8 output. QLinearAdd's
    output has A's type, so the chain keeps its float nodes (and onnxruntime's values); NNCF's
    residual Adds, whose int8 input is a QuantizeLinear's, run as uint8 (test_qdq_prepare.py)."""
    inits = {"sa": np.array(0.02, np.float32), "za": np.array(0, np.int8),
             "sb": np.array(0.01, np.float32), "zb": np.array(0, np.uint8),
             "sy": np.array(0.03, np.float32), "zy": np.array(0, np.uint8)}
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["ad"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bd"]),
             helper.make_node("Add", ["ad", "bd"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "sy", "zy"], ["y"])]
    model = make_model(
        nodes, [helper.make_tensor_value_info("a", TensorProto.INT8, [1, 3, 4, 4]),
                helper.make_tensor_value_info("b", TensorProto.UINT8, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    feeds = {"a": RNG.integers(-128, 128, (1, 3, 4, 4)).astype(np.int8),
             "b": RNG.integers(0, 256, (1, 3, 4, 4)).astype(np.uint8)}
    assert "QLinearAdd" not in _same_as_onnxruntime(model, feeds)


def test_moves_run_on_8_bits_where_the_parameters_agree() -> None:
    """DequantizeLinear -> Transpose -> QuantizeLinear with equal parameters is a Transpose of
    the uint8 tensor; a Reshape between different zero points keeps its float nodes."""
    inits = {"s": np.array(0.05, np.float32), "z": np.array(7, np.uint8),
             "z2": np.array(9, np.uint8), "shape": np.array([2, -1], np.int64)}
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xd"]),
             helper.make_node("Transpose", ["xd"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("QuantizeLinear", ["t", "s", "z"], ["tq"]),
             helper.make_node("DequantizeLinear", ["tq", "s", "z"], ["td"]),
             helper.make_node("Reshape", ["td", "shape"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s", "z2"], ["y"])]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    x = RNG.integers(0, 256, (2, 3, 4, 5)).astype(np.uint8)
    ops = _same_as_onnxruntime(model, {"x": x})
    assert ops.count("DequantizeLinear") == 1 and ops.count("QuantizeLinear") == 1, ops
    assert "Transpose" in ops and "Reshape" in ops
