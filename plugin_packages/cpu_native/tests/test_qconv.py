"""QLinearConv and ConvInteger on the integer GEMM (``qconv.py``): single-node models against
onnxruntime at the edges (saturated outputs, extreme zero points, per-channel W parameters,
odd channel counts, strides/pads/dilations, groups and depthwise, 1x1, batches of 0, 1, 2),
on every integer GEMM kernel this CPU runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import qconv
from onnx import TensorProto, helper, numpy_helper
from quant_support import ELEM, S8, U8, run_saved_engine

import mini_infer_core

RNG = np.random.default_rng(2525)


@pytest.fixture
def paths(count_calls: Callable[[Any, str, str], dict[str, int]]
          ) -> dict[str, dict[str, int]]:
    """How often the plugins took the compiled GEMM and the depthwise sums (a test fails if
    cpu_basic's float64 path took over): ``paths[p][p]``."""
    return {"gemm": count_calls(qconv, "run_qconv", "gemm"),
            "depthwise": count_calls(qconv._IntegerConv, "_depthwise_sums", "depthwise")}


def _ints(dtype: Any, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def _run(node: onnx.NodeProto, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray],
         out_type: Any) -> tuple[np.ndarray, np.ndarray]:
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, ELEM[v.dtype], list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", ELEM[np.dtype(out_type)], None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    (got,) = sess.run(None, feeds)
    (again,) = sess.run(None, feeds)
    np.testing.assert_array_equal(got, again)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feeds)
    return got, want


#: (batch, C, H, W, M, kernel, attributes): groups, depthwise, 1x1, strides, pads, dilations
SHAPES = [
    (1, 3, 9, 11, 5, (3, 3), {"pads": [1, 1, 1, 1]}),
    (2, 7, 8, 8, 17, (3, 3), {"strides": [2, 2], "pads": [1, 0, 2, 1]}),
    (1, 5, 10, 9, 3, (3, 2), {"dilations": [2, 3], "pads": [2, 1, 0, 2]}),
    (2, 16, 6, 7, 33, (1, 1), {}),
    (2, 8, 13, 13, 70, (1, 1), {}),  # many channels over 169 pixels: transposed in blocks
    (1, 4, 12, 12, 132, (3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),
    (1, 6, 7, 7, 9, (1, 1), {"strides": [2, 2]}),
    (1, 8, 6, 6, 12, (3, 3), {"group": 4, "pads": [1, 1, 1, 1]}),
    (2, 12, 8, 7, 12, (3, 3), {"group": 12, "pads": [1, 1, 1, 1]}),
    (1, 9, 9, 9, 9, (5, 5), {"group": 9, "strides": [2, 2], "pads": [2, 2, 2, 2]}),
    (1, 6, 7, 7, 12, (3, 3), {"group": 6, "pads": [1, 1, 1, 1]}),  # channel multiplier 2
    (1, 4, 5, 5, 6, (2, 2), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    (0, 4, 5, 5, 6, (3, 3), {"pads": [1, 1, 1, 1]}),
    # several blocks of rows and chunks of columns per thread, K and N off the tiles
    (1, 41, 30, 29, 70, (3, 3), {"pads": [1, 1, 1, 1]}),
    # 1x1 windows read in place: grouped (a channel offset), strided, many rows
    (1, 6, 5, 5, 4, (1, 1), {"group": 2}),
    (2, 67, 31, 30, 45, (1, 1), {"strides": [2, 3]}),
    # K over 1024: in slices of K (AVX-512 VNNI), copied windows and a 1x1 read in place
    (1, 130, 9, 9, 40, (3, 3), {"pads": [1, 1, 1, 1]}),
    (1, 1040, 5, 5, 33, (1, 1), {}),
    # the mobile networks' narrow 1x1 layers: one panel (16 outputs), a panel and a half (24),
    # each 8-row tile requantized in registers (AVX-512 VNNI), the last one masked
    (1, 32, 14, 14, 16, (1, 1), {}),
    (1, 96, 12, 11, 24, (1, 1), {}),
    # one pixel (a classifier's Gemm): the NCHW x and output read and written as NHWC in
    # place, both, x alone (padded to a 2x2 output), through a 3x3 window
    (2, 40, 1, 1, 33, (1, 1), {}),
    (1, 5, 1, 1, 7, (1, 1), {"pads": [1, 1, 0, 0]}),
    (1, 8, 1, 1, 12, (3, 3), {"pads": [1, 1, 1, 1]}),
]


def _ids(s: tuple[Any, ...]) -> str:
    return f"n{s[0]}c{s[1]}m{s[4]}k{s[5][0]}{s[5][1]}" + "".join(
        f"-{k}{v}" for k, v in s[6].items())


def _path(m: int, c: int, attrs: dict[str, Any]) -> str:
    return "depthwise" if attrs.get("group", 1) == c == m else "gemm"


@pytest.mark.parametrize("shape", SHAPES, ids=[_ids(s) for s in SHAPES])
@pytest.mark.parametrize("xt,wt,yt", [(U8, S8, U8), (S8, S8, S8), (U8, U8, U8)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinearconv(isa: str, paths: dict[str, dict[str, int]], shape: tuple[Any, ...], xt: Any,
                     wt: Any, yt: Any, per_channel: bool) -> None:
    n, c, h, w, m, k, attrs = shape
    group = attrs.get("group", 1)
    x = _ints(xt, n, c, h, w)
    wq = _ints(wt, m, c // group, *k)
    ns = m if per_channel else 1
    shape_s = (m,) if per_channel else ()
    inits = {
        "xs": np.float32(0.02), "xz": _ints(xt, 1).reshape(()),
        "w": wq, "ws": RNG.uniform(0.002, 0.02, ns).astype(np.float32).reshape(shape_s),
        "wz": (_ints(wt, ns) if wt == U8 else np.zeros(ns, S8)).reshape(shape_s),
        "ys": np.float32(0.05), "yz": _ints(yt, 1).reshape(()),
        "b": RNG.integers(-5000, 5000, m).astype(np.int32)}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                            ["y"], **attrs)
    got, want = _run(node, {"x": x}, inits, yt)
    np.testing.assert_array_equal(got, want)
    if n:
        p = _path(m, c, attrs)
        assert paths[p][p] > 0, paths


@pytest.mark.parametrize("xt,yt,xz,yz", [(U8, U8, 0, 0), (U8, U8, 255, 255), (S8, S8, -128, 127),
                                         (S8, S8, 127, -128)])
def test_qlinearconv_saturates(isa: str, paths: dict[str, dict[str, int]], xt: Any, yt: Any,
                               xz: int, yz: int) -> None:
    """Scales that push most outputs past the type's range, extreme zero points, no bias."""
    x = _ints(xt, 2, 5, 6, 6)
    wq = _ints(S8, 7, 5, 3, 3)
    inits = {"xs": np.float32(0.5), "xz": np.array(xz, xt), "w": wq,
             "ws": np.full(7, 0.3, np.float32), "wz": np.zeros(7, S8), "ys": np.float32(0.7),
             "yz": np.array(yz, yt)}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"],
                            pads=[1, 1, 1, 1])
    got, want = _run(node, {"x": x}, inits, yt)
    info = np.iinfo(yt)
    assert (want == info.min).any() and (want == info.max).any()
    np.testing.assert_array_equal(got, want)
    assert paths["gemm"]["gemm"] > 0


@pytest.mark.parametrize("shape", SHAPES, ids=[_ids(s) for s in SHAPES])
@pytest.mark.parametrize("xt,wt", [(U8, S8), (U8, U8)])
def test_convinteger(isa: str, paths: dict[str, dict[str, int]], shape: tuple[Any, ...], xt: Any,
                     wt: Any) -> None:
    n, c, h, w, m, k, attrs = shape
    group = attrs.get("group", 1)
    x = _ints(xt, n, c, h, w)
    inits = {"w": _ints(wt, m, c // group, *k), "xz": _ints(xt, 1).reshape(()),
             "wz": _ints(wt, 1).reshape(())}
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs)
    got, want = _run(node, {"x": x}, inits, np.int32)
    np.testing.assert_array_equal(got, want)
    if n:
        p = _path(m, c, attrs)
        assert paths[p][p] > 0, paths


def test_depthwise_large_bias_takes_the_gemm(isa: str, paths: dict[str, dict[str, int]]
                                             ) -> None:
    """A bias too large for the float32 depthwise sums to stay exact: each channel's GEMM."""
    x = _ints(U8, 2, 6, 7, 7)
    inits = {"xs": np.float32(0.02), "xz": np.array(7, U8), "w": _ints(S8, 6, 1, 3, 3),
             "ws": np.full(6, 0.003, np.float32), "wz": np.zeros(6, S8),
             "ys": np.float32(2000.0), "yz": np.array(100, U8),
             "b": np.array([2**30, -2**29, 2**24, -2**24 - 1, 12345, 0], np.int32)}
    node = helper.make_node("QLinearConv", ["x", *inits], ["y"],
                            group=6, pads=[1, 1, 1, 1])
    got, want = _run(node, {"x": x}, inits, U8)
    np.testing.assert_array_equal(got, want)
    assert paths["gemm"]["gemm"] > 0 and paths["depthwise"]["depthwise"] == 0



def test_packed_weights_survive_the_engine_file(tmp_path: Any) -> None:
    """W packed by the build per group (``__qpacked__``), uint8 with per-channel zero points,
    is stored so in the engine file and read back in another process."""
    x = _ints(U8, 2, 6, 9, 9)
    inits = {"xs": np.float32(0.02), "xz": np.array(9, U8), "w": _ints(U8, 8, 3, 3, 3),
             "ws": RNG.uniform(0.002, 0.02, 8).astype(np.float32), "wz": _ints(U8, 8),
             "ys": np.float32(0.05), "yz": np.array(77, U8),
             "b": RNG.integers(-5000, 5000, 8).astype(np.int32)}
    node = helper.make_node("QLinearConv", ["x", *inits], ["y"], group=2, strides=[2, 1],
                            pads=[1, 0, 1, 2])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    got = run_saved_engine(model, "x", x, tmp_path)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_array_equal(got, want)


def test_packed_weights_unpacked_for_the_fallback() -> None:
    """A packed W read back in ONNX order where cpu_basic's path takes over."""
    w = _ints(S8, 12, 5, 3, 2)
    assert np.array_equal(qconv._unpack_groups(qconv._pack_groups(w, 3), 3), w)
    wu = _ints(U8, 4, 7, 1, 1)
    assert np.array_equal(qconv._unpack_groups(qconv._pack_groups(wu, 1), 1), wu)


@pytest.mark.parametrize("kernel,attrs,hw", [((1, 1), {}, 7),
                                             ((3, 3), {"pads": [1, 1, 1, 1], "group": 2}, 7),
                                             ((1, 1), {}, 1)])
def test_a_kept_plan_reads_new_inputs_on_each_run(
        paths: dict[str, dict[str, int]], count_calls: Callable[[Any, str, str], dict[str, int]],
        kernel: tuple[int, int], attrs: dict[str, Any], hw: int) -> None:
    """The plan made on the first run (rows' buffers, the GEMM's arguments) is run again for
    new values of x, and a new batch size makes a new one; a one-pixel x (read in place, NCHW
    being NHWC) is read from each run's new array."""
    cg = 4 // attrs.get("group", 1)
    inits = {"xs": np.float32(0.02), "xz": np.array(5, U8), "w": _ints(S8, 6, cg, *kernel),
             "ws": RNG.uniform(0.002, 0.02, 6).astype(np.float32), "wz": np.zeros(6, S8),
             "ys": np.float32(0.05), "yz": np.array(3, U8),
             "b": RNG.integers(-500, 500, 6).astype(np.int32)}
    node = helper.make_node("QLinearConv", ["x", *inits], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, ["n", 4, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    ours = mini_infer_core.InferenceSession(model, device="cpu")
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    made = count_calls(qconv._IntegerConv, "_gemm", "plans")
    for n in (2, 2, 2, 1, 3, 1):
        x = _ints(U8, n, 4, hw, hw)
        np.testing.assert_array_equal(ours.run(None, {"x": x})[0],
                                      theirs.run(None, {"x": x})[0])
    # a product on every run (one pixel: x and y, staged by the session, read and written in
    # place, so the third run of batch 2 is the step's bound call alone) ...
    assert paths["gemm"]["gemm"] >= (6 if hw > 1 else 5)
    assert made["plans"] <= 4  # ... and a new plan only for a new batch size
