"""The 8-bit plugins in NHWC (``TensorFormat.HWC``): each run through the plugin kit in the
formats a negotiated engine would hand it (inputs converted, outputs read back) against
onnxruntime on the same node, and the builder keeping a chain of them NHWC with reformats only
at its edges."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import qconv, qelementwise
from onnx import TensorProto, helper, numpy_helper
from quant_support import ELEM, S8, U8

import mini_infer_core as mi
from mini_infer_core.plugin import PluginField, PluginFieldCollection, TensorFormat
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.testing import plugin_kit

RNG = np.random.default_rng(2529)
F = TensorFormat
NS = "mini_infer.cpu_native"


@pytest.fixture
def threads() -> Any:
    """Two threads in the compiled kernels' pool (the parts of a job on both)."""
    from mini_infer_core.threads import get_num_threads, set_num_threads

    before = get_num_threads()
    set_num_threads(2)
    yield None
    set_num_threads(before)


def _ints(dtype: Any, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def _plugin(op: str, attrs: dict[str, Any]) -> Any:
    rec = mi.get_plugin_registry().get_creator(op, "1", NS)
    assert rec is not None, op
    fields = PluginFieldCollection([PluginField.from_value(k, v) for k, v in attrs.items()])
    return adapter.create(rec.creator, "n", fields)


def _onnxruntime(op: str, domain: str, names: list[str], values: list[np.ndarray],
                 attrs: dict[str, Any], out_type: Any) -> np.ndarray:
    node = helper.make_node(op, names, ["y"], domain=domain, **attrs)
    feeds = {n: v for n, v in zip(names, values, strict=True) if v.ndim >= 2}
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, ELEM[v.dtype], list(v.shape))
                      for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", ELEM[np.dtype(out_type)], None)],
        [numpy_helper.from_array(v, n) for n, v in zip(names, values, strict=True)
         if n not in feeds])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              ir_version=10)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feeds)
    return want  # type: ignore[no-any-return]


CONVS = [
    (2, 7, 8, 8, 17, (3, 3), {"strides": [2, 2], "pads": [1, 0, 2, 1]}),
    (1, 5, 10, 9, 3, (3, 2), {"dilations": [2, 3], "pads": [2, 1, 0, 2]}),
    (2, 16, 6, 7, 33, (1, 1), {}),
    (1, 8, 6, 6, 12, (3, 3), {"group": 4, "pads": [1, 1, 1, 1]}),
    (2, 12, 8, 7, 12, (3, 3), {"group": 12, "pads": [1, 1, 1, 1]}),  # depthwise
    (1, 9, 9, 9, 9, (5, 5), {"group": 9, "strides": [2, 2], "pads": [2, 2, 2, 2],
                             "dilations": [1, 2]}),
    # large enough for the thread pool: A packed in parts, depthwise rows shared out
    (1, 32, 40, 40, 24, (3, 3), {"pads": [1, 1, 1, 1]}),
    (2, 3, 41, 41, 16, (7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]}),
    (1, 64, 30, 30, 64, (3, 3), {"group": 64, "pads": [1, 1, 1, 1]}),
]


@pytest.mark.parametrize("shape", CONVS, ids=[f"c{s[1]}m{s[4]}g{s[6].get('group', 1)}"
                                              for s in CONVS])
@pytest.mark.parametrize("xt,wt", [(U8, S8), (S8, S8), (U8, U8)])
@pytest.mark.parametrize("fx,fy", [(F.HWC, F.HWC), (F.HWC, F.LINEAR), (F.LINEAR, F.HWC)])
def test_qlinearconv_in_nhwc(threads: None, count_calls: Callable[[Any, str, str], dict[str, int]],
                             shape: tuple[Any, ...], xt: Any, wt: Any, fx: F, fy: F) -> None:
    n, c, h, w, m, k, attrs = shape
    group = attrs.get("group", 1)
    x = _ints(xt, n, c, h, w)
    x[0, 0] = np.iinfo(xt).max  # saturating sums at the border
    params = [np.array(0.02, np.float32), np.array(np.iinfo(xt).min if xt == U8 else 127, xt),
              _ints(wt, m, c // group, *k), RNG.uniform(0.002, 0.02, m).astype(np.float32),
              _ints(wt, m) if wt == U8 else np.zeros(m, S8), np.array(0.05, np.float32),
              np.array(9, xt), RNG.integers(-5000, 5000, m).astype(np.int32)]
    calls = count_calls(qconv._IntegerConv, "_gemm", "gemm")
    dw = count_calls(qconv.QLinearConv, "_depthwise_nhwc", "dw")
    plugin = _plugin("QLinearConv", attrs)
    formats = [fx, *[F.LINEAR] * 8, fy]
    (got,) = plugin_kit.run_plugin(plugin, [x, *params], formats=formats)
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"]
    want = _onnxruntime("QLinearConv", "", names, [x, *params], attrs, xt)
    np.testing.assert_array_equal(got, want)
    depthwise = group == c == m
    assert (dw["dw"] == 1) == (depthwise and fx is F.HWC)
    assert calls["gemm"] == (0 if depthwise else 1)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("case", ["same", "pixel_b", "pixel_a", "pixel_b_linear"])
@pytest.mark.parametrize("dtype", [U8, S8])
def test_binary_in_nhwc(count_calls: Callable[[Any, str, str], dict[str, int]], op: str,
                        case: str, dtype: Any) -> None:
    big, pixel = _ints(dtype, 2, 6, 5, 3), _ints(dtype, 2, 6, 1, 1)
    a, b = {"same": (big, _ints(dtype, 2, 6, 5, 3)), "pixel_b": (big, pixel),
            "pixel_a": (pixel, big), "pixel_b_linear": (big, pixel)}[case]
    fa = F.LINEAR if a is pixel else F.HWC
    fb = F.LINEAR if case == "pixel_b_linear" else F.HWC
    zeros = (0, 255, 0) if dtype == U8 else (-128, 127, -128)
    params = [np.array(0.05, np.float32), np.array(zeros[0], dtype),
              np.array(0.031, np.float32), np.array(zeros[1], dtype),
              np.array(0.07 if op == "QLinearAdd" else 0.03, np.float32),
              np.array(zeros[2], dtype)]
    values = [a, *params[:2], b, *params[2:]]
    calls = count_calls(qelementwise, "_check", "compiled")
    (got,) = plugin_kit.run_plugin(_plugin(op, {}), values,
                                   formats=[fa, F.LINEAR, F.LINEAR, fb, *[F.LINEAR] * 4, F.HWC])
    want = _onnxruntime(op, "com.microsoft", ["a", "as", "az", "b", "bs", "bz", "cs", "cz"],
                        values, {}, dtype)
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
    assert calls["compiled"] >= 1


@pytest.mark.parametrize("dtype", [U8, S8])
def test_sigmoid_pool_concat_in_nhwc(dtype: Any) -> None:
    x = _ints(dtype, 2, 5, 4, 3)
    p = [np.array(0.05, np.float32), np.array(3, dtype), np.array(1 / 255, np.float32),
         np.array(np.iinfo(dtype).min, dtype)]
    (got,) = plugin_kit.run_plugin(_plugin("QLinearSigmoid", {}), [x, *p],
                                   formats=[F.HWC, *[F.LINEAR] * 4, F.HWC])
    want = _onnxruntime("QLinearSigmoid", "com.microsoft", ["x", "xs", "xz", "ys", "yz"],
                        [x, *p], {}, dtype)
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
    q = [np.array(0.05, np.float32), np.array(3, dtype), np.array(0.01, np.float32),
         np.array(-7 if dtype == S8 else 7, dtype)]
    for fy in (F.HWC, F.LINEAR):
        (got,) = plugin_kit.run_plugin(_plugin("QLinearGlobalAveragePool", {}), [x, *q],
                                       formats=[F.HWC, *[F.LINEAR] * 4, fy])
        want = _onnxruntime("QLinearGlobalAveragePool", "com.microsoft",
                            ["x", "xs", "xz", "ys", "yz"], [x, *q], {"channels_last": 0},
                            dtype)
        assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
    y = _ints(dtype, 2, 2, 4, 3)
    cat = [np.array(0.04, np.float32), np.array(1, dtype), x, np.array(0.05, np.float32),
           np.array(3, dtype), y, np.array(0.04, np.float32), np.array(1, dtype)]
    formats = [F.LINEAR, F.LINEAR, F.HWC, F.LINEAR, F.LINEAR, F.HWC, F.LINEAR, F.LINEAR, F.HWC]
    (got,) = plugin_kit.run_plugin(_plugin("QLinearConcat", {"axis": 1}), cat, formats=formats)
    want = _onnxruntime("QLinearConcat", "com.microsoft",
                        ["ys", "yz", "x", "xs", "xz", "x2", "s2", "z2"], cat, {"axis": 1}, dtype)
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
    np.testing.assert_array_equal(got[:, 5:], y)  # same parameters: copied


def _chain() -> onnx.ModelProto:
    """x (uint8) -> conv -> depthwise conv -> conv -> QLinearAdd (residual) -> conv."""
    inits: dict[str, np.ndarray] = {"s": np.array(0.05, np.float32), "z": np.array(100, U8)}
    nodes = []
    prev = "x"
    for i, (m, c, k, g) in enumerate([(8, 4, 3, 1), (8, 8, 3, 8), (8, 8, 1, 1)]):
        inits |= {f"w{i}": _ints(S8, m, c // g, k, k),
                  f"ws{i}": RNG.uniform(0.002, 0.01, m).astype(np.float32),
                  f"wz{i}": np.zeros(m, S8), f"b{i}": RNG.integers(-900, 900, m).astype(np.int32)}
        nodes.append(helper.make_node(
            "QLinearConv", [prev, "s", "z", f"w{i}", f"ws{i}", f"wz{i}", "s", "z", f"b{i}"],
            [f"c{i}"], group=g, pads=[k // 2] * 4))
        prev = f"c{i}"
    nodes.append(helper.make_node("QLinearAdd", ["c0", "s", "z", "c2", "s", "z", "s", "z"],
                                  ["a"], domain="com.microsoft"))
    inits |= {"w3": _ints(S8, 5, 8, 3, 3), "ws3": np.full(5, 0.004, np.float32),
              "wz3": np.zeros(5, S8)}
    nodes.append(helper.make_node("QLinearConv", ["a", "s", "z", "w3", "ws3", "wz3", "s", "z"],
                                  ["y"], pads=[1, 1, 1, 1]))
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 4, 9, 9])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                   helper.make_opsetid("com.microsoft", 1)],
                             ir_version=10)


def test_a_chain_stays_nhwc_with_reformats_at_its_edges() -> None:
    model = _chain()
    engine = mi.load(model)
    reformats = [nd.name for nd in engine.nodes if nd.op_type == "Reformat"]
    assert len(reformats) == 2, reformats  # the graph's input and output only
    for nd in engine.nodes:
        if nd.op_type != "Reformat":
            assert engine.tensors[nd.outputs[0]].format is F.HWC, nd.name
    x = _ints(U8, 2, 4, 9, 9)
    (got,) = mi.InferenceSession(engine).run(None, {"x": x})
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
    # LINEAR throughout, the same values
    flat = mi.load(model, config=mi.BuilderConfig(negotiate_formats=False))
    (same,) = mi.InferenceSession(flat).run(None, {"x": x})
    np.testing.assert_array_equal(got, same)


@pytest.mark.parametrize("dtype", [U8, S8])
@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 3], "pads": [0, 1, 1, 2], "ceil_mode": 1, "strides": [2, 2]},
    {"kernel_shape": [2, 2], "dilations": [2, 1]},
    {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}])
def test_qmaxpool_nhwc_matches_onnxruntime(dtype: Any, attrs: dict[str, Any]) -> None:
    """mini-infer's 8-bit QMaxPool (the QDQ rewrite's) NHWC and NCHW against onnxruntime's
    MaxPool of the same 8-bit tensor: odd channel counts, padding beside all-minimum
    channels (the padding reads nothing), ceil_mode, dilations, auto_pad."""
    x = _ints(dtype, 2, 5, 7, 9)
    x[:, 1] = np.iinfo(dtype).min
    want = _onnxruntime("MaxPool", "", ["x"], [x], attrs, dtype)
    for fmt in (F.HWC, F.LINEAR):
        (got,) = plugin_kit.run_plugin(_plugin("QMaxPool", attrs), [x], formats=[fmt, fmt])
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [U8, S8])
def test_qlinear_lookup_nhwc_indexes_the_table(dtype: Any) -> None:
    """QLinearLookup (the rewrite's table of a float function between QDQ pairs): each output
    the table's entry at the input's bit pattern, NHWC and NCHW, odd channels."""
    x = _ints(dtype, 2, 5, 4, 3)
    table = _ints(dtype, 256)
    for fmt in (F.HWC, F.LINEAR):
        (got,) = plugin_kit.run_plugin(_plugin("QLinearLookup", {}), [x, table],
                                       formats=[fmt, F.LINEAR, fmt])
        np.testing.assert_array_equal(got, table[x.view(np.uint8).astype(np.intp)])
