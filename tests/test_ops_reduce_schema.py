"""The reduction schemas (mini_infer_core.ops.reduce): build-time values of integer reductions
(shape arithmetic folds when the engine is built), and the empty-set values both devices'
kernels take from the schema, each against an independent oracle (NumPy, onnxruntime, onnx's
ReferenceEvaluator)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import make_model, ort_run
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core as mi
from mini_infer_core.ops import find_schema, reduce
from mini_infer_core.plugin import DimExpr, DimsExprs, fields_from_values
from mini_infer_core.registry import discover

N = DimExpr.sym("N")


def _values(plugin: Any, data: np.ndarray, axes: list[int] | None = None) -> list[int] | None:
    inputs = [DimsExprs(data.shape, values=[int(v) for v in data.reshape(-1)])]
    if axes is not None:
        inputs.append(DimsExprs((len(axes),), values=axes))
    got = plugin.output_values(inputs)
    return None if got is None else [d.get_constant_value() for d in got[0]]


@pytest.mark.parametrize(("op", "oracle"), [("ReduceSum", np.sum), ("ReduceProd", np.prod),
                                            ("ReduceMax", np.max), ("ReduceMin", np.min)])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_integer_reductions_of_known_values_give_build_time_values(op: str, oracle: Any,
                                                                   keepdims: int) -> None:
    data = np.array([[3, -1, 4], [1, 5, -9]], np.int64)
    new: Any = find_schema(op, 18)
    for axes in ([1], [0], [-1, 0]):
        want = oracle(data, axis=tuple(axes), keepdims=bool(keepdims)).reshape(-1).tolist()
        assert _values(new("r", keepdims=keepdims), data, axes) == want
        old: Any = find_schema(op, 11)
        assert _values(old("r", keepdims=keepdims, axes=axes), data) == want
    # no axes: everything, or (noop_with_empty_axes) nothing
    assert _values(new("r", keepdims=keepdims), data) == [oracle(data)]
    assert _values(new("r", noop_with_empty_axes=1), data, []) == data.reshape(-1).tolist()


def test_symbolic_values_fold_where_the_operation_allows() -> None:
    shape = DimsExprs((3,), values=[N, 3, 4])
    prod: Any = reduce.ReduceProd("p", keepdims=0).output_values([shape])
    total: Any = reduce.ReduceSum("s", keepdims=0).output_values([shape])
    assert prod is not None and total is not None
    for n in (1, 5):
        assert DimExpr.wrap(prod[0][0]).evaluate({"N": n}) == n * 12
        assert DimExpr.wrap(total[0][0]).evaluate({"N": n}) == n + 7
    # an extreme of a symbol is not known; a mean is never folded
    assert reduce.ReduceMax("m").output_values([shape]) is None
    assert reduce.ReduceMean("m").output_values([DimsExprs((2,), values=[2, 4])]) is None
    # axes known only at run time: no values
    assert reduce.ReduceSum("s").output_values([shape, DimsExprs((1,))]) is None


def test_shape_arithmetic_through_reduce_prod_keeps_the_output_shape_exact() -> None:
    """Flatten x (N, 3, 4) with Reshape(x, ReduceProd(Shape(x))): the element count is a
    build-time value (N * 12, symbolic), so the Reshape's output shape is exact instead of
    known only at run time (a dimension named ``node#label``); results are onnxruntime's."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ReduceProd", ["s"], ["n"], keepdims=1),
             helper.make_node("Reshape", ["x", "n"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = make_model(nodes, [x], [y], opset=18)
    engine = mi.load(model, registry=discover())
    (dim,) = engine.tensors["y"].shape
    assert "N" in str(dim) and "#" not in str(dim)
    session = mi.InferenceSession(engine)
    for batch in (1, 5):
        feed = np.arange(batch * 12, dtype=np.float32).reshape(batch, 3, 4)
        got = session.run(None, {"x": feed})[0]
        np.testing.assert_array_equal(got, ort_run(model, {"x": feed})[0])


def _cuda_on_numpy(op: str, opset: int, x: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """The cuda_basic kernel run on NumPy arrays (no GPU needed), axes recorded at build."""
    from mini_infer_cuda_plugins.ops import creators

    creator = next(c for c in creators() if c.op_type == op and c.supports_opset(opset))
    plugin: Any = creator.create_plugin("r", fields_from_values({"keepdims": 1}))
    dims = plugin.get_output_dimensions(
        0, [DimsExprs(x.shape), DimsExprs(axes.shape, values=axes.tolist())], None)
    out = np.empty(dims.to_tuple(), x.dtype)
    plugin.enqueue([x, None], [out], None, None)
    return out


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the reference's mean of nothing
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax"])
def test_both_devices_reduce_an_empty_set_to_the_schemas_identity(op: str) -> None:
    from mini_infer_cpu_plugins.ops import creators

    x = np.zeros((2, 0, 3), np.float32)
    axes = np.array([1], np.int64)
    node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=1)
    model = make_model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], opset=18)
    want: Any = ReferenceEvaluator(model).run(None, {"x": x, "axes": axes})
    want = want[0]
    creator = next(c for c in creators() if c.op_type == op and c.supports_opset(18))
    cpu: Any = creator.create_plugin("r", fields_from_values({}))
    np.testing.assert_array_equal(cpu.compute(x, axes, keepdims=1, noop_with_empty_axes=0), want)
    np.testing.assert_array_equal(_cuda_on_numpy(op, 18, x, axes), want)
