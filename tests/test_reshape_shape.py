"""A Reshape whose target is computed from its input's shape (torch's channel shuffle with a
symbolic batch) reads a constant target, and the shape chain is pruned
(``mini_infer_core/builder/reshape_shape.py``); onnxruntime is the oracle."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from helpers import make_model
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi


def _ort(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any]:
    return ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)


def _i64(name: str, *v: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(v, np.int64), name)


def _shuffle(batch_entry: str = "n", allowzero: int = 0) -> onnx.ModelProto:
    """x (batch, 6, 2, 3) -> Reshape to (Shape(x)[0], 2, 3, 2, 3) -> Transpose (0, 2, 1, 3, 4)
    -> Reshape to (Shape(x)[0], 6, 2, 3), as torch exports ShuffleNet's channel shuffle;
    ``batch_entry`` "w": x is (batch, 6, 2, w) and the targets end with Shape(x)[3] where
    they end with 3 (a symbolic dimension of another index: the first entry is batch)."""
    w = batch_entry == "w"
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Shape", ["r"], ["s"]),
             helper.make_node("Gather", ["s", "i"], ["b"], axis=0),
             helper.make_node("Unsqueeze", ["b", "ax0"], ["bu"]),
             helper.make_node("Gather", ["s", "i3"], ["wb"], axis=0),
             helper.make_node("Unsqueeze", ["wb", "ax0"], ["wu"]),
             helper.make_node("Concat", ["bu", "t1", *(["wu"] if w else [])], ["shape1"],
                              axis=0),
             helper.make_node("Concat", ["bu", "t2", *(["wu"] if w else [])], ["shape2"],
                              axis=0)]
    nodes += [helper.make_node("Reshape", ["r", "shape1"], ["a"], allowzero=allowzero),
             helper.make_node("Transpose", ["a"], ["t"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t", "shape2"], ["y"], allowzero=allowzero)]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "i"),
             numpy_helper.from_array(np.array(3, np.int64), "i3"), _i64("ax0", 0),
             _i64("t1", 2, 3, 2, *([] if w else [3])), _i64("t2", 6, 2, *([] if w else [3]))]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                            ["batch", 6, 2, "w" if w else 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)


@pytest.mark.parametrize("batch", [1, 3])
def test_computed_batch_target_is_constant_and_matches_onnxruntime(batch: int) -> None:
    model = _shuffle()
    engine = mi.load(model)
    ops = [nd.op_type for nd in engine.nodes]
    assert "Shape" not in ops and "Concat" not in ops and "Gather" not in ops, ops
    x = np.random.default_rng(batch).standard_normal((batch, 6, 2, 3)).astype(np.float32)
    (got,) = mi.InferenceSession(engine).run(None, {"x": x})
    (want,) = _ort(model, {"x": x})
    np.testing.assert_array_equal(got, want)


def test_a_target_not_of_the_same_index_or_allowzero_keeps_the_shape_chain() -> None:
    # the last entry, w, is no constant and not the input's dimension at its index (5 > 3)
    model = _shuffle("w")
    engine = mi.load(model)
    assert "Shape" in [nd.op_type for nd in engine.nodes]
    x = np.random.default_rng(7).standard_normal((3, 6, 2, 3)).astype(np.float32)
    (got,) = mi.InferenceSession(engine).run(None, {"x": x})
    np.testing.assert_array_equal(got, _ort(model, {"x": x})[0])
    engine = mi.load(_shuffle(allowzero=1))  # a 0 would mean an empty dimension there
    assert "Shape" in [nd.op_type for nd in engine.nodes]
