"""QDQ fusion (builder/qdq.py, in the rewrite pass): models quantized by onnxruntime's own
``quantize_static`` (QDQ format, u8 activations, s8 weights per tensor and per channel) run as
QLinearConv/QLinearMatMul (a Gemm as a 1x1 QLinearConv) and give onnxruntime's outputs within
one quantum of the output; chains that cannot be fused (a Relu the output's quantization does
not clip, a Conv output read by another node too) keep their float nodes and still give
onnxruntime's outputs."""

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

RNG = np.random.default_rng(2526)


def _float_model(trans_b: int = 1) -> onnx.ModelProto:
    """Conv+Relu, a grouped Conv, a depthwise Conv+Relu, a 1x1 Conv, a MatMul, a Gemm."""
    def w(*shape: int) -> np.ndarray:
        return (RNG.standard_normal(shape) * 0.3).astype(np.float32)

    inits = {"w1": w(8, 3, 3, 3), "b1": w(8), "w2": w(8, 4, 3, 3), "b2": w(8),
             "w3": w(8, 1, 3, 3), "b3": w(8), "w4": w(6, 8, 1, 1), "b4": w(6),
             "shape": np.array([2, -1], np.int64), "wm": w(6 * 5 * 5, 7),
             "wg": w(5, 7) if trans_b else w(7, 5), "bg": w(5)}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], group=2, strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c2", "w3", "b3"], ["c3"], group=8, pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("Conv", ["r3", "w4", "b4"], ["c4"]),
        helper.make_node("Reshape", ["c4", "shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "wm"], ["m"]),
        helper.make_node("Gemm", ["m", "wg", "bg"], ["y"], transB=trans_b),
    ]
    return make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])


def _quantized(tmp_path: Path, per_channel: bool, trans_b: int = 1) -> onnx.ModelProto:
    return quantize_qdq(_float_model(trans_b), tmp_path,
                        [RNG.standard_normal((2, 3, 10, 10)).astype(np.float32)
                         for _ in range(4)], per_channel=per_channel)


def _compare(model: onnx.ModelProto, tol: float) -> dict[str, Any]:
    x = RNG.standard_normal((2, 3, 10, 10)).astype(np.float32)
    engine = mi.load(model)
    got = mi.InferenceSession(engine).run(None, {"x": x})
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=tol)
    return {"ops": [nd.op_type for nd in engine.nodes], **engine.build_info}


@pytest.mark.parametrize("per_channel,trans_b", [(False, 1), (True, 1), (True, 0)])
def test_quantize_static_runs_int8(tmp_path: Path, per_channel: bool, trans_b: int) -> None:
    model = _quantized(tmp_path, per_channel, trans_b)
    info = _compare(model, qdq_output_scale(model) * 1.0001)
    assert info["ops"].count("QLinearConv") == 5, info["ops"]  # the Gemm's a 1x1 one
    assert info["ops"].count("QLinearMatMul") == 1, info["ops"]
    assert not {"Conv", "MatMul", "Gemm"} & set(info["ops"]), info["ops"]
    assert "Relu" not in info["ops"]  # both absorbed: their outputs' zero points are 0


def _hand_qdq(y_zero: int, conv_out: bool = False, clip: tuple[float, float] | None = None,
              y_scale: float = 0.02) -> onnx.ModelProto:
    """x -> Q -> DQ -> Conv(DQ(w)) -> Relu (or Clip) -> Q(y_zero) -> DQ, by hand (the Conv's
    float output a graph output too where ``conv_out``)."""
    inits = {"xs": np.array(0.02, np.float32), "xz": np.array(0, np.uint8),
             "wq": RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
             "ws": np.full(4, 0.01, np.float32), "wz": np.zeros(4, np.int8),
             "ys": np.array(y_scale, np.float32), "yz": np.array(y_zero, np.uint8),
             "lo": np.array(clip[0] if clip else 0, np.float32),
             "hi": np.array(clip[1] if clip else 0, np.float32)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], axis=1),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], axis=1),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["c", "lo", "hi"], ["r"]) if clip
             else helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(
        nodes, "hand", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 10, 10])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
         for n in ["y", "c"][:1 + conv_out]],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_relu_absorbed_where_the_output_clips() -> None:
    info = _compare(_hand_qdq(0), 0.02 * 1.0001)
    assert info["ops"].count("QLinearConv") == 1 and "Relu" not in info["ops"], info["ops"]


def test_relu6_absorbed_where_the_output_clips() -> None:
    """Clip(0, 6) before a quantization of [0, 6]: Q(6) = 255."""
    info = _compare(_hand_qdq(0, clip=(0.0, 6.0), y_scale=6 / 255), 6 / 255 * 1.0001)
    assert info["ops"].count("QLinearConv") == 1 and "Clip" not in info["ops"], info["ops"]


@pytest.mark.parametrize("y_zero,conv_out,clip", [
    (128, False, None),  # the Relu clips inside the output's range
    (0, False, (0.0, 3.0)),  # so does the Clip: Q(3) = 150
    (0, True, None)])  # the Conv's float output is read by someone else too
def test_unfusable_chains_still_run(y_zero: int, conv_out: bool,
                                    clip: tuple[float, float] | None) -> None:
    info = _compare(_hand_qdq(y_zero, conv_out, clip), 0.02 * 1.0001)
    assert "QLinearConv" not in info["ops"] and "Conv" in info["ops"], info["ops"]
    assert not info["rewritten"]


def test_only_into_operators_the_device_has(tmp_path: Path) -> None:
    """The rewrite makes QLinearConv/QLinearMatMul only where the target device has plugins
    for them (a device without keeps the float Conv/MatMul between DequantizeLinear and
    QuantizeLinear)."""
    from mini_infer_core.builder.rewrite import rewrite
    from mini_infer_core.importer import parse_onnx

    network = parse_onnx(_quantized(tmp_path, per_channel=True))
    ops = [n.op_type for n in rewrite(network, integer=lambda op: op == "QLinearMatMul")[0].nodes]
    assert "QLinearConv" not in ops and ops.count("Conv") == 4 and "QLinearMatMul" in ops
    assert "Gemm" in ops
    ops = [n.op_type for n in rewrite(network, integer=lambda op: False)[0].nodes]
    assert "QLinearMatMul" not in ops and "MatMul" in ops


def test_a_device_without_integer_kernels_places_them_on_the_cpu_and_says_why() -> None:
    """Cross-building a QDQ model for CUDA (whose plugins have no QLinearConv): the chain is
    still fused, the integer node is placed on the CPU, and the placement report
    (``build_info["fallbacks"]``, printed by ``mini-infer inspect``) says why; with strict
    placement the build refuses instead."""
    from mini_infer_core.cli._report import fallback_lines

    reg = mi.discover()
    if reg.get_device("cuda") is None:
        pytest.skip("mini-infer-cuda-plugins is not installed (its device is what is built for)")
    model = _hand_qdq(0)
    network = mi.parse_onnx(model)
    engine = mi.Builder(reg).build_engine(network, mi.BuilderConfig(device="cuda"))
    placed = {nd.op_type: nd.device for nd in engine.nodes if nd.op_type != "Copy"}
    assert placed.get("QLinearConv") == "cpu", placed
    reasons = {f["op"]: f["reason"] for f in engine.build_info["fallbacks"]}
    assert "no integer (INT8) kernel for QLinearConv" in reasons["QLinearConv"], reasons
    assert "'cuda'" in reasons["QLinearConv"] and "'cpu'" in reasons["QLinearConv"]
    text = "\n".join(fallback_lines(engine.build_info))
    assert "QLinearConv" in text and "node(s) not on the target device" in text
    with pytest.raises(mi.MiniInferError, match="QuantizeLinear"):
        mi.Builder(reg).build_engine(mi.parse_onnx(model),
                                     mi.BuilderConfig(device="cuda", strict_device=True))
