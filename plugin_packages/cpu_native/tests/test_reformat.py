"""cpu_native's Reformat (``reformat.py``, ``_reformat.c``): the builder's steps between
LINEAR and the blocked formats, against a NumPy construction of each layout; chosen by the
builder over the core's NumPy copy, in an engine against onnxruntime, and read back from its
file in another process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core import BuilderConfig
from mini_infer_core.plugin import TensorFormat

calls = pytest.importorskip("mini_infer_cpu_native._blocked_calls")
native = pytest.importorskip("mini_infer_cpu_native._native")
reformat = pytest.importorskip("mini_infer_cpu_native.reformat")

Array = np.ndarray[Any, Any]


def _blocked(x: Array, k: int) -> Array:
    """(N, C, *S) as (N, ceil(C/k), *S, k), zeros past C: padded, split, moved."""
    pad = -x.shape[1] % k
    full = np.concatenate([x, np.zeros((x.shape[0], pad, *x.shape[2:]), x.dtype)], axis=1)
    split = full.reshape(x.shape[0], -1, k, *x.shape[2:])
    return np.moveaxis(split, 2, -1)


@pytest.mark.parametrize("k", [8, 16])
@pytest.mark.parametrize("shape", [(1, 3, 224, 224), (2, 35, 9, 11), (1, 16, 1, 1),
                                   (3, 70, 5), (1, 21, 3, 4, 5), (2, 1, 2000, 3)])
def test_reformat_kernel_both_ways(shape: tuple[int, ...], k: int) -> None:
    """Odd channel counts, 1-D to 3-D maps, positions past one pool item (2000 x 3)."""
    x = np.random.default_rng(len(shape) * 7 + shape[1]).standard_normal(shape).astype(
        np.float32) + 2.0  # no zeros of its own
    want = np.ascontiguousarray(_blocked(x, k))
    got = np.full(want.shape, np.nan, np.float32)  # every lane written, the padding 0
    native.run_calls([calls.reformat_call(x, got, shape[1], True)])
    np.testing.assert_array_equal(got, want)
    back = np.full(shape, np.nan, np.float32)
    native.run_calls([calls.reformat_call(want, back, shape[1], False)])
    np.testing.assert_array_equal(back, x)


def test_reformat_kernel_refuses_mismatched_arrays() -> None:
    x, y = np.zeros((1, 20, 4, 4), np.float32), np.zeros((1, 1, 4, 4, 16), np.float32)
    with pytest.raises(ValueError, match="mi_breformat_f32"):
        calls.reformat_call(x, y, 20, True)  # 20 channels need 2 blocks


def test_plugin_takes_linear_and_blocked_float32_only() -> None:
    from mini_infer_core.plugin import DataType, PluginTensorDesc

    plugin = reformat.NativeReformat(TensorFormat.LINEAR, TensorFormat.CHW16)
    lin = PluginTensorDesc((1, 20, 4, 4), DataType.FLOAT, TensorFormat.LINEAR)
    blk = PluginTensorDesc((1, 20, 4, 4), DataType.FLOAT, TensorFormat.CHW16)
    assert plugin.supports_format_combination(0, [lin, blk], 1)
    assert plugin.supports_format_combination(1, [lin, blk], 1)
    half = PluginTensorDesc((1, 20, 4, 4), DataType.HALF, TensorFormat.LINEAR)
    assert not plugin.supports_format_combination(0, [half, blk], 1)
    hwc = reformat.NativeReformat(TensorFormat.LINEAR, TensorFormat.HWC)
    assert not hwc.supports_format_combination(
        1, [lin, PluginTensorDesc((1, 20, 4, 4), DataType.FLOAT, TensorFormat.HWC)], 1)


def _convnet() -> tuple[onnx.ModelProto, Array]:
    """Three convolutions of 37 channels (odd: a padded last block), the builder's cost model
    keeping them blocked, reformats at the input and the output."""
    rng = np.random.default_rng(11)
    nodes, inits, x = [], [], "x"
    c = 5
    for i in range(3):
        w = (rng.standard_normal((37, c, 3, 3)) / np.sqrt(c * 9)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x, c = f"r{i}", 37
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 5, 23, 19))],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, rng.standard_normal((2, 5, 23, 19)).astype(np.float32)


_CHILD = """
import json, sys
import numpy as np
import mini_infer_core as mi
engine = mi.Runtime().load_engine(sys.argv[1])
ctx = engine.create_execution_context()
(y,) = ctx.execute({"x": np.load(sys.argv[2])}).values()
np.save(sys.argv[3], y)
print(json.dumps(sorted({n.plugin_namespace for n in engine.nodes if n.op_type == "Reformat"})))
"""


def test_builder_chooses_it_and_the_engine_file_keeps_it(tmp_path: Path) -> None:
    blocked = pytest.importorskip("mini_infer_cpu_native.blocked")
    if blocked.offered() is None:
        pytest.skip("this CPU runs no blocked kernels (neither AVX2 + FMA nor AVX-512F)")
    model, x = _convnet()
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    engine = mi.load(model, config=BuilderConfig(time_tactics=False))
    steps = [n for n in engine.nodes if n.op_type == "Reformat"]
    assert steps and {n.plugin_namespace for n in steps} == {"mini_infer.cpu_native"}
    assert {n.distribution for n in steps} == {"mini-infer-cpu-native"}
    (got,) = engine.create_execution_context().execute({"x": x}).values()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    strided = np.asfortranarray(x)  # a graph input with strides of its own
    (got,) = engine.create_execution_context().execute({"x": strided}).values()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    path, xs, out = tmp_path / "m.engine", tmp_path / "x.npy", tmp_path / "y.npy"
    engine.save(str(path))
    np.save(xs, x)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(xs), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == '["mini_infer.cpu_native"]'
    np.testing.assert_allclose(np.load(out), want, rtol=1e-4, atol=1e-5)
