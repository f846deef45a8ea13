"""The depthwise QLinearConv on NHWC tensors (``mi_qdwconv_i8``, ``_qdw.c``) against onnxruntime
on the same node, on every kernel this CPU runs (AVX-512 VNNI, AVX2, plain: capped as the
integer GEMM's are), at 1 and 2 threads: channel counts around the kernels' blocks (the
64-channel blocks, their 16- and 8-channel vectors, the masked and scalar tails), strides,
asymmetric pads, dilations, per-tensor and per-channel W, saturated outputs at extreme zero
points, and the arguments kept from run to run reading each run's new input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import qconv
from onnx import TensorProto, helper, numpy_helper
from quant_support import ELEM, S8, U8

import mini_infer_core as mi
from mini_infer_core.plugin import PluginField, PluginFieldCollection, TensorFormat
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.testing import plugin_kit

RNG = np.random.default_rng(2530)
F = TensorFormat
NAMES = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"]


def _ints(dtype: Any, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def _model(attrs: dict[str, Any], values: list[np.ndarray], out_type: Any,
           names: list[str]) -> onnx.ModelProto:
    node = helper.make_node("QLinearConv", names, ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", ELEM[values[0].dtype],
                                                    list(values[0].shape))],
        [helper.make_tensor_value_info("y", ELEM[np.dtype(out_type)], None)],
        [numpy_helper.from_array(v, n) for n, v in zip(names[1:], values[1:], strict=True)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _onnxruntime(attrs: dict[str, Any], values: list[np.ndarray], out_type: Any) -> np.ndarray:
    names = NAMES[:len(values)]
    model = _model(attrs, values, out_type, names)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": values[0]})
    return want  # type: ignore[no-any-return]


def _run_nhwc(count_calls: Callable[[Any, str, str], dict[str, int]], attrs: dict[str, Any],
              values: list[np.ndarray], fy: F = F.HWC) -> np.ndarray:
    """The plugin on x made NHWC by the kit (and y in ``fy``, read back as NCHW), asserting
    the direct kernel ran."""
    dw = count_calls(qconv.QLinearConv, "_depthwise_nhwc", "dw")
    rec = mi.get_plugin_registry().get_creator("QLinearConv", "1", "mini_infer.cpu_native")
    assert rec is not None
    fields = PluginFieldCollection([PluginField.from_value(k, v) for k, v in attrs.items()])
    plugin = adapter.create(rec.creator, "n", fields)
    formats = [F.HWC, *[F.LINEAR] * (len(values) - 1), fy]
    (got,) = plugin_kit.run_plugin(plugin, values, formats=formats)
    assert dw["dw"] == 1
    return got  # type: ignore[no-any-return]


#: (N, C, H, W, kernel, attributes): C around the blocks (64 a block, 16 or 8 a vector)
CASES = [
    (1, 100, 20, 20, (3, 3), {"pads": [1, 1, 1, 1]}),  # a full block and a masked one
    (2, 64, 9, 11, (3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),  # full blocks only
    (1, 17, 23, 19, (3, 3), {"pads": [1, 0, 2, 1]}),  # 16 + 1, asymmetric pads
    (1, 150, 8, 8, (5, 5), {"strides": [2, 2], "pads": [2, 2, 2, 2]}),  # 64 + 64 + 22
    (1, 3, 30, 30, (3, 3), {"dilations": [2, 3], "pads": [2, 1, 0, 2]}),  # a scalar tail only
    (1, 72, 14, 14, (3, 2), {"dilations": [1, 2], "strides": [1, 2], "pads": [0, 1, 2, 0]}),
    (2, 129, 7, 7, (3, 3), {"pads": [1, 1, 1, 1]}),  # 7x7 maps of many channels
    (1, 40, 12, 12, (1, 1), {"strides": [2, 2]}),
    (1, 33, 5, 5, (7, 7), {"pads": [3, 3, 3, 3]}),  # most taps in the padding
    (1, 64, 4, 4, (3, 3), {}),  # no padding: every pixel inside
]
DTYPES = [(U8, S8, U8), (S8, S8, S8), (U8, U8, U8)]


@pytest.mark.parametrize("case", CASES, ids=[f"c{c[1]}k{c[4][0]}{c[4][1]}-{i}"
                                             for i, c in enumerate(CASES)])
@pytest.mark.parametrize("xt,wt,yt", DTYPES, ids=["u8s8u8", "s8s8s8", "u8u8u8"])
def test_depthwise_nhwc_matches_onnxruntime(
        isa: str, threads: int, count_calls: Callable[[Any, str, str], dict[str, int]],
        case: tuple[Any, ...], xt: Any, wt: Any, yt: Any) -> None:
    n, c, h, w, k, attrs = case
    attrs = {**attrs, "group": c}
    per_channel = c % 2 == 0  # both kinds of W parameters across the cases
    ns = c if per_channel else 1
    x = _ints(xt, n, c, h, w)
    values = [x, np.array(0.03, np.float32), _ints(xt, 1).reshape(()), _ints(wt, c, 1, *k),
              RNG.uniform(0.002, 0.02, ns).astype(np.float32).reshape((c,) if per_channel else ()),
              (_ints(wt, ns) if wt == U8 else np.zeros(ns, S8)).reshape(
                  (c,) if per_channel else ()),
              np.array(0.06, np.float32), _ints(yt, 1).reshape(()),
              RNG.integers(-20000, 20000, c).astype(np.int32)]
    want = _onnxruntime(attrs, values, yt)
    for fy in (F.HWC, F.LINEAR):
        np.testing.assert_array_equal(_run_nhwc(count_calls, attrs, values, fy), want)


@pytest.mark.parametrize("xt,yt,xz,yz", [(U8, U8, 0, 0), (U8, U8, 255, 255), (U8, U8, 0, 255),
                                         (S8, S8, -128, 127), (S8, S8, 127, -128)])
@pytest.mark.parametrize("bias", [False, True])
def test_depthwise_nhwc_saturates(isa: str, threads: int,
                                  count_calls: Callable[[Any, str, str], dict[str, int]],
                                  xt: Any, yt: Any, xz: int, yz: int, bias: bool) -> None:
    """Scales that push most outputs past the type's range, extreme zero points, inputs at
    the type's limits, with and without the bias."""
    c = 80
    x = _ints(xt, 1, c, 12, 12)
    info = np.iinfo(xt)
    x[0, :, ::3] = info.min
    x[0, :, 1::3] = info.max
    values = [x, np.array(0.5, np.float32), np.array(xz, xt), _ints(S8, c, 1, 3, 3),
              np.full(c, 0.3, np.float32), np.zeros(c, S8), np.array(0.7, np.float32),
              np.array(yz, yt)]
    if bias:
        values.append(RNG.integers(-100000, 100000, c).astype(np.int32))
    attrs = {"group": c, "pads": [1, 1, 1, 1]}
    want = _onnxruntime(attrs, values, yt)
    yinfo = np.iinfo(yt)
    assert (want == yinfo.min).any() and (want == yinfo.max).any()
    np.testing.assert_array_equal(_run_nhwc(count_calls, attrs, values), want)


def _pointwise_then_depthwise(c: int) -> onnx.ModelProto:
    """x (uint8) -> 1x1 conv -> depthwise 3x3 conv: the builder makes the second NHWC."""
    inits = {"s": np.array(0.05, np.float32), "z": np.array(100, U8),
             "w0": _ints(S8, c, 4, 1, 1), "ws0": RNG.uniform(0.002, 0.01, c).astype(np.float32),
             "wz0": np.zeros(c, S8), "w1": _ints(S8, c, 1, 3, 3),
             "ws1": RNG.uniform(0.002, 0.01, c).astype(np.float32), "wz1": np.zeros(c, S8),
             "b1": RNG.integers(-900, 900, c).astype(np.int32)}
    nodes = [helper.make_node("QLinearConv", ["x", "s", "z", "w0", "ws0", "wz0", "s", "z"],
                              ["p"]),
             helper.make_node("QLinearConv", ["p", "s", "z", "w1", "ws1", "wz1", "s", "z", "b1"],
                              ["y"], group=c, pads=[1, 1, 1, 1])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, ["n", 4, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def test_kept_depthwise_arguments_read_each_runs_input(
        count_calls: Callable[[Any, str, str], dict[str, int]]) -> None:
    """The depthwise arguments made on the first run are run again with new values of x,
    and a new batch size makes new ones."""
    model = _pointwise_then_depthwise(70)
    engine = mi.load(model)
    dw = [nd for nd in engine.nodes if nd.op_type == "QLinearConv"][-1]
    assert engine.tensors[dw.inputs[0]].format is F.HWC
    ours = mi.InferenceSession(engine)
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    made = count_calls(qconv.QLinearConv, "_depthwise_nhwc", "made")
    ran = count_calls(qconv, "_qdwconv", "ran")
    for n in (2, 2, 2, 1, 1, 3):
        x = _ints(U8, n, 4, 10, 10)
        np.testing.assert_array_equal(ours.run(None, {"x": x})[0],
                                      theirs.run(None, {"x": x})[0])
    assert ran["ran"] == 6  # the kernel on every run ...
    assert made["made"] == 3  # ... new arguments only for a new batch size
