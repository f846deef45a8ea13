"""QLinearAdd and QLinearMul keep their compiled call's arguments between runs with the same
constant parameters (qelementwise.py ``_kept_run``): each later run reads its own A and B and
writes its own C, in either operand order, and new parameter arrays or shapes make them again.
Checked against onnxruntime on the same node, on NHWC tensors (a batch of one against its
per-channel B, the squeeze-and-excitation scale) and on LINEAR ones of the same shape."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper
from quant_support import ELEM, U8

import mini_infer_core as mi
from mini_infer_core.plugin import PluginFieldCollection, TensorFormat
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.testing import plugin_kit

RNG = np.random.default_rng(77)
F = TensorFormat
NAMES = ["a", "as", "az", "b", "bs", "bz", "cs", "cz"]


def _plugin(op: str) -> Any:
    rec = mi.get_plugin_registry().get_creator(op, "1", "mini_infer.cpu_native")
    assert rec is not None
    return adapter.create(rec.creator, "n", PluginFieldCollection([]))


def _onnxruntime(op: str, values: list[np.ndarray]) -> np.ndarray:
    feeds = {"a": values[0], "b": values[3]}
    graph = helper.make_graph(
        [helper.make_node(op, NAMES, ["y"], domain="com.microsoft")], "g",
        [helper.make_tensor_value_info(k, ELEM[v.dtype], list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", ELEM[np.dtype(U8)], None)],
        [numpy_helper.from_array(v, n) for n, v in zip(NAMES, values, strict=True)
         if n not in feeds])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              ir_version=10)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feeds)
    return want  # type: ignore[no-any-return]


def _params(scale: float) -> list[np.ndarray]:
    params = [np.array(0.05, np.float32), np.array(100, U8), np.array(scale, np.float32),
              np.array(7, U8), np.array(0.06, np.float32), np.array(128, U8)]
    for p in params:
        p.flags.writeable = False
    return params


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("case", ["pixel_b", "pixel_a", "same_linear"])
def test_kept_arguments_read_each_runs_operands(op: str, case: str) -> None:
    plugin = _plugin(op)
    big, pixel = (1, 24, 5, 3), (1, 24, 1, 1)
    shapes = {"pixel_b": (big, pixel), "pixel_a": (pixel, big), "same_linear": (big, big)}[case]
    fmt = [F.LINEAR if s == pixel or case == "same_linear" else F.HWC for s in shapes]
    fy = F.LINEAR if case == "same_linear" else F.HWC
    # the plugin kit negotiates the formats; then runs as an engine makes them, on its arrays
    values = [RNG.integers(0, 256, shapes[0]).astype(U8), *_params(0.031)[:2],
              RNG.integers(0, 256, shapes[1]).astype(U8), *_params(0.031)[2:]]
    plugin_kit.run_plugin(plugin, values, formats=[fmt[0], F.LINEAR, F.LINEAR, fmt[1],
                                                   *[F.LINEAR] * 4, fy])
    made = []
    for scale in (0.031, 0.031, 0.02):
        params = _params(scale)  # new read-only arrays: the first run of each makes them
        for _ in range(2):
            a, b = (RNG.integers(0, 256, s).astype(U8) for s in shapes)
            values = [a, *params[:2], b, *params[2:]]
            phys = [v.transpose(0, 2, 3, 1).copy() if f is F.HWC else v
                    for v, f in zip((a, b), fmt, strict=True)]
            out = np.empty((1, 5, 3, 24) if fy is F.HWC else big, U8)
            plugin.compute(phys[0], *params[:2], phys[1], *params[2:], out=out)
            got = out.transpose(0, 3, 1, 2) if fy is F.HWC else out
            # onnxruntime within one quantum (its QLinearAdd/Mul round differently: see
            # test_qformats.py), and a new plugin's first, unkept run bit for bit
            want = _onnxruntime(op, values)
            assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
            (fresh,) = plugin_kit.run_plugin(_plugin(op), values, formats=[
                fmt[0], F.LINEAR, F.LINEAR, fmt[1], *[F.LINEAR] * 4, fy])
            np.testing.assert_array_equal(got, fresh)
            assert plugin._kept_run is not None
            made.append(plugin._kept_run[1])
    assert made[0] is made[1] and made[2] is made[3] and made[4] is made[5]
    assert made[1] is not made[2] and made[3] is not made[4]
