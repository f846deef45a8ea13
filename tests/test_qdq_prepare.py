"""What NNCF writes (builder/qdq_prepare.py): its int8 activation QuantizeLinear/
DequantizeLinear pairs run as uint8 with the zero point + 128, and a MaxPool after its
DequantizeLinear with nothing quantizing it again runs on the 8-bit tensor before it; both
exact, against onnxruntime running the graph as written (``ORT_DISABLE_ALL``), bit for bit,
and a ResNet block as NNCF quantizes it (int8 convolution output + uint8 residual -> Relu ->
uint8) fused whole and within a quantum of onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from helpers import make_model
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core.builder.qdq_prepare import prepare_qdq
from mini_infer_core.importer import parse_onnx

RNG = np.random.default_rng(2561)


def _ort(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any]:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def _inits(**arrays: Any) -> list[onnx.TensorProto]:
    return [numpy_helper.from_array(np.asarray(v), k) for k, v in arrays.items()]


def _pair_model(zero: Any, scale: Any, axis: int = 1) -> onnx.ModelProto:
    """x -> QuantizeLinear(int8) -> DequantizeLinear -> Neg -> y."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=axis),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], axis=axis),
             helper.make_node("Neg", ["d"], ["y"])]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                            [2, 3, 4, 5])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                      _inits(s=np.asarray(scale, np.float32), z=np.asarray(zero, np.int8)))


@pytest.mark.parametrize("zero,scale", [
    (0, 0.02), (-128, 0.05), (127, 0.01), (-5, 0.5),
    ([-128, 0, 127], [0.02, 0.1, 0.003])])  # per channel (axis 1)
def test_int8_pairs_run_as_uint8_with_the_same_values(zero: Any, scale: Any) -> None:
    model = _pair_model(zero, scale)
    network, done = prepare_qdq(parse_onnx(model), lambda op: True)
    assert done == ["1 int8 QuantizeLinear/DequantizeLinear pairs as uint8"]
    zps = {n.op_type: network.constants[n.inputs[2]] for n in network.nodes[:2]}
    for z in zps.values():  # both nodes read the new uint8 zero point
        assert z.dtype == np.uint8
        np.testing.assert_array_equal(z.astype(int), np.asarray(zero, int) + 128)
    # values far past both ends of the range, halves (round to even), zeros
    x = (RNG.standard_normal((2, 3, 4, 5)) * 40).astype(np.float32)
    x.reshape(-1)[:8] = [1e6, -1e6, 0.0, -0.0, 0.5 * 0.02, 1.5 * 0.02, 2.5 * 0.02, -0.5 * 0.02]
    (got,) = mi.InferenceSession(mi.load(model)).run(None, {"x": x})
    (want,) = _ort(model, {"x": x})
    np.testing.assert_array_equal(got, want)


def test_int8_pairs_others_read_stay_int8() -> None:
    """The QuantizeLinear's output is a graph output, or read by a non-DequantizeLinear, or
    by a DequantizeLinear of another scale: nothing changes."""
    for variant in ("output", "reader", "scale"):
        model = _pair_model(3, 0.02)
        g = model.graph
        if variant == "output":
            g.output.append(helper.make_tensor_value_info("q", TensorProto.INT8, None))
        elif variant == "reader":
            g.node.append(helper.make_node("Identity", ["q"], ["qi"]))
            g.output.append(helper.make_tensor_value_info("qi", TensorProto.INT8, None))
        else:
            g.initializer.extend(_inits(s2=np.float32(0.03)))
            g.node.append(helper.make_node("DequantizeLinear", ["q", "s2", "z"], ["d2"]))
            g.output.append(helper.make_tensor_value_info("d2", TensorProto.FLOAT, None))
        network = parse_onnx(model)
        assert prepare_qdq(network, lambda op: True) == (network, []), variant
        x = (RNG.standard_normal((2, 3, 4, 5)) * 3).astype(np.float32)
        got = mi.InferenceSession(mi.load(model)).run(None, {"x": x})
        for a, b in zip(got, _ort(model, {"x": x}), strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype,zero,attrs", [
    (np.uint8, 0, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    (np.uint8, 255, {"kernel_shape": [2, 2], "pads": [1, 0, 1, 0], "ceil_mode": 1,
                     "strides": [2, 2]}),
    (np.int8, 127, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),  # every value <= 0
    (np.int8, -128, {"kernel_shape": [2, 3], "dilations": [2, 1], "strides": [1, 2]})])
@pytest.mark.parametrize("qmaxpool", [True, False])
def test_maxpool_moves_before_its_dequantize(dtype: Any, zero: int, attrs: dict[str, Any],
                                             qmaxpool: bool) -> None:
    """DequantizeLinear -> MaxPool -> Neg (no QuantizeLinear after): the MaxPool of the 8-bit
    tensor, then DequantizeLinear; the padding is never a window's maximum."""
    elem = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8
    nodes = [helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["d"]),
             helper.make_node("MaxPool", ["d"], ["m"], **attrs),
             helper.make_node("Neg", ["m"], ["y"])]
    model = make_model(nodes, [helper.make_tensor_value_info("xq", elem, [1, 5, 7, 9])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                       _inits(s=np.float32(0.05), z=np.asarray(zero, dtype)))
    network, done = prepare_qdq(parse_onnx(model), lambda op: qmaxpool)
    assert done == ["1 MaxPool before their DequantizeLinear"]
    want_pool = "QMaxPool" if qmaxpool else "MaxPool"
    assert [n.op_type for n in network.nodes] == [want_pool, "DequantizeLinear", "Neg"]
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, int(info.max) + 1, (1, 5, 7, 9)).astype(dtype)
    x[0, 0] = info.min  # a saturated channel: every window at the type's minimum
    x[0, 1, :, 0] = info.max
    engine = mi.load(model)
    (got,) = mi.InferenceSession(engine).run(None, {"xq": x})
    (want,) = _ort(model, {"xq": x})
    np.testing.assert_array_equal(got, want)
    assert "QMaxPool" in [n.op_type for n in engine.nodes]  # cpu_native has it


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.3).astype(np.float32)


def _nncf_block(channels: int, zero: int) -> onnx.ModelProto:
    """ResNet's stem and first block as NNCF quantizes them: x -> Q(int8, 0) -> conv -> Relu
    -> Q(uint8) -> DQ -> MaxPool -> {conv -> Q(int8, ``zero``) -> DQ} + MaxPool -> Relu ->
    Q(uint8) -> DQ -> y; weights int8 per channel, symmetric."""
    c = channels

    def weights(name: str, w: np.ndarray) -> dict[str, np.ndarray]:
        s = (np.abs(w).reshape(w.shape[0], -1).max(1) / 127).astype(np.float32)
        q = np.clip(np.round(w / s[:, None, None, None]), -127, 127).astype(np.int8)
        return {f"{name}q": q, f"{name}s": s, f"{name}z": np.zeros(w.shape[0], np.int8)}

    inits = {**weights("w1", _w(c, 3, 3, 3)), **weights("w2", _w(c, c, 3, 3)),
             "b1": _w(c), "b2": _w(c),
             "xs": np.float32(0.03), "xz": np.int8(0), "rs": np.float32(0.02),
             "rz": np.uint8(0), "cs": np.float32(0.04), "cz": np.int8(zero),
             "ys": np.float32(0.05), "yz": np.uint8(0)}
    def dq(x: str, p: str, y: str, **kw: Any) -> Any:
        return helper.make_node("DequantizeLinear", [x, f"{p}s", f"{p}z"], [y], **kw)

    def q(x: str, p: str, y: str) -> Any:
        return helper.make_node("QuantizeLinear", [x, f"{p}s", f"{p}z"], [y])

    nodes = [q("x", "x", "xq"), dq("xq", "x", "xd"), dq("w1q", "w1", "w1d", axis=0),
             helper.make_node("Conv", ["xd", "w1d", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]), q("r1", "r", "r1q"),
             dq("r1q", "r", "r1d"),
             helper.make_node("MaxPool", ["r1d"], ["m"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             dq("w2q", "w2", "w2d", axis=0),
             helper.make_node("Conv", ["m", "w2d", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             q("c2", "c", "c2q"), dq("c2q", "c", "c2d"),
             helper.make_node("Add", ["c2d", "m"], ["a"]), helper.make_node("Relu", ["a"], ["r"]),
             q("r", "y", "yq"), dq("yq", "y", "y")]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                            [2, 3, 13, 11])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                      _inits(**inits))


@pytest.mark.parametrize("channels,zero", [(8, 0), (5, -128), (17, 127), (3, 40)])
def test_an_nncf_resnet_block_runs_on_8_bits(channels: int, zero: int) -> None:
    model = _nncf_block(channels, zero)
    engine = mi.load(model)
    ops = [n.op_type for n in engine.nodes if n.op_type != "Reformat"]  # NHWC between
    assert ops == ["QuantizeLinear", "QLinearConv", "QMaxPool", "QLinearConv", "QLinearAdd",
                   "DequantizeLinear"], ops
    for _ in range(3):
        x = (RNG.standard_normal((2, 3, 13, 11)) * 4).astype(np.float32)  # saturates
        (got,) = mi.InferenceSession(engine).run(None, {"x": x})
        (want,) = _ort(model, {"x": x})
        # the integer kernels round once where the float graph rounds in float32: a quantum
        np.testing.assert_allclose(got, want, rtol=0, atol=0.05 * 1.0001)
        assert np.mean(got == want) > 0.9


def _qop_model(trans_b: bool, per_channel: bool, bias: bool, w_dtype: Any) -> onnx.ModelProto:
    """QOperator's tail, as ``quantize_static`` writes it: x -> QuantizeLinear -> MaxPool of
    uint8 -> Flatten -> com.microsoft::QGemm (uint8 output) -> DequantizeLinear -> y."""
    k, m = 7 * 3 * 3, 11  # K and M off every tile
    b = RNG.integers(-127 if w_dtype == np.int8 else 0, 128 if w_dtype == np.int8 else 256,
                     (m, k) if trans_b else (k, m)).astype(w_dtype)
    inits = {"xs": np.float32(0.05), "xz": np.uint8(128), "b": b,
             "bs": (RNG.random(m) * 0.02 + 0.01).astype(np.float32) if per_channel
             else np.float32(0.015),
             "bz": np.zeros(m, w_dtype) if per_channel else np.asarray(
                 0 if w_dtype == np.int8 else 131, w_dtype),
             "ys": np.float32(0.3), "yz": np.uint8(100),
             "c": RNG.integers(-3000, 3000, m).astype(np.int32)}
    gemm_in = ["f", "xs", "xz", "b", "bs", "bz", "c" if bias else "", "ys", "yz"]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("MaxPool", ["xq"], ["m"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Flatten", ["m"], ["f"]),
             helper.make_node("QGemm", gemm_in, ["g"], domain="com.microsoft",
                              transB=int(trans_b), alpha=1.0),
             helper.make_node("DequantizeLinear", ["g", "ys", "yz"], ["y"])]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [3, 7, 5, 6])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                       _inits(**inits))
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model


@pytest.mark.parametrize("trans_b,per_channel,bias,w_dtype", [
    (True, True, True, np.int8), (False, False, True, np.int8), (True, False, False, np.uint8),
    (False, True, False, np.int8)])
def test_qoperator_maxpool_and_qgemm_run_on_the_integer_kernels(
        trans_b: bool, per_channel: bool, bias: bool, w_dtype: Any) -> None:
    model = _qop_model(trans_b, per_channel, bias, w_dtype)
    engine = mi.load(model)
    ops = [n.op_type for n in engine.nodes if n.op_type != "Reformat"]
    assert "QGemm" not in ops and "MaxPool" not in ops, ops
    assert "QMaxPool" in ops and "QLinearConv" in ops, ops
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    theirs = ort.InferenceSession(model.SerializeToString(), opts,
                                  providers=["CPUExecutionProvider"])
    for scale in (1.0, 8.0):  # the second saturates x and the product
        x = (RNG.standard_normal((3, 7, 5, 6)) * scale).astype(np.float32)
        (got,) = mi.InferenceSession(engine).run(None, {"x": x})
        (want,) = theirs.run(None, {"x": x})
        np.testing.assert_allclose(got, want, rtol=0, atol=0.3 * 1.0001)  # a quantum
        assert np.mean(got == want) > 0.9
