"""Output shapes and values of common operators (part of :mod:`mini_infer_core.plugin.shapes`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import PluginInterfaceError
from ._base import broadcast_dims
from ._dims import DimExpr, DimsExprs, IntLike
from ._shape_values import (
    Values,
    _int_product,
    const_ints,
    dim_prod,
    flat,
    norm_axis,
    value_array,
)

__all__ = [
    "SLICE_END",
    "binary_dims",
    "concat_dims",
    "concat_values",
    "flatten_dims",
    "gather_dims",
    "gather_values",
    "gemm_dims",
    "legacy_broadcast_rank",
    "matmul_dims",
    "reduced_dims",
    "reshape_dims",
    "reshape_target",
    "shape_range",
    "slice_axes",
    "slice_dim",
    "slice_dims",
    "slice_index",
    "slice_values",
    "squeeze_dims",
    "transpose_perm",
    "unsqueeze_dims",
]

# -- Reshape, Flatten, Transpose, Concat, Unsqueeze, Squeeze ----------------------------------
def reshape_dims(dims: Sequence[DimExpr], target: Sequence[IntLike], allowzero: int,
                 op: str = "Reshape") -> list[DimExpr]:
    """ONNX Reshape's output shape: a 0 copies the input dimension (unless ``allowzero``),
    one -1 is inferred.

    The inferred size cancels symbolic factors common to the input and the known target
    dimensions and folds the constant ones, so ``(N, 512, 7, 7) -> (0, -1)`` infers ``25088``
    and ``(N, 2, 3, 4) -> (-1, 12)`` infers ``N * 2``, not ``(N * 24) // 12``.
    """
    out: list[DimExpr | None] = []
    infer_at: int | None = None
    for i, v in enumerate(DimExpr.wrap(t) for t in target):
        c = v.get_constant_value() if v.is_constant() else None
        if c == 0 and not allowzero:
            if i >= len(dims):
                raise PluginInterfaceError(
                    f"{op}: target shape {[str(t) for t in target]} copies dimension {i} "
                    f"(0) of a rank-{len(dims)} input")
            out.append(dims[i])
        elif c == -1:
            if infer_at is not None:
                raise PluginInterfaceError(f"{op}: more than one -1 in the target shape")
            infer_at = i
            out.append(None)
        elif c is not None and c < -1:
            raise PluginInterfaceError(f"{op}: invalid target dimension {c}")
        else:
            out.append(v)
    if infer_at is not None:
        remaining = [d for d in dims if not d.is_constant()]
        c_total = _int_product([d.get_constant_value() for d in dims if d.is_constant()])
        rest: list[DimExpr] = []
        c_known = 1
        for k in out:
            if k is None:
                continue
            if k.is_constant():
                c_known *= k.get_constant_value()
                continue
            j = next((j for j, d in enumerate(remaining) if d.same_as(k)), None)
            if j is None:
                rest.append(k)
            else:
                remaining.pop(j)
        if not rest and c_known and c_total % c_known == 0:
            total, known = dim_prod(remaining) * (c_total // c_known), DimExpr.const(1)
        else:
            total, known = dim_prod(remaining) * c_total, dim_prod(rest) * c_known
        if total.is_constant() and known.is_constant():
            tv, kv = total.get_constant_value(), known.get_constant_value()
            if kv == 0 or tv % kv:
                raise PluginInterfaceError(
                    f"{op}: cannot reshape {[str(d) for d in dims]} to "
                    f"{[str(t) for t in target]}")
        out[infer_at] = total // known
    result = [d for d in out if d is not None]
    before, after = dim_prod(dims), dim_prod(result)
    if before.is_constant() and after.is_constant() and (
            before.get_constant_value() != after.get_constant_value()):
        raise PluginInterfaceError(
            f"{op}: cannot reshape {[str(d) for d in dims]} ({before} elements) to "
            f"{[str(t) for t in target]} ({after} elements)")
    return result


def reshape_target(shape: Sequence[int], target: Sequence[int], allowzero: int) -> list[int]:
    """Reshape's concrete output shape at run time (0 copies the input dimension unless
    ``allowzero``, -1 is inferred)."""
    out = [shape[i] if t == 0 and not allowzero else t for i, t in enumerate(target)]
    if -1 in out:
        known = _int_product([d for d in out if d != -1])
        out[out.index(-1)] = _int_product(shape) // known if known else 0
    return out


def flatten_dims(dims: Sequence[DimExpr], axis: int) -> list[DimExpr]:
    """Flatten's 2-D output shape: the product of the dimensions before ``axis`` (which may
    be the rank), and of the others."""
    a = axis + len(dims) if axis < 0 else axis
    if not 0 <= a <= len(dims):
        raise PluginInterfaceError(f"Flatten: axis {axis} out of range for rank {len(dims)}")
    return [dim_prod(dims[:a]), dim_prod(dims[a:])]


def transpose_perm(perm: Sequence[int] | None, rank: int) -> tuple[int, ...]:
    """Transpose's permutation: ``perm`` checked, or the axes reversed when it is absent."""
    if perm is None:
        return tuple(range(rank - 1, -1, -1))
    if sorted(perm) != list(range(rank)):
        raise PluginInterfaceError(f"Transpose: perm {perm} is not a permutation of {rank}")
    return tuple(perm)


def concat_dims(inputs: Sequence[Sequence[IntLike]], axis: int) -> list[IntLike]:
    """Concat's output shape: the inputs' (equal-rank) shapes, summed along ``axis``."""
    first: list[IntLike] = list(inputs[0])
    a = norm_axis(axis, len(first), "Concat axis")
    total = DimExpr.const(0)
    for dims in inputs:
        if len(dims) != len(first):
            raise PluginInterfaceError("Concat: inputs have different ranks")
        total = total + dims[a]
    return first[:a] + [total] + first[a + 1:]


def concat_values(inputs: Sequence[DimsExprs | None], axis: int) -> Values:
    """Concat's ``output_values``: the inputs' values concatenated along ``axis``."""
    arrays = [value_array(d) for d in inputs]
    known = [a for a in arrays if a is not None]
    if not arrays or len(known) != len(arrays):
        return None
    return [flat(np.concatenate(known, axis=norm_axis(axis, known[0].ndim)))]


def unsqueeze_dims(dims: Sequence[DimExpr], axes: Sequence[int] | int) -> list[DimExpr]:
    """Unsqueeze's output shape: a 1 inserted at each of ``axes`` (of the output)."""
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    rank = len(dims) + len(axes)
    at = sorted(norm_axis(a, rank, "Unsqueeze axis") for a in axes)
    if len(set(at)) != len(at):
        raise PluginInterfaceError(f"Unsqueeze: repeated axes {list(axes)}")
    rest = iter(dims)
    return [DimExpr.const(1) if i in at else next(rest) for i in range(rank)]


def squeeze_dims(dims: Sequence[DimExpr], axes: Sequence[int] | int | None) -> list[DimExpr]:
    """Squeeze's output shape: ``axes`` removed (they must not be known to differ from 1);
    with no axes, every dimension known to be 1 (a symbolic one is kept)."""
    if axes is None:
        return [d for d in dims if not (d.is_constant() and d.get_constant_value() == 1)]
    at = {norm_axis(a, len(dims), "Squeeze axis")
          for a in ((axes,) if isinstance(axes, int) else axes)}
    for a in at:
        if dims[a].is_constant() and dims[a].get_constant_value() != 1:
            raise PluginInterfaceError(f"Squeeze: dimension {a} is {dims[a]}, not 1")
    return [d for i, d in enumerate(dims) if i not in at]


# -- Shape, Gather, Slice ---------------------------------------------------------------------
#: a slice start/end at least this large (or this negative) means "to the end" (INT_MAX idioms)
SLICE_END = 2**31 - 1


def shape_range(rank: int, start: int, end: int | None) -> tuple[int, int]:
    """The part ``[start, end)`` of a rank-``rank`` shape that Shape-15 returns (negative
    bounds count from the end, both are clamped)."""
    def clamp(v: int) -> int:
        return min(max(v + rank if v < 0 else v, 0), rank)
    return clamp(start), clamp(rank if end is None else end)


def gather_dims(data: Sequence[IntLike], indices: Sequence[IntLike], axis: int
                ) -> list[IntLike]:
    """Gather's output shape: ``data[:axis] + indices + data[axis + 1:]``."""
    d, idx = list(data), list(indices)
    a = norm_axis(axis, len(d), "Gather axis")
    return d[:a] + idx + d[a + 1:]


def gather_values(data: DimsExprs | None, indices: DimsExprs | None, axis: int) -> Values:
    """Gather's ``output_values`` (negative indices count from the end); None unless the
    data's values and constant indices are known."""
    arr, idx = value_array(data), value_array(indices)
    if arr is None or idx is None or not all(DimExpr.wrap(v).is_constant()
                                             for v in idx.reshape(-1)):
        return None
    a = norm_axis(axis, arr.ndim)
    ints = np.array([DimExpr.wrap(v).get_constant_value() for v in idx.reshape(-1)], np.int64)
    ints = np.where(ints < 0, ints + arr.shape[a], ints).reshape(idx.shape)
    return [flat(np.take(arr, ints, axis=a))]


def _slice_bound(v: IntLike, dim: DimExpr, lo: int, hi: DimExpr) -> DimExpr:
    """ONNX's normalisation of a slice start/end: negative counts from the end, then clamp to
    ``[lo, hi]``. A symbolic ``v`` is taken as non-negative (it comes from shapes)."""
    e = DimExpr.wrap(v)
    if not e.is_constant():
        return e if e.same_as(hi) else e.min(hi)
    c = e.get_constant_value()
    if c >= SLICE_END:
        return hi
    if c <= -SLICE_END:
        return DimExpr.const(lo)
    if dim.is_constant():
        n = dim.get_constant_value()
        return DimExpr.const(min(max(c + n if c < 0 else c, lo), hi.get_constant_value()))
    if c < 0:
        return (dim + c).max(lo)
    return e if c == lo else e.min(hi)


def slice_dim(dim: IntLike, start: IntLike, end: IntLike, step: int) -> DimExpr:
    """The length of ``dim[start:end:step]`` with ONNX (= Python) clamping; symbolic starts
    and ends (computed from shapes) are taken as non-negative."""
    if step == 0:
        raise PluginInterfaceError("Slice: a step is 0")
    dim, s, e = DimExpr.wrap(dim), DimExpr.wrap(start), DimExpr.wrap(end)
    if dim.is_constant() and s.is_constant() and e.is_constant():
        n = len(range(*slice(s.get_constant_value(), e.get_constant_value(), step).indices(
            dim.get_constant_value())))
        return DimExpr.const(n)
    if step > 0:
        first, stop = _slice_bound(s, dim, 0, dim), _slice_bound(e, dim, 0, dim)
        span, safe = stop - first, first.is_constant() and first.get_constant_value() == 0
    else:
        # Python clamps both to [-1, dim - 1] for a negative step
        first, stop = _slice_bound(s, dim, -1, dim - 1), _slice_bound(e, dim, -1, dim - 1)
        span, safe = first - stop, stop.is_constant() and stop.get_constant_value() == -1
    if span.is_constant():
        span = DimExpr.const(max(span.get_constant_value(), 0))
    elif not safe:
        span = span.max(0)
    return span.ceil_div(abs(step))


def slice_axes(rank: int, n: int, axes: Sequence[int] | None, steps: Sequence[int] | None
               ) -> tuple[list[int], list[int]]:
    """The normalised axes and steps of a Slice with ``n`` starts (absent or empty axes:
    the first ``n``; steps: 1); raises for differing lengths, a zero step, repeated axes."""
    ax = list(range(n)) if axes is None or not len(axes) else [
        norm_axis(a, rank, "Slice axis") for a in axes]
    st = [1] * n if steps is None or not len(steps) else list(steps)
    if not len(ax) == len(st) == n:
        raise PluginInterfaceError("Slice: starts, ends, axes and steps differ in length")
    if 0 in st:
        raise PluginInterfaceError("Slice: a step is 0")
    if len(set(ax)) != len(ax):
        raise PluginInterfaceError(f"Slice: repeated axes {ax}")
    return ax, st


def slice_dims(dims: Sequence[DimExpr], starts: Sequence[IntLike], ends: Sequence[IntLike],
               axes: Sequence[int] | None, steps: Sequence[int] | None) -> list[DimExpr]:
    """Slice's output shape (starts and ends may be symbolic)."""
    if len(starts) != len(ends):
        raise PluginInterfaceError("Slice: starts, ends, axes and steps differ in length")
    ax, st = slice_axes(len(dims), len(starts), axes, steps)
    out = list(dims)
    for s, e, a, k in zip(starts, ends, ax, st, strict=True):
        out[a] = slice_dim(dims[a], s, e, k)
    return out


def slice_index(rank: int, starts: Sequence[int], ends: Sequence[int],
                axes: Sequence[int] | None, steps: Sequence[int] | None) -> tuple[slice, ...]:
    """The NumPy index of a Slice with constant starts and ends."""
    if len(starts) != len(ends):
        raise PluginInterfaceError("Slice: starts, ends, axes and steps differ in length")
    ax, st = slice_axes(rank, len(starts), axes, steps)
    index = [slice(None)] * rank
    for s, e, a, k in zip(starts, ends, ax, st, strict=True):
        index[a] = slice(s, e, k)
    return tuple(index)


def slice_values(data: DimsExprs | None, starts: Sequence[IntLike] | None,
                 ends: Sequence[IntLike] | None, axes: Sequence[IntLike] | None = None,
                 steps: Sequence[IntLike] | None = None) -> Values:
    """Slice's ``output_values``; None unless the data's values and constant starts, ends,
    axes and steps are known (absent axes and steps: the defaults)."""
    arr = value_array(data)
    if arr is None or starts is None or ends is None or not all(
            DimExpr.wrap(v).is_constant() for p in (starts, ends, axes, steps) if p
            for v in p):
        return None
    s, e = const_ints(starts, "Slice", "starts"), const_ints(ends, "Slice", "ends")
    ax = None if axes is None else const_ints(axes, "Slice", "axes")
    st = None if steps is None else const_ints(steps, "Slice", "steps")
    return [flat(arr[slice_index(arr.ndim, s, e, ax, st)])]


# -- Gemm, MatMul, reductions, broadcasting binary operators ----------------------------------
def gemm_dims(a: Sequence[IntLike], b: Sequence[IntLike], trans_a: int, trans_b: int
              ) -> list[IntLike]:
    """Gemm's output shape ``(M, N)`` for 2-D ``A`` and ``B`` (transposed when asked)."""
    if len(a) != 2 or len(b) != 2:
        raise PluginInterfaceError("Gemm: A and B must be 2-D")
    return [a[1] if trans_a else a[0], b[0] if trans_b else b[1]]


def matmul_dims(a: Sequence[IntLike], b: Sequence[IntLike], op: str = "MatMul"
                ) -> list[IntLike]:
    """NumPy matmul's output shape: 1-D operands promoted (and their axis dropped), batch
    dimensions broadcast."""
    if not a or not b:
        raise PluginInterfaceError(f"{op}: operands must have rank >= 1")
    shape: list[IntLike] = list(broadcast_dims(a[:-2], b[:-2]))
    if len(a) >= 2:
        shape.append(a[-2])
    if len(b) >= 2:
        shape.append(b[-1])
    return shape


def reduced_dims(dims: Sequence[DimExpr], axes: Sequence[int] | None, keepdims: bool
                 ) -> list[DimExpr]:
    """A reduction's output shape over ``axes`` (None: every axis), kept as 1s with
    ``keepdims``."""
    rank = len(dims)
    which = set(range(rank)) if axes is None else {norm_axis(a, rank, "axis") for a in axes}
    one = DimExpr.const(1)
    return [one if i in which else d for i, d in enumerate(dims) if keepdims or i not in which]


def legacy_broadcast_rank(b_rank: int, a_rank: int, broadcast: int, axis: int | None) -> int:
    """How many trailing 1-dimensions ``B`` needs for the opset<7 ``broadcast=1, axis=k``
    form of a binary operator (0 otherwise)."""
    if not broadcast or axis is None:
        return 0
    k = axis + a_rank if axis < 0 else axis
    return max(0, a_rank - k - b_rank)


def binary_dims(a: Sequence[IntLike], b: Sequence[IntLike], broadcast: int = 0,
                axis: int | None = None) -> list[DimExpr]:
    """The output shape of a broadcasting binary operator, opset<7 ``broadcast``/``axis``
    included."""
    extra = legacy_broadcast_rank(len(b), len(a), broadcast, axis)
    return broadcast_dims(a, [*b, *([1] * extra)])
