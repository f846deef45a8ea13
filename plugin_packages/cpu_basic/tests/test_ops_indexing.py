"""Reductions, indexing and shape manipulation kernels against onnx's ReferenceEvaluator.

Each case runs one plugin the way the engine does: build-time values are given for the inputs
the plugin reads (``shape_inputs`` / ``value_inputs``), or withheld to check that it turns
data-dependent and then computes without ``out``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from cpu_support import make_plugin, run
from mini_infer_cpu_plugins.ops import creators
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from mini_infer_core.backend import MiniInferBackend
from mini_infer_core.plugin import DimExpr, DimsExprs, ExprBuilder

RNG = np.random.default_rng(3)
N = DimExpr.sym("N")


def f32(*shape: int) -> Any:
    return RNG.standard_normal(shape).astype(np.float32)


def i64(*values: int) -> Any:
    return np.array(values, np.int64)


def plugin_for(op: str, attrs: dict[str, Any], opset: int) -> Any:
    return make_plugin(op, attrs, opset)


def dims_of(plugin: Any, inputs: Sequence[Any], known: bool = True) -> list[DimsExprs | None]:
    reads = set(plugin.shape_inputs) | set(getattr(plugin, "value_inputs", ()))
    return [None if x is None else DimsExprs(
        x.shape, values=(np.asarray(x).reshape(-1).tolist()
                         if known and i in reads and x.dtype.kind in "iu" else None))
        for i, x in enumerate(inputs)]


def execute(plugin: Any, inputs: Sequence[Any], known: bool = True) -> list[Any]:
    """The shared harness's run, with the build-time values :func:`dims_of` gives, and each
    output checked against the dtype and the constant dims the plugin declared."""
    outs, shapes, types = run(plugin, inputs, dims_of(plugin, inputs, known))
    for o, s, k in zip(outs, shapes, range(len(outs)), strict=True):
        assert o.dtype == plugin.get_output_data_type(k, types).numpy
        assert len(o.shape) == len(s)
        for got, want in zip(o.shape, s, strict=True):
            assert not want.is_constant() or got == want.get_constant_value()
    return list(outs)


def _single_node(op: str, inputs: Sequence[Any], attrs: dict[str, Any], opset: int,
                 n_out: int) -> tuple[Any, dict[str, Any]]:
    """A model of one ``op`` node over ``inputs`` (None: absent), and its feeds."""
    names = [f"x{i}" if x is not None else "" for i, x in enumerate(inputs)]
    vi = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
          for n, x in zip(names, inputs, strict=True) if x is not None]
    outs = [f"y{k}" for k in range(n_out)]
    graph = helper.make_graph([helper.make_node(op, names, outs, **attrs)], "g", vi,
                              [helper.make_empty_tensor_value_info(o) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, {n: x for n, x in zip(names, inputs, strict=True) if x is not None}


def reference(op: str, inputs: Sequence[Any], attrs: dict[str, Any], opset: int,
              n_out: int) -> list[Any]:
    model, feeds = _single_node(op, inputs, attrs, opset, n_out)
    return list(ReferenceEvaluator(model).run(None, feeds))


def ort_reference(op: str, inputs: Sequence[Any], attrs: dict[str, Any], opset: int,
                  n_out: int) -> list[Any]:
    model, feeds = _single_node(op, inputs, attrs, opset, n_out)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(sess.run(None, feeds))


def check(op: str, inputs: Sequence[Any], attrs: dict[str, Any] | None = None,
          opset: int = 18, known: bool = True, rtol: float = 1e-5, oracle: str = "onnx",
          ref_op: str | None = None) -> list[Any]:
    attrs = attrs or {}
    plugin = plugin_for(op, attrs, opset)
    got = execute(plugin, inputs, known)
    run = ort_reference if oracle == "ort" else reference
    want = run(ref_op or op, inputs, attrs, opset, plugin.num_outputs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (op, g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=1e-6)
    return got


REDUCES = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
           "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]


# -- reductions ------------------------------------------------------------------------------
@pytest.mark.parametrize("op", REDUCES)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_attribute_and_input(op: str, keepdims: int) -> None:
    x = np.abs(f32(2, 3, 4)) + 0.5
    check(op, [x], {"axes": [0, -1], "keepdims": keepdims}, opset=11)
    check(op, [x], {"keepdims": keepdims}, opset=11)
    new = 13 if op == "ReduceSum" else 18
    check(op, [x, i64(1)], {"keepdims": keepdims}, opset=new)
    check(op, [x, i64(-1, 0)], {"keepdims": keepdims}, opset=new, known=False)
    check(op, [x], {"keepdims": keepdims}, opset=new)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the reference's mean of nothing
@pytest.mark.parametrize("op", REDUCES)
def test_reduce_noop_and_empty_set(op: str) -> None:
    x = np.abs(f32(2, 3)) + 0.5
    new = 13 if op == "ReduceSum" else 18
    check(op, [x, np.zeros(0, np.int64)], {"noop_with_empty_axes": 1}, opset=new)
    check(op, [np.zeros((2, 0, 4), np.float32), i64(1)], {"keepdims": 1}, opset=new)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"])
def test_reductions_written_straight_into_the_output(op: str) -> None:
    """The one-ufunc reductions of float tensors reduce into ``out`` (a (1, 1) mean as
    silero_vad's, all axes, none, a middle axis, float64) and agree with the reference."""
    new = 13 if op == "ReduceSum" else 18
    check(op, [f32(1, 1)], {"keepdims": 0}, opset=new)
    check(op, [f32(2, 5, 3), i64(1)], {"keepdims": 0}, opset=new)
    check(op, [f32(2, 5, 3).astype(np.float64), i64(0, 2)], {"keepdims": 1}, opset=new)
    check(op, [f32(4, 6), np.zeros(0, np.int64)], {"noop_with_empty_axes": 1}, opset=new)


def test_reduce_integer_and_bool() -> None:
    x = RNG.integers(-5, 5, (3, 4)).astype(np.int32)
    check("ReduceSum", [x, i64(1)], {"keepdims": 0}, opset=13)
    check("ReduceMax", [x, i64(0)], {}, opset=18)
    b = RNG.integers(0, 2, (3, 4)).astype(bool)
    check("ReduceMax", [b, i64(1)], {}, opset=20)


def test_reduce_runtime_axes_make_the_node_data_dependent() -> None:
    plugin = plugin_for("ReduceSum", {"keepdims": 0}, 13)
    dims = [DimsExprs((N, 3, 4)), DimsExprs((1,))]
    out = plugin.get_output_dimensions(0, dims, ExprBuilder())
    assert plugin.data_dependent and len(out) == 2 and not out.is_static()
    twin = plugin.clone()
    assert twin.data_dependent
    creator = next(c for c in creators() if c.op_type == "ReduceSum" and c.supports_opset(13))
    back: Any = creator.deserialize_plugin("node", plugin.serialize())
    assert back.data_dependent and back.attrs == plugin.attrs
    x = f32(2, 3, 4)
    np.testing.assert_allclose(back.compute(x, i64(1), keepdims=0, noop_with_empty_axes=0),
                               x.sum(axis=1), rtol=1e-6)
    static = plugin_for("ReduceSum", {"keepdims": 0}, 13)
    out = static.get_output_dimensions(0, [dims[0], DimsExprs((1,), values=(1,))],
                                       ExprBuilder())
    assert not static.data_dependent and out.display() == ("N", 4)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_extremes(op: str) -> None:
    x = RNG.integers(0, 3, (3, 5)).astype(np.float32)  # ties
    for last in (0, 1):
        check(op, [x], {"axis": 1, "keepdims": 0, "select_last_index": last}, opset=13)
    check(op, [x], {"axis": -2}, opset=11)


# -- selection ---------------------------------------------------------------------------
def test_topk_versions_and_ties() -> None:
    x = RNG.integers(0, 4, (3, 6)).astype(np.float32)
    check("TopK", [x], {"k": 3, "axis": 1}, opset=9)
    check("TopK", [x, i64(2)], {"axis": 0}, opset=10)
    for largest in (0, 1):
        check("TopK", [x, i64(4)], {"axis": -1, "largest": largest}, opset=11)
    check("TopK", [RNG.integers(0, 9, (2, 5)).astype(np.int64), i64(3)], {}, opset=11)
    got = check("TopK", [x, i64(2)], {}, opset=11, known=False)
    assert got[0].shape == (3, 2)


def test_nonzero_unique_compress() -> None:
    x = RNG.integers(0, 2, (3, 4)).astype(np.float32)
    check("NonZero", [x], opset=13)
    u = np.array([2, 1, 1, 3, 4, 3], np.float32)
    check("Unique", [u], {"sorted": 1}, opset=11)
    check("Unique", [u], {"sorted": 0}, opset=11)
    m = np.array([[1, 0, 1], [1, 0, 1], [2, 3, 4]], np.int64)
    check("Unique", [m], {"axis": 0, "sorted": 1}, opset=11)
    c = np.array([False, True, True])
    check("Compress", [f32(3, 2), c], {"axis": 0}, opset=11)
    check("Compress", [f32(3, 2), c], {}, opset=11)


# -- accumulation, triangles, normalizations ---------------------------------------------
@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumulative(exclusive: int, reverse: int) -> None:
    attrs = {"exclusive": exclusive, "reverse": reverse}
    check("CumSum", [f32(3, 4), np.array(1, np.int64)], attrs, opset=14)
    check("CumSum", [RNG.integers(0, 5, (5,)).astype(np.int32), np.array(0, np.int32)],
          attrs, opset=14)
    check("CumProd", [f32(3, 4), np.array(-1, np.int64)], attrs, opset=26)


def test_trilu_hardmax_norms() -> None:
    x = f32(2, 4, 5)
    for upper in (0, 1):
        check("Trilu", [x], {"upper": upper}, opset=14)
        check("Trilu", [x, np.array(-1, np.int64)], {"upper": upper}, opset=14)
    # before opset 13 the input is coerced to 2-D (ReferenceEvaluator ignores that)
    check("Hardmax", [f32(2, 3, 4)], {"axis": 1}, opset=11, oracle="ort")
    check("Hardmax", [f32(2, 3, 4)], {"axis": 1}, opset=13)
    check("LpNormalization", [f32(3, 4)], {"axis": 0, "p": 2}, opset=1, rtol=1e-4)
    check("MeanVarianceNormalization", [f32(2, 3, 4, 5)], {}, opset=13, rtol=1e-3)


# -- indexing and scattering -------------------------------------------------------------
def test_gathers() -> None:
    data = f32(4, 5, 3)
    check("Gather", [data, np.array([[0, -1], [2, 1]], np.int64)], {"axis": 1}, opset=13)
    check("Gather", [data, np.array(-2, np.int32)], {"axis": 0}, opset=13)
    # one index (silero_vad's state[0]): a view of the data copied out, any axis, either sign
    for axis, i in ((0, 3), (1, -5), (2, 1), (-1, -1)):
        check("Gather", [data, np.array(i, np.int64)], {"axis": axis}, opset=13)
    plugin = plugin_for("Gather", {"axis": 1}, 13)
    with pytest.raises(Exception, match="out of bounds"):
        execute(plugin, [data, np.array(5, np.int64)])
    idx = RNG.integers(-4, 4, (2, 5, 3)).astype(np.int64)
    check("GatherElements", [data, idx], {"axis": 0}, opset=13)
    check("GatherND", [data, np.array([[0, 1], [3, -1]], np.int64)], opset=13)
    check("GatherND", [data, np.array([[1], [0], [2], [4]], np.int64)], {"batch_dims": 1},
          opset=13)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatters(reduction: str) -> None:
    data = f32(3, 4)
    idx = np.array([[1, 0, 2, -1], [0, 2, 1, 1]], np.int64)
    upd = f32(2, 4)
    if reduction == "none":
        idx = np.array([[1, 0, 2, 3], [0, 2, 1, 1]], np.int64)
        check("ScatterElements", [data, idx[:, :3], upd[:, :3]], {"axis": 1}, opset=11)
        check("Scatter", [data, idx[:, :3], upd[:, :3]], {"axis": 1}, opset=10,
              ref_op="ScatterElements")
    check("ScatterElements", [data, idx, upd], {"axis": 1, "reduction": reduction}, opset=18)
    nd_idx = np.array([[1], [-1], [1]], np.int64)
    if reduction == "none":
        nd_idx = np.array([[1], [0]], np.int64)
    check("ScatterND", [data, nd_idx, f32(len(nd_idx), 4)], {"reduction": reduction},
          opset=18)


def test_onehot() -> None:
    idx = np.array([[0, 3], [-1, 7]], np.int64)
    vals = np.array([0.5, 2.0], np.float32)
    check("OneHot", [idx, np.array(5, np.int64), vals], {"axis": 1}, opset=11)
    check("OneHot", [idx.astype(np.float32), np.array(4.0, np.float32), vals], {},
          opset=11)


# -- shape computations and build-time values --------------------------------------------
def values_of(op: str, attrs: dict[str, Any], opset: int, dims: list[DimsExprs]) -> Any:
    plugin = plugin_for(op, attrs, opset)
    return [None if v is None else [str(x) for x in v] for v in plugin.output_values(dims)]


def test_shape_size_and_values() -> None:
    x = f32(2, 3, 4, 5)
    check("Shape", [x], opset=13)
    for start, end in [(1, None), (-3, -1), (10, None), (0, -10)]:
        attrs = {"start": start} | ({} if end is None else {"end": end})
        check("Shape", [x], attrs, opset=15)
    check("Size", [x], opset=13)
    sym = [DimsExprs((N, 3, 7))]
    assert values_of("Shape", {}, 13, sym) == [["N", "3", "7"]]
    assert values_of("Shape", {"start": -2}, 15, sym) == [["3", "7"]]
    assert values_of("Size", {}, 13, sym) == [["(N * 21)"]]


def test_values_flow_through_shape_ops() -> None:
    shp = DimsExprs((3,), values=(N, 3, 7))
    idx = DimsExprs((), values=(-3,))
    assert values_of("Gather", {"axis": 0}, 13, [shp, idx]) == [["N"]]
    assert values_of("Gather", {}, 13, [shp, DimsExprs((2,), values=(2, 0))]) == [["7", "N"]]
    assert values_of("Unsqueeze", {}, 13, [DimsExprs((), values=(N,)),
                                           DimsExprs((1,), values=(0,))]) == [["N"]]
    two = DimsExprs((2,), values=(5, -1))
    assert values_of("Concat", {"axis": 0}, 13, [shp, two]) == [["N", "3", "7", "5", "-1"]]
    starts, ends = DimsExprs((1,), values=(1,)), DimsExprs((1,), values=(2**62,))
    assert values_of("Slice", {}, 13, [shp, starts, ends]) == [["3", "7"]]
    assert values_of("Slice", {"starts": [0], "ends": [-1]}, 1, [shp]) == [["N", "3"]]
    rev = [shp, DimsExprs((1,), values=(-1,)), DimsExprs((1,), values=(-2**62,)),
           DimsExprs((1,), values=(0,)), DimsExprs((1,), values=(-1,))]
    assert values_of("Slice", {}, 13, rev) == [["7", "3", "N"]]
    assert values_of("Reshape", {}, 14, [shp, DimsExprs((2,), values=(1, 3))]) == [
        ["N", "3", "7"]]
    assert values_of("Squeeze", {}, 13, [DimsExprs((1,), values=(N,)),
                                         DimsExprs((1,), values=(0,))]) == [["N"]]
    mat = DimsExprs((2, 2), values=(1, 2, 3, N))
    assert values_of("Transpose", {}, 13, [mat]) == [["1", "3", "2", "N"]]
    assert values_of("Range", {}, 11, [DimsExprs((), values=(0,)), DimsExprs((), values=(7,)),
                                      DimsExprs((), values=(3,))]) == [["0", "3", "6"]]
    assert values_of("Expand", {}, 13, [DimsExprs((1,), values=(N,)),
                                       DimsExprs((1,), values=(2,))]) == [["N", "N"]]
    assert values_of("Tile", {}, 13, [DimsExprs((2,), values=(1, N)),
                                     DimsExprs((1,), values=(2,))]) == [["1", "N", "1", "N"]]
    assert values_of("Split", {"num_outputs": 2}, 18, [DimsExprs((3,), values=(1, 2, N))]) == [
        ["1", "2"], ["N"]]


def test_slice_keeps_its_index_only_while_the_same_constants_come_back() -> None:
    """The index is kept for read-only starts/ends/axes/steps (the engine's constants) while
    the same arrays come back; other arrays, or writable ones changed in place, give their
    own slice (each against the reference)."""
    x = f32(6, 8)
    plugin = plugin_for("Slice", {}, 13)

    def ro(*values: int) -> Any:
        a = i64(*values)
        a.flags.writeable = False
        return a

    starts, ends, axes = ro(1, -3), ro(5, 8), ro(0, 1)
    live = i64(0, 2)  # writable: changed between runs
    for args in ([starts, ends, axes], [starts, ends, axes], [ro(2, 0), ends, axes],
                 [live, ends, axes], "bump", [live, ends, axes]):
        if args == "bump":
            live[:] = (3, 1)
            continue
        inputs = [x, *args]
        want = reference("Slice", inputs, {}, 13, 1)[0]
        out = np.full(want.shape, np.nan, np.float32)
        plugin.compute(*inputs, out=out)
        np.testing.assert_array_equal(out, want)


def test_symbolic_slice_and_range_shapes() -> None:
    def shape(op: str, attrs: dict[str, Any], opset: int, dims: list[DimsExprs]) -> Any:
        return plugin_for(op, attrs, opset).get_output_dimensions(0, dims, ExprBuilder())

    x = DimsExprs((N, 8))
    one = DimsExprs((1,), values=(1,))
    out = shape("Slice", {}, 13, [x, one, DimsExprs((1,), values=(2**62,)),
                                  DimsExprs((1,), values=(0,))])
    assert [out.evaluate({"N": n}) for n in (0, 1, 5)] == [(0, 8), (0, 8), (4, 8)]
    out = shape("Slice", {}, 13, [x, DimsExprs((1,), values=(0,)), DimsExprs((1,), values=(N,)),
                                  DimsExprs((1,), values=(0,))])
    assert out.display() == ("N", 8)
    out = shape("Slice", {}, 13, [x, DimsExprs((1,), values=(-1,)),
                                  DimsExprs((1,), values=(-2**62,)),
                                  DimsExprs((1,), values=(0,)), DimsExprs((1,), values=(-1,))])
    assert out.evaluate({"N": 5}) == (5, 8)
    rng = shape("Range", {}, 11, [DimsExprs((), values=(0,)), DimsExprs((), values=(N,)),
                                  DimsExprs((), values=(2,))])
    assert rng.evaluate({"N": 7}) == (4,)


@pytest.mark.parametrize(("starts", "ends", "axes", "steps"), [
    ([1, 0], [3, 10], [0, 1], [1, 1]),
    ([-1], [-10**9], [1], [-2]),
    ([20], [-20], [0], [-1]),
    ([0, -3], [-1, 1000], [-2, 2], [2, 1]),
])
def test_slice(starts: list[int], ends: list[int], axes: list[int], steps: list[int]) -> None:
    x = f32(4, 5, 6)
    check("Slice", [x, i64(*starts), i64(*ends), i64(*axes), i64(*steps)], opset=13)
    check("Slice", [x, i64(*starts), i64(*ends), i64(*axes), i64(*steps)], opset=13,
          known=False)
    if all(s == 1 for s in steps):
        check("Slice", [x], {"starts": starts, "ends": ends, "axes": axes}, opset=9)


def test_split() -> None:
    x = f32(7, 4)
    check("Split", [x], {"axis": 0, "num_outputs": 3}, opset=18)
    check("Split", [x], {"axis": 0, "split": [2, 5]}, opset=11)
    got = execute(plugin_for("Split", {"axis": 0, "__num_outputs__": 2}, 13), [x, i64(3, 4)])
    np.testing.assert_array_equal(got[1], x[3:])
    got = execute(plugin_for("Split", {"axis": 1, "__num_outputs__": 2}, 13), [x])
    np.testing.assert_array_equal(got[0], x[:, :2])
    got = execute(plugin_for("Split", {"axis": 0, "__num_outputs__": 3}, 18),
                  [x, i64(1, 0, 6)], known=False)
    assert [g.shape[0] for g in got] == [1, 0, 6]
    with pytest.raises(Exception, match="number of outputs"):
        _ = plugin_for("Split", {}, 13).num_outputs


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_written_straight_into_the_output(mode: str) -> None:
    """Pads written in place in ``out`` (silero_vad's reflection of (1, 576) by 64 at the
    end; every axis padded; pads as wide as one reflection or wrap covers) and the ones it
    leaves to np.pad (wider than the axis, negative), against the reference."""
    check("Pad", [f32(1, 576), i64(0, 0, 0, 64)], {"mode": mode}, opset=18)
    x = f32(3, 4, 5)
    check("Pad", [x, i64(1, 3, 2, 2, 0, 4), np.array(-2.5, np.float32)], {"mode": mode},
          opset=19)
    check("Pad", [x, i64(2, 3, 4, 2, 3, 4)], {"mode": mode}, opset=19)
    if mode in ("constant", "edge"):
        check("Pad", [x, i64(5, 0, 7, 4, 9, 1)], {"mode": mode}, opset=19)
    check("Pad", [x, i64(1, -1, 2, 0, 1, -2)], {"mode": mode}, opset=19, oracle="ort")


# -- rearrangements and padding ----------------------------------------------------------
def test_expand_tile() -> None:
    x = f32(3, 1)
    check("Expand", [x, i64(2, 1, 4)], opset=13)
    check("Expand", [x, i64(3, 5)], opset=13, known=False)
    check("Tile", [x, i64(2, 3)], opset=13)
    check("Tile", [x, i64(1, 2)], opset=13, known=False)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad(mode: str) -> None:
    x = f32(3, 4)
    pads = i64(1, 2, 2, 1)
    check("Pad", [x, pads, np.array(1.5, np.float32)], {"mode": mode}, opset=19)
    check("Pad", [x, i64(0, -1, 1, 2)], {"mode": mode}, opset=19, known=False, oracle="ort")
    check("Pad", [x, i64(2, 1), None, i64(-1)], {"mode": mode}, opset=19)
    if mode != "wrap":
        check("Pad", [x, pads], {"mode": mode}, opset=13)
        check("Pad", [x], {"mode": mode, "pads": [1, 2, 2, 1], "value": 2.0}, opset=2)


def test_depth_space_reverse() -> None:
    x = f32(1, 8, 2, 3)
    for mode in ("DCR", "CRD"):
        check("DepthToSpace", [x], {"blocksize": 2, "mode": mode}, opset=13)
    check("SpaceToDepth", [f32(2, 3, 4, 6)], {"blocksize": 2}, opset=13)
    x = f32(4, 3, 2)
    check("ReverseSequence", [x, i64(4, 1, 2)], {"batch_axis": 1, "time_axis": 0}, opset=10)
    check("ReverseSequence", [x.transpose(1, 0, 2).copy(), i64(2, 0, 4)],
          {"batch_axis": 0, "time_axis": 1}, opset=10)


def test_generators() -> None:
    check("Range", [np.array(1, np.int64), np.array(10, np.int64), np.array(3, np.int64)],
          opset=11)
    check("Range", [np.array(5, np.int32), np.array(-4, np.int32), np.array(-2, np.int32)],
          opset=11)
    check("Range", [np.array(0.5, np.float32), np.array(2.0, np.float32),
                    np.array(0.25, np.float32)], opset=11)
    check("EyeLike", [f32(3, 5)], {"k": 1}, opset=9)
    check("EyeLike", [f32(4, 3)], {"k": -1, "dtype": onnx.TensorProto.INT32}, opset=9)


def test_center_crop_pad_col2im() -> None:
    check("CenterCropPad", [f32(5, 4, 3), i64(3, 7)], {"axes": [0, 1]}, opset=18)
    check("CenterCropPad", [f32(5, 4, 3), i64(6, 2, 3)], opset=18, known=False)
    x = f32(1, 8, 9)
    check("Col2Im", [x, i64(4, 4), i64(2, 2)], {"strides": [1, 1], "pads": [0, 0, 0, 0],
                                                  "dilations": [1, 1]}, opset=18, rtol=1e-4)
    x = f32(2, 4, 9)
    check("Col2Im", [x, i64(5, 5), i64(2, 2)], {"strides": [2, 2], "pads": [1, 0, 0, 1]},
          opset=18, rtol=1e-4)


# -- end to end ---------------------------------------------------------------------------
def test_engine_folds_shape_chain_and_runs_runtime_axes() -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape stays known with a dynamic batch;
    a ReduceMean whose axes come from a graph input runs data-dependent."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        helper.make_node("ReduceMean", ["flat", "axes"], ["y"], keepdims=0),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(i64(0), "zero1"),
             numpy_helper.from_array(i64(-1), "minus1")]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["B", 3, 4]),
         helper.make_tensor_value_info("axes", onnx.TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    rep = MiniInferBackend.prepare(model, "CPU")
    x = f32(5, 3, 4)
    (y,) = rep.run([x, i64(1)])
    np.testing.assert_allclose(y, x.reshape(5, -1).mean(axis=1), rtol=1e-5)
    (y,) = rep.run([f32(2, 3, 4), i64(0)])
    assert y.shape == (12,)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the oracles' inf - inf
@pytest.mark.parametrize("oracle", ["onnx", "ort"])
def test_reduce_log_sum_exp_finite_and_with_infinities(oracle: str) -> None:
    """Finite inputs take the shorter path (a naive Bayes model's one row), infinities the
    one that keeps them out of the max: both as the oracles give them."""
    x = f32(3, 5) * 40
    check("ReduceLogSumExp", [x], {"axes": [1], "keepdims": 0}, opset=13, oracle=oracle)
    check("ReduceLogSumExp", [x[:1]], {"axes": [1], "keepdims": 1}, opset=13, oracle=oracle)
    y = x.copy()
    y[0, 1] = -np.inf
    if oracle == "ort":  # a row of -inf: onnxruntime gives -inf, onnx's reference NaN
        y[1, :] = -np.inf
    check("ReduceLogSumExp", [y], {"axes": [1], "keepdims": 0}, opset=13, oracle=oracle)
