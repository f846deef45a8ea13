"""The shape, type and value inference helpers of ``mini_infer_core.plugin.shapes``, on
constant and symbolic dimensions."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, DimExpr, DimsExprs, IntLike, shapes
from mini_infer_core.plugin import shapes as S  # noqa: N812

N, H, W = DimExpr.sym("N"), DimExpr.sym("H"), DimExpr.sym("W")


def strs(dims: Any) -> list[Any]:
    """Dimensions (or values, nested per output) as strings; None stays None."""
    if dims is None:
        return None  # type: ignore[return-value]
    return [strs(d) if isinstance(d, (list, tuple)) else str(d) for d in dims]


def dx(*dims: IntLike) -> list[DimExpr]:
    """Dimension expressions."""
    return [DimExpr.wrap(d) for d in dims]


def vals(*values: IntLike) -> DimsExprs:
    """A 1-D tensor whose build-time values are known."""
    return DimsExprs([len(values)], list(values))


def test_public_module() -> None:
    import mini_infer_core.plugin as plugin

    assert plugin.shapes is shapes and "shapes" in plugin.__all__
    assert all(hasattr(shapes, name) for name in shapes.__all__)
    assert S.FLOAT_TYPES == (DataType.FLOAT, DataType.HALF, DataType.DOUBLE)


def test_dim_prod_and_norm_axis() -> None:
    assert S.dim_prod([]).get_constant_value() == 1
    assert S.dim_prod([2, 3, 4]).get_constant_value() == 24
    assert S.dim_prod([N, 3]).evaluate({"N": 5}) == 15
    assert S.norm_axis(-1, 4) == 3 and S.norm_axis(2, 4) == 2
    assert S.norm_axis(0, 0) == 0  # a scalar
    with pytest.raises(PluginInterfaceError, match="Gather axis 4 is out of range for rank 4"):
        S.norm_axis(4, 4, "Gather axis")
    with pytest.raises(PluginInterfaceError, match="out of range"):
        S.norm_axis(-5, 4)
    with pytest.raises(PluginInterfaceError, match="out of range for rank 0"):
        S.norm_axis(-1, 0)


def test_input_values_and_shape_values() -> None:
    inputs: list[DimsExprs | None] = [DimsExprs([N, 3]), vals(N, -1), None, DimsExprs([0]),
                                      DimsExprs([2])]
    assert S.absent(inputs, 2) and S.absent(inputs, 9) and not S.absent(inputs, 1)
    assert strs(S.input_values(inputs, 1)) == ["N", "-1"]
    assert S.input_values(inputs, 2) is None       # absent
    assert S.input_values(inputs, 3) == ()         # empty: no values needed
    assert S.input_values(inputs, 4) is None       # computed at run time
    assert strs(S.shape_values(inputs, 1, "Reshape", "shape")) == ["N", "-1"]
    with pytest.raises(PluginInterfaceError, match="its axes input .input 2. is missing"):
        S.shape_values(inputs, 2, "Squeeze", "axes")
    with pytest.raises(PluginInterfaceError, match=r"built \(a constant or computed from "
                       r"shapes only\) for the cuda device"):
        S.shape_values(inputs, 4, "Reshape", "shape", device="cuda")
    assert S.const_ints([DimExpr.const(2), -1], "Op", "axes") == [2, -1]
    with pytest.raises(PluginInterfaceError, match=r"Op: axes must be build-time constants, "
                       r"got \['N'\]"):
        S.const_ints([N], "Op", "axes")
    assert S.const(DimExpr.const(3)) == 3
    with pytest.raises(ValueError):
        S.const(N)


def test_value_array_flat_and_same_values() -> None:
    arr = S.value_array(DimsExprs([2, 2], [N, 1, 2, 3]))
    assert arr is not None and arr.shape == (2, 2) and arr.dtype == object
    assert strs(S.flat(arr.T)) == ["N", "2", "1", "3"]
    assert strs(S.flat(np.int64(4))) == ["4"]
    assert S.value_array(DimsExprs([N], [1, 2])) is None      # not a static shape
    assert S.value_array(DimsExprs([3], [1, 2])) is None      # values do not fill it
    assert S.value_array(DimsExprs([2])) is None              # unknown
    assert strs(S.same_values([vals(N, 4)])) == [["N", "4"]]
    assert S.same_values([DimsExprs([2])]) is None and S.same_values([]) is None


def test_elementwise_values() -> None:
    add = S.elementwise_values([vals(N, 3), vals(2)], lambda a, b: a + b)
    assert strs(add) == [["(N + 2)", "5"]]
    grid = S.elementwise_values([DimsExprs([2, 1], [1, 2]), vals(10, 20)],
                                lambda a, b: a * b)
    assert strs(grid) == [["10", "20", "20", "40"]]
    less = S.elementwise_values([vals(N, 3), vals(4)], lambda a, b: int(S.const(a) < S.const(b)))
    assert less is None                                        # symbolic: unknown
    assert S.elementwise_values([vals(1), DimsExprs([2])], lambda a, b: a) is None
    assert S.elementwise_values([vals(1, 2), vals(1, 2, 3)], lambda a, b: a) is None
    assert S.elementwise_values([DimsExprs([65], list(range(65)))], lambda a: a) is None
    assert strs(S.variadic_values([vals(N), vals(1), vals(H)], lambda a, b: a + b)) == [
        ["(H + N + 1)"]]


def test_trunc_div_cast_and_filled_values() -> None:
    c = DimExpr.const
    assert S.trunc_div(c(-7), c(2)) == -3 and S.trunc_div(c(7), c(-2)) == -3
    assert S.trunc_div(c(7), c(2)) == 3
    assert str(S.trunc_div(N, c(2))) == str(N // 2)
    for a, b in ((c(1), c(0)), (N, c(0)), (N, c(-2)), (c(4), N)):
        with pytest.raises(ValueError):
            S.trunc_div(a, b)
    v = (N, c(4))
    assert strs(S.cast_values(v, DataType.INT32)) == [["N", "4"]]
    assert S.cast_values(v, DataType.BOOL) is None
    assert S.cast_values((c(0), c(4)), DataType.BOOL) == [[0, 1]]
    # whole numbers survive a cast to float (Range(0, Cast<float>(N), 1) keeps its length)
    assert strs(S.cast_values(v, DataType.FLOAT)) == [["N", "4"]]
    assert S.cast_values(v, DataType.STRING) is None and S.cast_values(None, DataType.INT64) is None
    seven = np.array(7, np.int64)
    assert S.filled_values((c(2), c(3)), seven) == [[7] * 6]
    assert S.filled_values((), seven) == [[7]]
    assert S.filled_values((N, c(3)), seven) is None
    assert S.filled_values((c(9), c(9)), seven) is None            # too large to keep
    assert S.filled_values((c(2),), np.array(0.5, np.float32)) is None
    assert S.filled_values((c(2),), np.array(1.0, np.float32)) == [[1, 1]]


def test_comparisons_decide_from_constants_structure_and_bounds() -> None:
    """A dimension is never negative: N == -1 is false, N >= 0 true, N + 1 > 0 true; N == 3
    cannot be known at build time."""
    c = DimExpr.const
    assert S.compare(N, "==", c(-1)) == 0 and S.compare(N, "!=", c(-1)) == 1
    assert S.compare(N, "==", N) == 1 and S.compare(N * 2, "==", N * 2) == 1
    assert S.compare(N, ">=", c(0)) == 1 and S.compare(N + 1, ">", c(0)) == 1
    assert S.compare(c(-1), "<", N) == 1 and S.compare(N.min(8), "<=", c(8)) == 1
    assert S.compare(c(3), "<", c(2)) == 0
    for a, op, b in ((N, "==", c(3)), (N, "<", c(5)), (N - 1, ">=", c(0))):
        with pytest.raises(ValueError):
            S.compare(a, op, b)
    assert (N * 2 - 1).bounds() == (-1, None) and N.min(512).bounds() == (0, 512)


def test_window_params() -> None:
    w = S.window_params("Conv", 2, [3, DimExpr.const(3)], None, None, None, b"NOTSET")
    assert w == S.Window((3, 3), (1, 1), (1, 1), (0, 0, 0, 0), "NOTSET", False)
    assert w.nd == 2 and w.extent(0) == 3
    sym = S.window_params("Conv", 1, [DimExpr.sym("K")], [2], [2], [1, 1], "NOTSET")
    assert str(sym.kernel[0]) == "K"
    attrs = {"kernel_shape": None, "strides": [2, 2], "pads": [1, 1, 1, 1], "auto_pad": "NOTSET",
             "dilations": None}
    conv = S.window_from_attrs("Conv", 2, attrs, kernel=dx(3, 3))  # kernel from the weight
    assert conv == S.Window((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "NOTSET", False)
    pool = S.window_from_attrs("MaxPool", 1, {"kernel_shape": [2], "ceil_mode": 1})
    assert pool.kernel == (2,) and pool.ceil_mode and pool.auto_pad == "NOTSET"
    for kwargs, match in (({"auto_pad": "SAME"}, "auto_pad 'SAME' is not one of"),
                          ({"kernel": []}, "kernel_shape is required"),
                          ({"pads": [1, 1]}, r"pads \(1, 1\) should have 4 values"),
                          ({"strides": [0, 1]}, r"invalid kernel_shape \(3, 3\), strides"),
                          ({"kernel": [0, 3]}, "invalid kernel_shape")):
        args: dict[str, Any] = {"kernel": [3, 3], "strides": None, "dilations": None,
                                "pads": None, "auto_pad": "NOTSET", **kwargs}
        with pytest.raises(PluginInterfaceError, match=match):
            S.window_params("MaxPool", 2, **args)


WINDOWS = [
    dict(kernel=[3], strides=[1], pads=[1, 1]),
    dict(kernel=[3], strides=[2], pads=[0, 0]),
    dict(kernel=[3], strides=[2], pads=[1, 1], ceil_mode=1),
    dict(kernel=[2], strides=[2], pads=[0, 1], ceil_mode=1),
    dict(kernel=[1], strides=[3], pads=[0, 0], ceil_mode=1),
    dict(kernel=[3], strides=[2], dilations=[2], pads=[2, 1]),
    dict(kernel=[3], strides=[2], auto_pad="SAME_UPPER"),
    dict(kernel=[4], strides=[3], auto_pad="SAME_LOWER"),
    dict(kernel=[3], strides=[2], auto_pad="VALID"),
]


@pytest.mark.parametrize("spec", WINDOWS)
def test_symbolic_out_dims_agree_with_resolve(spec: dict[str, Any]) -> None:
    w = S.window_params("Pool", 1, spec["kernel"], spec["strides"], spec.get("dilations"),
                        spec.get("pads"), spec.get("auto_pad", "NOTSET"),
                        spec.get("ceil_mode", 0))
    (expr,) = S.symbolic_out_dims([H], w)
    for size in range(5, 20):
        g = S.resolve([size], w)
        assert expr.evaluate({"H": size}) == g.out[0]
        (const,) = S.symbolic_out_dims([size], w)
        assert const.get_constant_value() == g.out[0]
        ext = S.padded_extent([size], w, g)
        # every window fits the padded copy, and padding is needed exactly when it is larger
        assert (g.out[0] - 1) * w.strides[0] + w.extent(0) <= ext[0]
        assert S.needs_padding([size], g.begin, ext) == (ext[0] > size or g.begin[0] > 0)


def test_resolve_and_padded_extent() -> None:
    w = S.window_params("MaxPool", 2, [3, 3], [2, 2], None, None, "SAME_UPPER")
    g = S.resolve([7, 8], w)
    assert g == S.Geometry(begin=(1, 0), end=(1, 1), out=(4, 4))
    begin, end, out = g  # a NamedTuple unpacks
    assert S.padded_extent([7, 8], w, g) == (9, 9) and S.needs_padding([7, 8], begin, (9, 9))
    lower = S.window_params("MaxPool", 1, [4], [1], None, None, "SAME_LOWER")
    assert S.resolve([5], lower) == S.Geometry((2,), (1,), (5,))
    flat = S.window_params("Conv", 1, [1], None, None, None, "NOTSET")
    assert not S.needs_padding([5], (0,), S.padded_extent([5], flat, S.resolve([5], flat)))
    with pytest.raises(PluginInterfaceError, match="does not fit"):
        S.resolve([2], S.window_params("Conv", 1, [5], None, None, None, "VALID"))
    # a symbolic kernel size (a weight of dynamic shape) is allowed while building
    k = DimExpr.sym("K")
    (o,) = S.symbolic_out_dims([H], S.window_params("Conv", 1, [k], None, None, [1, 1],
                                                       "NOTSET"))
    assert o.evaluate({"H": 10, "K": 3}) == 10


def test_reshape() -> None:
    assert strs(S.reshape_dims(dx(N, 512, 7, 7), [0, -1], 0)) == ["N", "25088"]
    assert strs(S.reshape_dims(dx(N, 2, 3, 4), [-1, 12], 0)) == ["(N * 2)", "12"]
    assert strs(S.reshape_dims(dx(N, H, 4), [N, -1], 0)) == ["N", "(H * 4)"]
    assert strs(S.reshape_dims(dx(2, 3, 4), [4, -1], 0)) == ["4", "6"]
    assert strs(S.reshape_dims(dx(0, 3), [3, 0], 1)) == ["3", "0"]       # allowzero
    for dims, target, match in (([2, 3], [-1, -1], "more than one -1"),
                                ([2, 3], [0, 0, 0], "copies dimension 2"),
                                ([2, 3], [-2, 3], "invalid target dimension -2"),
                                ([2, 3], [4, -1], "cannot reshape"),
                                ([2, 3], [7], r"\(6 elements\) to \['7'\] \(7 elements\)")):
        with pytest.raises(PluginInterfaceError, match=match):
            S.reshape_dims([DimExpr.wrap(d) for d in dims], target, 0)
    assert S.reshape_target((2, 3, 4), [0, -1], 0) == [2, 12]
    assert S.reshape_target((0, 3), [-1, 3], 0) == [0, 3]
    assert S.reshape_target((2, 3), [3, 0], 1) == [3, 0]


def test_flatten_transpose_concat() -> None:
    assert strs(S.flatten_dims(dx(N, 3, H), 1)) == ["N", "(H * 3)"]
    assert strs(S.flatten_dims(dx(N, 3, 4), -1)) == ["(N * 3)", "4"]
    assert strs(S.flatten_dims(dx(N, 3), 2)) == ["(N * 3)", "1"]
    with pytest.raises(PluginInterfaceError, match="Flatten: axis 3 out of range"):
        S.flatten_dims(dx(N, 3), 3)
    assert S.transpose_perm(None, 3) == (2, 1, 0) and S.transpose_perm([0, 2, 1], 3) == (0, 2, 1)
    with pytest.raises(PluginInterfaceError, match="not a permutation"):
        S.transpose_perm([0, 0], 2)
    assert strs(S.concat_dims([[N, 3], [N, H]], -1)) == ["N", "(H + 3)"]
    with pytest.raises(PluginInterfaceError, match="different ranks"):
        S.concat_dims([[N, 3], [N, 3, 1]], 0)
    assert strs(S.concat_values([vals(N, 3), vals(4)], 0)) == [["N", "3", "4"]]
    two = S.concat_values([DimsExprs([2, 1], [N, 1]), DimsExprs([2, 1], [2, H])], 1)
    assert strs(two) == [["N", "2", "1", "H"]]
    assert S.concat_values([vals(N), DimsExprs([1])], 0) is None


def test_unsqueeze_squeeze() -> None:
    assert strs(S.unsqueeze_dims(dx(N, 3), [0, -1])) == ["1", "N", "3", "1"]
    assert strs(S.unsqueeze_dims(dx(N), 1)) == ["N", "1"]
    with pytest.raises(PluginInterfaceError, match="repeated axes"):
        S.unsqueeze_dims(dx(N), [1, -2])
    dims = dx(1, N, 1, 3)
    assert strs(S.squeeze_dims(dims, None)) == ["N", "3"]  # a symbolic dimension is kept
    assert strs(S.squeeze_dims(dims, [0, -2])) == ["N", "3"]
    assert strs(S.squeeze_dims(dims, 1)) == ["1", "1", "3"]  # N may be 1
    with pytest.raises(PluginInterfaceError, match="dimension 3 is 3, not 1"):
        S.squeeze_dims(dims, [3])


def test_shape_gather() -> None:
    assert S.shape_range(4, 0, None) == (0, 4) and S.shape_range(4, -2, None) == (2, 4)
    assert S.shape_range(4, 1, -1) == (1, 3) and S.shape_range(4, 5, 9) == (4, 4)
    assert strs(S.gather_dims([N, 5, 6], [2, 3], 1)) == ["N", "2", "3", "6"]
    assert strs(S.gather_dims([N, 5], [], 0)) == ["5"]
    shape = vals(N, 3, H, W)
    assert strs(S.gather_values(shape, DimsExprs([], [0]), 0)) == [["N"]]
    assert strs(S.gather_values(shape, vals(-1, 1), 0)) == [["W", "3"]]
    assert S.gather_values(shape, vals(N), 0) is None          # symbolic index
    assert S.gather_values(shape, DimsExprs([1]), 0) is None   # unknown indices
    table = DimsExprs([2, 2], [N, 1, 2, H])
    assert strs(S.gather_values(table, vals(1), 1)) == [["1", "H"]]


BIG = S.SLICE_END


@pytest.mark.parametrize("step", [1, 2, 3, -1, -2])
def test_slice_dim_matches_python(step: int) -> None:
    bounds = [0, 1, 3, -1, -3, 7, BIG, -BIG]
    for n, start, end in itertools.product(range(0, 7), bounds, bounds):
        expected = len(range(n)[slice(start, end, step)])
        got = S.slice_dim(DimExpr.const(n), start, end, step)
        assert got.get_constant_value() == expected, (n, start, end, step)
        sym = S.slice_dim(N, start, end, step)  # the same length for a symbolic size
        assert sym.evaluate({"N": n}) == expected, (n, start, end, step, str(sym))


def test_slice_symbolic_and_values() -> None:
    assert strs(S.slice_dims(dx(N, 3, H), [0, 1], [1, BIG], None, None)) == ["min(1, N)", "2", "H"]
    assert strs(S.slice_dims(dx(N, 3, H), [0], [H], [2], None)) == ["N", "3", "H"]
    assert strs(S.slice_dims(dx(N, 3, 8), [0], [H], [2], None)) == ["N", "3", "min(8, H)"]
    rev = S.slice_dims(dx(N, 3, H), [-1], [-BIG], [-1], [-1])[2]  # x[..., ::-1]
    assert all(rev.evaluate({"H": h}) == h for h in range(6))
    for axes, steps, match in (([0, 0], None, "repeated axes"), ([0], [1, 1], "differ"),
                               (None, [0, 1], "a step is 0"), ([5, 0], None, "out of range")):
        with pytest.raises(PluginInterfaceError, match=match):
            S.slice_dims(dx(N, 3), [0, 0], [1, 1], axes, steps)
    with pytest.raises(PluginInterfaceError, match="differ in length"):
        S.slice_dims(dx(N, 3), [0], [1, 2], None, None)
    assert S.slice_axes(3, 2, None, None) == ([0, 1], [1, 1])
    assert S.slice_axes(3, 1, [-1], [2]) == ([2], [2])
    assert S.slice_index(3, [1], [-1], [2], None) == (slice(None), slice(None), slice(1, -1, 1))
    shape = vals(N, 3, H, W)
    assert strs(S.slice_values(shape, [1], [3])) == [["3", "H"]]
    assert strs(S.slice_values(shape, [-1], [-BIG], [0], [-2])) == [["W", "3"]]
    assert strs(S.slice_values(shape, dx(0), dx(2), (), None)) == [["N", "3"]]  # empty axes
    assert S.slice_values(shape, [0], [N]) is None             # a symbolic end
    assert S.slice_values(DimsExprs([4]), [0], [1]) is None    # unknown data
    assert S.slice_values(shape, None, [1]) is None


def test_gemm_matmul_reduce_binary() -> None:
    assert strs(S.gemm_dims([N, 4], [4, 5], 0, 0)) == ["N", "5"]
    assert strs(S.gemm_dims([4, N], [5, 4], 1, 1)) == ["N", "5"]
    with pytest.raises(PluginInterfaceError, match="Gemm: A and B must be 2-D"):
        S.gemm_dims([N, 4, 1], [4, 5], 0, 0)
    assert strs(S.matmul_dims([N, 3, 4], [4, 5])) == ["N", "3", "5"]
    assert strs(S.matmul_dims([4], [2, 4, 5])) == ["2", "5"]
    assert strs(S.matmul_dims([N, 3, 4], [4])) == ["N", "3"]
    assert strs(S.matmul_dims([2, 1, 3, 4], [5, 4, 6])) == ["2", "5", "3", "6"]
    with pytest.raises(PluginInterfaceError, match="QLinearMatMul: operands must have rank"):
        S.matmul_dims([], [3], "QLinearMatMul")
    dims = dx(N, 3, H)
    assert strs(S.reduced_dims(dims, None, False)) == []
    assert strs(S.reduced_dims(dims, None, True)) == ["1", "1", "1"]
    assert strs(S.reduced_dims(dims, [-1, 0], False)) == ["3"]
    assert strs(S.reduced_dims(dims, [1], True)) == ["N", "1", "H"]
    assert strs(S.binary_dims([N, 3], [3])) == ["N", "3"]
    assert strs(S.binary_dims([N, 1], [H])) == ["N", "H"]
    assert strs(S.binary_dims([2, 3, 4, 5], [3, 4], broadcast=1, axis=1)) == ["2", "3", "4", "5"]
    assert S.legacy_broadcast_rank(1, 4, 1, -3) == 2 and S.legacy_broadcast_rank(1, 4, 0, 1) == 0
    with pytest.raises(PluginInterfaceError, match="do not broadcast"):
        S.binary_dims([2, 3], [4])
