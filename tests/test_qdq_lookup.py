"""``DequantizeLinear -> HardSigmoid|HardSwish|Relu|Clip|Tanh|Elu -> QuantizeLinear`` becomes
mini-infer's ``QLinearLookup`` of a 256-entry table (builder/qdq_lookup.py): every input value,
saturating zero points of both 8-bit types, against onnxruntime running the chain as written
(``ORT_DISABLE_ALL``: ONNX's semantics); and a MobileNetV3-like block quantized by
``quantize_static`` (odd channel counts) keeps 8 bits from one convolution to the next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from helpers import make_model, quantize_qdq
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

RNG = np.random.default_rng(2531)


def _ort(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any]:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def _chain(op: str, attrs: dict[str, Any], extra: dict[str, np.ndarray], dtype: Any,
           x_zero: int, y_zero: int, x_scale: float, y_scale: float) -> onnx.ModelProto:
    elem = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8
    inits = {"xs": np.array(x_scale, np.float32), "xz": np.array(x_zero, dtype),
             "ys": np.array(y_scale, np.float32), "yz": np.array(y_zero, dtype), **extra}
    nodes = [helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node(op, ["xd", *extra], ["f"], **attrs),
             helper.make_node("QuantizeLinear", ["f", "ys", "yz"], ["y"])]
    return make_model(
        nodes, [helper.make_tensor_value_info("xq", elem, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])


_CLIP = {"lo": np.array(-0.5, np.float32), "hi": np.array(0.75, np.float32)}
FUNCTIONS = [("HardSigmoid", {}, {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, {}),
             ("HardSwish", {}, {}), ("Relu", {}, {}), ("Clip", {}, _CLIP), ("Tanh", {}, {}),
             ("Elu", {"alpha": 0.7}, {})]
PARAMS = [(np.uint8, 128, 0, 0.05, 0.01), (np.uint8, 0, 255, 0.1, 0.02),
          (np.uint8, 255, 128, 0.03, 0.004), (np.int8, 0, -128, 0.05, 0.01),
          (np.int8, -128, 127, 0.07, 0.03), (np.int8, 127, 3, 0.02, 0.05)]


@pytest.mark.parametrize("op,attrs,extra", FUNCTIONS, ids=[f"{f[0]}{i}" for i, f in
                                                             enumerate(FUNCTIONS)])
@pytest.mark.parametrize("dtype,x_zero,y_zero,x_scale,y_scale", PARAMS)
def test_every_value_matches_onnxruntime(op: str, attrs: dict[str, Any],
                                         extra: dict[str, np.ndarray], dtype: Any, x_zero: int,
                                         y_zero: int, x_scale: float, y_scale: float) -> None:
    model = _chain(op, attrs, extra, dtype, x_zero, y_zero, x_scale, y_scale)
    # all 256 bit patterns, shuffled, one each
    x = RNG.permutation(np.arange(256, dtype=np.uint8)).view(dtype).reshape(1, 4, 8, 8)
    engine = mi.load(model)
    (got,) = mi.InferenceSession(engine).run(None, {"xq": x})
    (want,) = _ort(model, {"xq": x})
    np.testing.assert_array_equal(got, want)
    assert [nd.op_type for nd in engine.nodes] == ["QLinearLookup"]


def test_other_types_out_or_non_constant_bounds_keep_the_float_nodes() -> None:
    model = _chain("Clip", {}, _CLIP, np.uint8, 3, 4, 0.05, 0.05)
    model.graph.initializer.pop()  # "hi" becomes a graph input: not a constant
    model.graph.input.append(helper.make_tensor_value_info("hi", TensorProto.FLOAT, []))
    ops = [nd.op_type for nd in mi.load(model).nodes]
    assert "QLinearLookup" not in ops and "Clip" in ops, ops


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.4).astype(np.float32)


def _block() -> onnx.ModelProto:
    """conv (5 channels) -> HardSwish (as torch exports it: x * HardSigmoid(x)) -> depthwise
    conv -> HardSigmoid -> Tanh -> conv."""
    inits = {"v1": _w(5, 3, 3, 3), "c1b": _w(5), "v2": _w(5, 1, 3, 3), "c2b": _w(5),
             "v3": _w(7, 5, 1, 1), "c3b": _w(7)}
    nodes = [
        helper.make_node("Conv", ["x", "v1", "c1b"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("HardSigmoid", ["c1"], ["h1"], alpha=1 / 6, beta=0.5),
        helper.make_node("Mul", ["c1", "h1"], ["hs"]),
        helper.make_node("Conv", ["hs", "v2", "c2b"], ["c2"], pads=[1, 1, 1, 1], group=5),
        helper.make_node("HardSigmoid", ["c2"], ["h2"]),
        helper.make_node("Tanh", ["h2"], ["t"]),
        helper.make_node("Conv", ["t", "v3", "c3b"], ["y"]),
    ]
    return make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 9, 11])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])


def test_quantized_block_stays_8_bit_and_matches_onnxruntime(tmp_path: Path) -> None:
    model = quantize_qdq(_block(), tmp_path,
                         [RNG.standard_normal((2, 3, 9, 11)).astype(np.float32) * 2
                          for _ in range(4)],
                         per_channel=True, extra_options={"ActivationSymmetric": False})
    assert {"HardSigmoid", "Tanh"} <= {n.op_type for n in model.graph.node}
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    last_dq = next(n for n in model.graph.node if "y" in n.output)
    assert last_dq.op_type == "DequantizeLinear"
    q = float(inits[last_dq.input[1]])  # the output's quantum
    engine = mi.load(model)
    ops = [nd.op_type for nd in engine.nodes]
    # the HardSigmoid of HardSwish, and HardSigmoid -> Tanh (no QDQ pair between: one table)
    assert ops.count("QLinearLookup") == 2, " ".join(ops)
    assert "HardSigmoid" not in ops and "Tanh" not in ops, ops
    assert ops.count("DequantizeLinear") == 1 and ops.count("QuantizeLinear") == 1, ops
    for _ in range(2):
        x = RNG.standard_normal((2, 3, 9, 11)).astype(np.float32) * 2
        (got,) = mi.InferenceSession(engine).run(None, {"x": x})
        (want,) = _ort(model, {"x": x})
        np.testing.assert_allclose(got, want, rtol=0, atol=q * 1.0001)


@pytest.mark.parametrize("dtype,x_zero,h_zero,y_zero,x_scale,y_scale", [
    (np.uint8, 128, 0, 7, 0.05, 0.03), (np.uint8, 3, 0, 140, 0.04, 0.02),
    (np.uint8, 255, 0, 255, 0.1, 0.01)])
def test_x_times_its_lookup_is_one_lookup(dtype: Any, x_zero: int, h_zero: int, y_zero: int,
                                          x_scale: float, y_scale: float) -> None:
    """torch's HardSwish as MobileNetV3 exports it, ``x * HardSigmoid(x)`` between QDQ pairs
    (x's DequantizeLinear read by both): the HardSigmoid's lookup and the QLinearMul become one
    QLinearLookup of x; every input value against onnxruntime running the chain as written."""
    elem = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8
    inits = {"xs": np.array(x_scale, np.float32), "xz": np.array(x_zero, dtype),
             "hs": np.array(1 / 255, np.float32), "hz": np.array(h_zero, dtype),
             "ys": np.array(y_scale, np.float32), "yz": np.array(y_zero, dtype)}
    n = helper.make_node
    nodes = [n("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             n("HardSigmoid", ["xd"], ["h"], alpha=1 / 6, beta=0.5),
             n("QuantizeLinear", ["h", "hs", "hz"], ["hq"]),
             n("DequantizeLinear", ["hq", "hs", "hz"], ["hd"]),
             n("Mul", ["xd", "hd"], ["m"]),
             n("QuantizeLinear", ["m", "ys", "yz"], ["y"])]
    model = make_model(
        nodes, [helper.make_tensor_value_info("xq", elem, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    x = RNG.permutation(np.arange(256, dtype=np.uint8)).view(dtype).reshape(1, 4, 8, 8)
    engine = mi.load(model)
    assert [nd.op_type for nd in engine.nodes] == ["QLinearLookup"]
    (got,) = mi.InferenceSession(engine).run(None, {"xq": x})
    (want,) = _ort(model, {"xq": x})
    # the float chain rounds the product once, the integer one its factors: a quantum at most
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
