"""ShuffleNet's channel shuffle and split between integer convolutions stay NHWC
(``mini_infer_cpu_native/qshuffle.py``): the Reshape absorbs the Transpose and Reshape after
it, Slice takes NHWC channels, and the result is onnxruntime's to the bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

RNG = np.random.default_rng(2536)



def _c(name: str, value: Any, dtype: Any) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _block(c: int, g: int, dtype: Any, zero: int, hw: tuple[int, int]) -> onnx.ModelProto:
    """x (batch, c, H, W) -> QLinearConv 1x1 -> channel shuffle of ``g`` groups (the target's
    batch from Shape, as torch writes it) -> the channels split in halves: the second through
    another QLinearConv, then QLinearConcat of both (ShuffleNetV2's unit)."""
    elem = TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8
    h = c // 2
    inits = [_c("s", 0.05, np.float32), _c("z", zero, dtype), _c("ws", 0.02, np.float32),
             _c("wz", 0, np.int8), _c("ys", 0.07, np.float32),
             _c("w1", RNG.integers(-128, 128, (c, c, 1, 1)), np.int8),
             _c("b1", RNG.integers(-500, 500, c), np.int32),
             _c("w2", RNG.integers(-128, 128, (c - h, c - h, 1, 1)), np.int8),
             _c("i0", 0, np.int64), _c("ax", [0], np.int64),
             _c("t1", [g, c // g, *hw], np.int64), _c("t2", [c, *hw], np.int64),
             _c("a0", [0], np.int64), _c("ah", [h], np.int64), _c("ac", [c], np.int64),
             _c("axis1", [1], np.int64)]
    nodes = [
        helper.make_node("QLinearConv", ["x", "s", "z", "w1", "ws", "wz", "s", "z", "b1"],
                         ["c1"]),
        helper.make_node("Shape", ["c1"], ["shp"]),
        helper.make_node("Gather", ["shp", "i0"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "ax"], ["nu"]),
        helper.make_node("Concat", ["nu", "t1"], ["shape1"], axis=0),
        helper.make_node("Concat", ["nu", "t2"], ["shape2"], axis=0),
        helper.make_node("Reshape", ["c1", "shape1"], ["r1"]),
        helper.make_node("Transpose", ["r1"], ["tr"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["tr", "shape2"], ["sh"]),
        helper.make_node("Slice", ["sh", "a0", "ah", "axis1"], ["p1"]),
        helper.make_node("Slice", ["sh", "ah", "ac", "axis1"], ["p2"]),
        helper.make_node("QLinearConv", ["p2", "s", "z", "w2", "ws", "wz", "ys", "z"],
                         ["c2"]),
        helper.make_node("QLinearConcat", ["ys", "z", "p1", "s", "z", "c2", "ys", "z"], ["y"],
                         domain="com.microsoft", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "shuffle", [helper.make_tensor_value_info("x", elem, ["batch", c, *hw])],
        [helper.make_tensor_value_info("y", elem, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("c,g", [(6, 2), (58, 2), (116, 2), (9, 3), (12, 4)])
@pytest.mark.parametrize("dtype,zero", [(np.uint8, 128), (np.uint8, 0), (np.int8, -128)])
def test_shuffle_and_split_stay_nhwc_and_match_onnxruntime(c: int, g: int, dtype: Any,
                                                           zero: int, threads: int) -> None:
    model = _block(c, g, dtype, zero, (5, 7))
    engine = mi.load(model)
    ops = [nd.op_type for nd in engine.nodes]
    assert "Transpose" not in ops and "Shape" not in ops, ops  # absorbed, pruned
    assert ops.count("Reformat") == 2, ops  # x into NHWC, y out of it: none in between
    sess = mi.InferenceSession(engine)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    info = np.iinfo(dtype)
    for batch in (1, 3):
        x = RNG.integers(info.min, int(info.max) + 1, (batch, c, 5, 7)).astype(dtype)
        (got,) = sess.run(None, {"x": x})
        (want,) = ref.run(None, {"x": x})
        np.testing.assert_array_equal(got, want)


def test_a_float_shuffle_is_fused_in_nchw_and_a_reshape_of_other_dimensions_is_not() -> None:
    """Float: the fused Reshape in NCHW (no format to negotiate); a Transpose after a Reshape
    that does not split the channels (here: the width) stays a node of its own."""
    for t1, fused in (([2, 3, 4, 5], True), ([6, 4, 1, 5], False)):
        inits = [_c("t1", [1, *t1], np.int64), _c("t2", [1, 6, 4, 5], np.int64)]
        nodes = [helper.make_node("Relu", ["x"], ["r"]),
                 helper.make_node("Reshape", ["r", "t1"], ["a"]),
                 helper.make_node("Transpose", ["a"], ["t"], perm=[0, 2, 1, 3, 4]),
                 helper.make_node("Reshape", ["t", "t2"], ["y"])]
        graph = helper.make_graph(
            nodes, "f", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 4, 5])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        engine = mi.load(model)
        assert ("Transpose" not in [nd.op_type for nd in engine.nodes]) is fused
        x = RNG.standard_normal((1, 6, 4, 5)).astype(np.float32)
        (got,) = mi.InferenceSession(engine).run(None, {"x": x})
        ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        np.testing.assert_array_equal(got, ref.run(None, {"x": x})[0])
