"""QLinearGlobalAveragePool on NHWC tensors in its compiled kernel (``mi_qgap_i8``, ``_qgap.c``)
at each ISA level of the integer kernels, against onnxruntime on the same node: odd channel
counts (a masked AVX-512 tail, an AVX2 remainder, more than one 64-channel block), 1x1, 7x7 and
56x56 maps, the zero points at the ends of uint8 and int8, batches of more than one image, on
one thread and on the pool."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import qlayout
from onnx import helper, numpy_helper
from quant_support import ELEM, S8, U8

import mini_infer_core as mi
from mini_infer_core.plugin import PluginField, PluginFieldCollection, TensorFormat
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.testing import plugin_kit

RNG = np.random.default_rng(2025)
F = TensorFormat

#: (n, c, h, w): odd channel counts, 1x1 / 7x7 / 56x56 maps, batches
SHAPES = [(1, 3, 1, 1), (2, 17, 7, 7), (3, 65, 7, 7), (1, 33, 56, 56), (2, 96, 56, 56),
          (2, 1, 7, 7), (1, 1283, 1, 1)]
#: (x zero point, y zero point) at the ends of each type
ZEROS = {U8: [(0, 255), (255, 0), (128, 3)], S8: [(-128, 127), (127, -128), (0, -5)]}


def _plugin() -> Any:
    rec = mi.get_plugin_registry().get_creator("QLinearGlobalAveragePool", "1",
                                               "mini_infer.cpu_native")
    assert rec is not None
    fields = PluginFieldCollection([PluginField.from_value("channels_last", 0)])
    return adapter.create(rec.creator, "gap", fields)


def _onnxruntime(x: np.ndarray, q: list[np.ndarray]) -> np.ndarray:
    names = ["x", "xs", "xz", "ys", "yz"]
    node = helper.make_node("QLinearGlobalAveragePool", names, ["y"], domain="com.microsoft",
                            channels_last=0)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", ELEM[x.dtype], list(x.shape))],
        [helper.make_tensor_value_info("y", ELEM[x.dtype], None)],
        [numpy_helper.from_array(v, n) for n, v in zip(names[1:], q, strict=True)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              ir_version=10)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    (want,) = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    return want  # type: ignore[no-any-return]


def _spec(x: np.ndarray, q: list[np.ndarray]) -> np.ndarray:
    """onnxruntime's arithmetic (MLAS's QLinearGlobalAveragePool and its requantization)
    written out: int sums less hw * zx, times xs / (ys * hw) in float32, rounded half to
    even, plus zy, saturated."""
    xs, xz, ys, yz = (v.reshape(()) for v in q)
    hw = x.shape[2] * x.shape[3]
    acc = x.astype(np.int64).sum(axis=(2, 3), keepdims=True) - int(xz) * hw
    mult = np.float32(xs) / (np.float32(ys) * np.float32(hw))
    info = np.iinfo(x.dtype)
    y = np.rint(acc.astype(np.float32) * mult) + np.float32(int(yz))
    return np.clip(y, info.min, info.max).astype(x.dtype)  # type: ignore[no-any-return]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [U8, S8])
def test_nhwc_matches_onnxruntime_at_each_isa(isa: str, threads: int, dtype: Any,
                                              shape: tuple[int, ...],
                                              count_calls: Any) -> None:
    calls = count_calls(qlayout, "_gap", "kernel")
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)
    for xz, yz in ZEROS[dtype]:
        # output scales a quarter to twice the input's: the averages spread over the range
        for ratio in (0.25, 1.0, 2.0):
            q = [np.array(0.05, np.float32), np.array(xz, dtype),
                 np.array(0.05 * ratio, np.float32), np.array(yz, dtype)]
            (got,) = plugin_kit.run_plugin(_plugin(), [x, *q],
                                           formats=[F.HWC, *[F.LINEAR] * 4, F.HWC])
            np.testing.assert_array_equal(got, _onnxruntime(x, q), err_msg=f"{xz} {yz} {ratio}")
            np.testing.assert_array_equal(got, _spec(x, q))
    assert calls["kernel"] == 3 * len(ZEROS[dtype])


def test_extreme_values_saturate_like_onnxruntime(isa: str) -> None:
    """Every pixel at the type's end, the zero point at the other: the sums at their largest,
    the averages far outside the output type (saturated) and exactly on it."""
    for dtype in (U8, S8):
        info = np.iinfo(dtype)
        for fill, xz in ((info.max, info.min), (info.min, info.max)):
            x = np.full((2, 19, 56, 56), fill, dtype)
            for ys in (0.05, 0.2, 1.0):
                q = [np.array(0.1, np.float32), np.array(xz, dtype), np.array(ys, np.float32),
                     np.array(0, dtype)]
                (got,) = plugin_kit.run_plugin(_plugin(), [x, *q],
                                               formats=[F.HWC, *[F.LINEAR] * 4, F.HWC])
                np.testing.assert_array_equal(got, _onnxruntime(x, q))


def test_kept_arguments_follow_new_inputs_and_parameters() -> None:
    """The arguments kept between runs (constant parameters: the same read-only arrays, as
    an engine hands them) read each run's X and Y, and are made again when other parameter
    arrays or another shape come."""
    plugin = _plugin()
    q0 = [np.array(0.05, np.float32), np.array(3, U8), np.array(0.05, np.float32),
          np.array(7, U8)]
    x0 = RNG.integers(0, 256, (1, 9, 7, 7)).astype(U8)
    # the plugin kit negotiates the formats (X and Y NHWC) and checks one run
    (got,) = plugin_kit.run_plugin(plugin, [x0, *q0], formats=[F.HWC, *[F.LINEAR] * 4, F.HWC])
    np.testing.assert_array_equal(got, _onnxruntime(x0, q0))
    made = []
    for xs, shape in ((0.05, (1, 9, 7, 7)), (0.1, (1, 9, 7, 7)), (0.1, (2, 9, 5, 5))):
        q = [np.array(xs, np.float32), np.array(3, U8), np.array(0.05, np.float32),
             np.array(7, U8)]
        for v in q:
            v.flags.writeable = False
        for _ in range(2):  # the same parameters, another X and Y
            x = RNG.integers(0, 256, shape).astype(U8)
            out = np.empty((shape[0], 1, 1, shape[1]), U8)
            plugin.compute(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), *q, out=out)
            np.testing.assert_array_equal(out.reshape(-1), _onnxruntime(x, q).reshape(-1))
            made.append(plugin._kept_args[1])
    assert made[0] is made[1] and made[2] is made[3] and made[4] is made[5]
    assert made[1] is not made[2] and made[3] is not made[4]
