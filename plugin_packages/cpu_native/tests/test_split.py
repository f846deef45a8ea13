"""Split bound to its step's arrays (:mod:`mini_infer_cpu_native.split`) against onnxruntime:
equal parts, sizes from the attribute (opset 11) and from an input (opset 18, 13), each
axis, parts of length 0, and a Split whose input is an engine input (a run that binds
nothing but goes through ``compute``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import split
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core

RNG = np.random.default_rng(3)


def _model(shape: tuple[int, ...], outputs: int, opset: int, inits: list[Any],
           inputs: list[str], **attrs: Any) -> onnx.ModelProto:
    names = [f"y{k}" for k in range(outputs)]
    nodes = [helper.make_node("Neg", ["x"], ["xn"]),  # the Split reads an arena array
             helper.make_node("Split", ["xn", *inputs], [f"s{k}" for k in range(outputs)],
                              **attrs)]
    nodes += [helper.make_node("Neg", [f"s{k}"], [n]) for k, n in enumerate(names)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


CASES = [  # (shape, outputs, opset, split sizes or None, axis)
    ((1, 512), 4, 18, None, 1),
    ((3, 7, 5), 3, 18, [2, 0, 5], 1),
    ((6, 4), 2, 13, [1, 5], 0),
    ((2, 3, 9), 3, 11, [3, 3, 3], -1),
    ((5, 8), 2, 18, None, -1),
]


@pytest.mark.parametrize("case", CASES)
def test_matches_onnxruntime(count_calls: Any, case: tuple[Any, ...]) -> None:
    shape, outputs, opset, sizes, axis = case
    inits, inputs, attrs = [], [], {"axis": axis}
    if sizes is not None and opset >= 13:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        inputs.append("sizes")
    elif sizes is not None:
        attrs["split"] = sizes
    if opset >= 18 and sizes is None:
        attrs["num_outputs"] = outputs
    model = _model(shape, outputs, opset, inits, inputs, **attrs)
    bound = count_calls(split, "_copies", "runs")
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for _ in range(3):  # the bound copies read the input's new values on every run
        x = RNG.standard_normal(shape).astype(np.float32)
        for g, w in zip(sess.run(None, {"x": x}), theirs.run(None, {"x": x}), strict=True):
            assert g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    assert bound["runs"] >= 2  # the runs after the first went through the bound copies
