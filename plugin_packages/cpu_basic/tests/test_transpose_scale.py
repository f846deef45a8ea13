"""Transpose absorbs a Mul of its output by one constant (attention's scaled Q and K^T, as
PyTorch's exporter writes them): the engine has no Mul step, and gives onnxruntime's values
(without its graph optimisations) bit for bit, also read back from an engine file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import mini_infer_core as mi


def _model(shape: tuple[int, ...], perm: list[int], scale: np.ndarray, first: bool) -> bytes:
    """x -> Transpose(perm) -> Mul(scale) [the transposed tensor first or second] -> Relu."""
    out_shape = [shape[p] for p in perm]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
    s = onnx.numpy_helper.from_array(scale, "s")
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=perm),
             helper.make_node("Mul", ["t", "s"] if first else ["s", "t"], ["m"]),
             helper.make_node("Relu", ["m"], ["y"])]
    graph = helper.make_graph(nodes, "g", [x], [y], [s])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]
                             ).SerializeToString()


def _onnxruntime(model: bytes, x: np.ndarray) -> np.ndarray:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


@pytest.mark.parametrize(("shape", "perm", "scale", "first"), [
    ((1, 128, 8, 64), [0, 2, 3, 1], np.array(0.35355339, np.float32), True),  # two passes
    ((1, 300, 4, 64), [0, 2, 3, 1], np.array(0.125, np.float32), False),  # 3 chunks
    ((1, 128, 8, 64), [0, 2, 1, 3], np.array([[[[0.35355339]]]], np.float32), False),
    ((2, 3, 5), [2, 0, 1], np.array([-1.7], np.float32), True)])
def test_transpose_absorbs_a_mul_by_one_constant(tmp_path: Path, shape: tuple[int, ...],
                                                 perm: list[int], scale: np.ndarray,
                                                 first: bool) -> None:
    model = _model(shape, perm, scale, first)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    engine = mi.load(model, device="cpu")
    assert "Mul" not in [n.op_type for n in engine.nodes]
    want = _onnxruntime(model, x)
    np.testing.assert_array_equal(mi.InferenceSession(engine).run(None, {"x": x})[0], want)
    engine.save(str(tmp_path / "t.engine"))
    loaded = mi.Runtime().load_engine(tmp_path / "t.engine")
    np.testing.assert_array_equal(mi.InferenceSession(loaded).run(None, {"x": x})[0], want)


def test_a_mul_by_a_tensor_is_not_absorbed() -> None:
    """A Mul whose other operand varies (per column here) stays its own step."""
    model = _model((4, 6), [1, 0], np.arange(4, dtype=np.float32), True)
    x = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)
    engine = mi.load(model, device="cpu")
    assert "Mul" in [n.op_type for n in engine.nodes]
    np.testing.assert_array_equal(mi.InferenceSession(engine).run(None, {"x": x})[0],
                                  _onnxruntime(model, x))
