"""Grouped QLinearConv of 4, 8 or 16 inputs and as many outputs a group (RegNet's 3x3 layers)
on an NHWC x: the direct kernel (``mi_qdwconv_i8`` with ``cg``, ``_qgconv.h``) at the AVX-512
VNNI levels, the integer GEMM group by group below them, at 1 and 2 threads, against
onnxruntime bit for bit (x written NHWC by the graph input's QuantizeLinear; the output NCHW
through the kernel's NHWC buffer): channel counts off the 16-lane vectors, strides, pads,
dilations, per-tensor and per-channel W, uint8 W with zero points (w - zw outside int8: the
GEMM), int8 x and y, a second batch size."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import pytest
from mini_infer_cpu_native import qconv
from onnx import TensorProto, helper, numpy_helper
from quant_support import ELEM, S8, U8

import mini_infer_core

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle here")

RNG = np.random.default_rng(2525)

#: (C, H, W, channels a group, kernel, attributes)
SHAPES = [
    (40, 7, 7, 8, (3, 3), {"pads": [1, 1, 1, 1]}),
    (24, 9, 11, 4, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    (48, 6, 5, 16, (3, 3), {"pads": [1, 0, 2, 1]}),
    (88, 10, 9, 8, (3, 3), {"pads": [2, 2, 2, 2], "dilations": [2, 2]}),
    (136, 5, 6, 8, (1, 3), {"pads": [0, 1, 0, 1]}),
    (16, 4, 4, 8, (5, 5), {"pads": [2, 2, 2, 2]}),
]


def _ints(dtype: Any, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def _model(c: int, h: int, w: int, cg: int, kernel: tuple[int, int], attrs: dict[str, Any],
           xt: Any, wt: Any, per_channel: bool) -> onnx.ModelProto:
    ns = c if per_channel else 1
    shape_s = (c,) if per_channel else ()
    inits = {
        "xs": np.float32(0.02), "xz": _ints(xt, 1).reshape(()),
        "w": _ints(wt, c, cg, *kernel) if wt == S8 else RNG.integers(100, 156, (c, cg, *kernel)
                                                                      ).astype(U8),
        "ws": RNG.uniform(0.002, 0.02, ns).astype(np.float32).reshape(shape_s),
        "wz": (RNG.integers(120, 136, ns).astype(U8) if wt == U8 else np.zeros(ns, S8)
               ).reshape(shape_s),
        "ys": np.float32(0.05), "yz": _ints(xt, 1).reshape(()),
        "b": RNG.integers(-5000, 5000, c).astype(np.int32)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz",
                                              "b"], ["y"], group=c // cg, **attrs)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", c, h, w])],
        [helper.make_tensor_value_info("y", ELEM[np.dtype(xt)], None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


@pytest.mark.parametrize("shape", SHAPES, ids=[f"c{s[0]}g{s[3]}k{s[4][0]}{s[4][1]}-{i}"
                                               for i, s in enumerate(SHAPES)])
@pytest.mark.parametrize("xt,wt,per_channel", [(U8, S8, True), (S8, S8, False),
                                               (U8, U8, True)])
def test_grouped_matches_onnxruntime(isa: str, threads: int,
                                     count_calls: Callable[[Any, str, str], dict[str, int]],
                                     shape: tuple[Any, ...], xt: Any, wt: Any,
                                     per_channel: bool) -> None:
    c, h, w, cg, kernel, attrs = shape
    model = _model(c, h, w, cg, kernel, attrs, xt, wt, per_channel)
    direct = count_calls(qconv.QLinearConv, "_depthwise_nhwc", "direct")
    gemm = count_calls(qconv, "run_qconv", "gemm")
    ours = mini_infer_core.InferenceSession(model, device="cpu")
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n in (1, 1, 2, 1):
        x = (RNG.standard_normal((n, c, h, w)) * 1.5).astype(np.float32)
        np.testing.assert_array_equal(ours.run(None, {"x": x})[0],
                                      theirs.run(None, {"x": x})[0], err_msg=f"batch {n}")
    # uint8 W's w - zw reach 36 at most here: int8, the direct kernel's too
    want_direct = isa in ("avx512vnni", "amx")
    assert (direct["direct"] > 0) == want_direct, (isa, direct, gemm)
    assert (gemm["gemm"] > 0) != want_direct, (isa, direct, gemm)


def test_weights_outside_int8_take_the_gemm(count_calls: Callable[[Any, str, str],
                                                                  dict[str, int]]) -> None:
    """uint8 W with a zero point far from its values: w - zw outside int8, the GEMM's."""
    model = _model(32, 6, 6, 8, (3, 3), {"pads": [1, 1, 1, 1]}, U8, S8, True)
    for t in model.graph.initializer:
        if t.name == "w":
            t.CopyFrom(numpy_helper.from_array(RNG.integers(0, 256, (32, 8, 3, 3)).astype(U8),
                                               "w"))
        if t.name == "wz":
            t.CopyFrom(numpy_helper.from_array(np.full(32, 255, U8), "wz"))
    direct = count_calls(qconv.QLinearConv, "_depthwise_nhwc", "direct")
    ours = mini_infer_core.InferenceSession(model, device="cpu")
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = RNG.standard_normal((1, 32, 6, 6)).astype(np.float32)
    np.testing.assert_array_equal(ours.run(None, {"x": x})[0], theirs.run(None, {"x": x})[0])
    assert direct["direct"] == 0
