"""The NHWC 8-bit MaxPool (``mi_qmaxpool_i8``, ``_qelt.c``): at every level of the integer
GEMM this CPU runs (AVX-512BW where it is AVX-512 VNNI, the plain loop below), on 1 and 2
threads (the pool shares output rows from 64 KiB of output), against onnxruntime's MaxPool of
the same 8-bit tensor bit for bit; channel counts around the 64-byte vectors."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper
from quant_support import ELEM, S8, U8

import mini_infer_core as mi
from mini_infer_core.plugin import PluginField, PluginFieldCollection, TensorFormat
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.testing import plugin_kit

RNG = np.random.default_rng(2537)



def _onnxruntime(x: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    node = helper.make_node("MaxPool", ["x"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", ELEM[x.dtype], list(x.shape))], [helper.make_tensor_value_info(
            "y", ELEM[x.dtype], None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("dtype", [U8, S8])
@pytest.mark.parametrize("c", [3, 24, 64, 65, 130])
@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [2, 3], "pads": [0, 2, 1, 0], "dilations": [2, 1]}])
def test_qmaxpool_at_each_level_and_thread_count(isa: str, threads: int, dtype: Any, c: int,
                                                 attrs: dict[str, Any]) -> None:
    info = np.iinfo(dtype)
    # 2 x 33 x 37 pixels: the larger channel counts reach the pool's 64 KiB of output
    x = RNG.integers(info.min, int(info.max) + 1, (2, c, 33, 37)).astype(dtype)
    x[:, c // 2] = info.min  # a channel all at the minimum beside the padding
    x[:, -1, :4, :4] = info.max  # saturated in a corner
    want = _onnxruntime(x, attrs)
    rec = mi.get_plugin_registry().get_creator("QMaxPool", "1", "mini_infer.cpu_native")
    assert rec is not None
    plugin = adapter.create(rec.creator, "n", PluginFieldCollection(
        [PluginField.from_value(k, v) for k, v in attrs.items()]))
    fmt = TensorFormat.HWC
    (got,) = plugin_kit.run_plugin(plugin, [x], formats=[fmt, fmt])
    np.testing.assert_array_equal(got, want)
