"""ReduceLogSumExp's compiled case (``_vec.c``'s ``mi_row_logsumexp_f32`` under
:mod:`mini_infer_cpu_native.logsumexp`: the trailing axes of a float32 tensor), against
onnxruntime and float64 NumPy (SciPy's ``logsumexp`` form: the max taken out), bound to the
step's arrays (the input computed by an Add before it) and run through ``compute`` (a graph
input); the other cases go to cpu_basic and are checked the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import logsumexp
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core

RNG = np.random.default_rng(7)


def _model(shape: tuple[int, ...], axes: list[int], keepdims: int, opset: int,
           bound: bool) -> onnx.ModelProto:
    """x -> (Add 0: the reduction's input computed, so its step is bound) ->
    ReduceLogSumExp(axes) -> y; opset 18 takes the axes as a constant input."""
    nodes, inits = [], [numpy_helper.from_array(np.zeros(1, np.float32), "zero")]
    src = "x"
    if bound:
        nodes.append(helper.make_node("Add", ["x", "zero"], ["t"]))
        src = "t"
    if opset >= 18:
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        nodes.append(helper.make_node("ReduceLogSumExp", [src, "axes"], ["y"],
                                      keepdims=keepdims))
    else:
        nodes.append(helper.make_node("ReduceLogSumExp", [src], ["y"], axes=axes,
                                      keepdims=keepdims))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                   ["N", *shape[1:]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _want(x: np.ndarray, axes: list[int], keepdims: int) -> np.ndarray:
    """float64 log-sum-exp, the largest value taken out (NaN and infinities as NumPy gives
    them: a row of -inf gives -inf, a +inf gives +inf)."""
    x64 = x.astype(np.float64)
    m = np.max(np.where(np.isfinite(x64), x64, -np.inf), axis=tuple(axes), keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.log(np.sum(np.exp(x64 - m), axis=tuple(axes), keepdims=True)) + m
    return r if keepdims else r.squeeze(tuple(axes))


@pytest.fixture
def compiled(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    """How often the plugin made the compiled call (a test fails if another path ran)."""
    return count_calls(logsumexp, "row_logsumexp_call", "calls")


CASES = [((1, 3), [1]), ((5, 7), [1]), ((1, 3), [-1]), ((2, 3, 4), [1, 2]), ((2, 3, 4), [2]),
         ((4, 6), [0, 1])]


@pytest.mark.parametrize(("shape", "axes"), CASES)
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("bound", [True, False], ids=["bound", "compute"])
def test_trailing_axes_are_compiled_and_agree(shape: tuple[int, ...], axes: list[int],
                                              keepdims: int, opset: int, bound: bool,
                                              compiled: dict[str, int]) -> None:
    model = _model(shape, axes, keepdims, opset, bound)
    x = (RNG.standard_normal(shape) * 40).astype(np.float32)  # naive Bayes' scale
    ours = mini_infer_core.InferenceSession(model).run(None, {"x": x})[0]
    theirs = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert ours.shape == theirs.shape and ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, _want(x, axes, keepdims), rtol=1e-6, atol=1e-6)
    assert compiled["calls"] >= 1


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "compute"])
def test_infinities_nan_and_empty_rows(bound: bool, compiled: dict[str, int]) -> None:
    """A row with +inf gives +inf, a row of -inf gives -inf, a -inf among finite values
    counts as 0, a NaN gives NaN (onnxruntime's answers); no rows at all: an empty output
    (cpu_basic's path, onnxruntime agrees)."""
    model = _model((4, 3), [1], 0, 17, bound)
    x = np.array([[1.0, np.inf, 2.0], [-np.inf] * 3, [-np.inf, 0.5, -3.0],
                  [np.nan, 1.0, 2.0]], np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ours = mini_infer_core.InferenceSession(model).run(None, {"x": x})[0]
    np.testing.assert_array_equal(ours, sess.run(None, {"x": x})[0])
    np.testing.assert_array_equal(ours, _want(x, [1], 0).astype(np.float32))
    assert compiled["calls"] >= 1
    empty = np.zeros((0, 3), np.float32)
    got = mini_infer_core.InferenceSession(model).run(None, {"x": empty})[0]
    assert got.shape == (0,) == sess.run(None, {"x": empty})[0].shape


def test_other_axes_go_to_cpu_basic(compiled: dict[str, int]) -> None:
    """A leading axis (not trailing) is cpu_basic's NumPy reduction, still right."""
    model = _model((3, 5), [0], 1, 17, True)
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    ours = mini_infer_core.InferenceSession(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, _want(x, [0], 1), rtol=1e-5, atol=1e-6)
    assert compiled["calls"] == 0
