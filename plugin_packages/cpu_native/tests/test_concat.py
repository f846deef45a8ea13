"""mini-infer-cpu-native's Concat copies float32 inputs with compiled calls (kept between
runs) where they are contiguous runs of the output, as DenseNet's block concatenations are:
against onnxruntime, with inputs shared by several Concats (placed in one, copied into the
others), other axes, a batch of two and float64 (cpu_basic's)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import concat
from onnx import helper

import mini_infer_core

RNG = np.random.default_rng(29)


def _model(shape: list[int], axis: int, elem: int) -> onnx.ModelProto:
    """Three maps of x, joined as a DenseNet block does: (a, b), (a, b, c), (a, b, c, x)."""
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"]),
             helper.make_node("Abs", ["x"], ["c"]),
             helper.make_node("Concat", ["a", "b"], ["c1"], axis=axis),
             helper.make_node("Concat", ["a", "b", "c"], ["c2"], axis=axis),
             helper.make_node("Concat", ["a", "b", "c", "x"], ["c3"], axis=axis)]
    nodes += [helper.make_node("Mul", [f"c{i}", f"c{i}"], [f"y{i}"]) for i in (1, 2, 3)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", elem, shape)],
        [helper.make_tensor_value_info(f"y{i}", elem, None) for i in (1, 2, 3)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("shape, axis, dtype, compiled", [
    ([1, 24, 7, 9], 1, np.float32, True),
    ([1, 200, 28, 28], 1, np.float32, True),  # large enough to split over the pool
    ([1, 1, 6, 7], 2, np.float32, True),
    ([1, 6, 10], 1, np.float32, True),
    ([1, 5, 6, 7], 2, np.float32, False),  # channels before the axis: not runs
    ([2, 8, 5, 5], 1, np.float32, False),  # a batch: the inputs are not runs of the output
    ([1, 8, 5, 5], 1, np.float64, False),
])
def test_concat_against_onnxruntime(shape: list[int], axis: int, dtype: Any, compiled: bool,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    copies: list[int] = []
    real = concat.im2col_call

    def recorded(*args: Any) -> Any:
        copies.append(args[0].size)
        return real(*args)

    monkeypatch.setattr(concat, "im2col_call", recorded)
    elem = onnx.TensorProto.FLOAT if dtype == np.float32 else onnx.TensorProto.DOUBLE
    model = _model(shape, axis, elem)
    x = RNG.standard_normal(shape).astype(dtype)
    sess = mini_infer_core.InferenceSession(mini_infer_core.load(model))
    got = sess.run(None, {"x": x})
    again = sess.run(None, {"x": x * 2})  # the kept calls, new values
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for g, w in zip(got, ref.run(None, {"x": x}), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)
    for g, w in zip(again, ref.run(None, {"x": x * 2}), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)
    assert bool(copies) == compiled


def _shape_model() -> onnx.ModelProto:
    """A transformer export's head split: x (B, S, 8) reshaped to (B, S, 2, 4) by a shape that
    a Concat builds from int64 pieces (two taken from x's shape, two constants), and an int64
    Concat of two graph inputs along their last axis (with a batch: not runs of the output)."""
    i64 = onnx.TensorProto.INT64
    const = helper.make_tensor("c", i64, [2], [2, 4])
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "zero", "two"], ["bs"]),
             helper.make_node("Concat", ["bs", "c"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"]),
             helper.make_node("Concat", ["p", "q"], ["pq"], axis=1)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["B", "S", 8]),
                     helper.make_tensor_value_info("p", i64, [2, 3]),
                     helper.make_tensor_value_info("q", i64, [2, 2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None),
         helper.make_tensor_value_info("pq", i64, None)],
        [const, helper.make_tensor("zero", i64, [1], [0]),
         helper.make_tensor("two", i64, [1], [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_int64_concats_keep_their_copies_and_copy_each_runs_values() -> None:
    """int64 Concats (a shape built in the graph, two inputs along an inner axis) go through
    kept ``np.copyto`` calls: each run copies that run's values, as onnxruntime computes."""
    model = _shape_model()
    sess = mini_infer_core.InferenceSession(mini_infer_core.load(model))
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for b, s, k in ((1, 5, 0), (1, 5, 1), (2, 3, 2), (1, 5, 3)):
        feeds = {"x": RNG.standard_normal((b, s, 8)).astype(np.float32),
                 "p": RNG.integers(-9, 9, (2, 3)), "q": RNG.integers(-9, 9, (2, 2)) + k}
        for g, w in zip(sess.run(None, feeds), ref.run(None, feeds), strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
