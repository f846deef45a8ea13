"""Shape, Size and Slice: the operators of shape computations, with build-time values.

``Shape`` returns its input's dimensions as values (``output_values``), ``Size`` their product,
and ``Slice`` slices known values, so ``Shape -> Slice -> Concat -> Reshape`` chains are known
when the engine is built, even with dynamic dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DataType, DimExpr, DimsExprs, IntLike

from ..serialization import CpuPlugin
from ._dynamic import Shapes, ValuePlugin, Values, as_ints, emit, flat, value_array
from ._util import dim_prod, norm_axis

__all__ = ["Shape", "Size", "Slice_1", "Slice"]

Array = NDArray[Any]

#: a start/end at least this large (or this negative) means "to the end" (INT_MAX idioms)
_BIG = 2**31 - 1


def _shape_range(rank: int, start: int, end: int | None) -> tuple[int, int]:
    def clamp(v: int) -> int:
        return min(max(v + rank if v < 0 else v, 0), rank)
    return clamp(start), clamp(rank if end is None else end)


class Shape(CpuPlugin):
    """The input's shape as INT64; ``start``/``end`` (opset 15) take a part of it."""

    attributes: ClassVar[dict[str, Any]] = {"start": 0, "end": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        s, e = _shape_range(len(inputs[0]), self.attrs["start"], self.attrs["end"])
        return [[max(e - s, 0)]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        s, e = _shape_range(len(inputs[0]), self.attrs["start"], self.attrs["end"])
        return [list(inputs[0])[s:e]]

    def compute(self, x: Array, *, out: Array, start: int, end: int | None) -> None:
        s, e = _shape_range(x.ndim, start, end)
        out[...] = np.array(x.shape[s:e], np.int64).reshape(out.shape)


class Size(CpuPlugin):
    """The number of elements of the input, as an INT64 scalar."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [[]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        dims = list(inputs[0])
        const = math.prod(d.get_constant_value() for d in dims if d.is_constant())
        return [[dim_prod([d for d in dims if not d.is_constant()]) * const]]

    def compute(self, x: Array, *, out: Array) -> None:
        out[...] = np.int64(x.size)


def _bound(v: IntLike, dim: DimExpr, lo: int, hi: DimExpr) -> DimExpr:
    """ONNX's normalization of a slice start/end: negative counts from the end, then clamp to
    [lo, hi]. A symbolic ``v`` is taken as non-negative (it comes from shapes)."""
    e = DimExpr.wrap(v)
    if not e.is_constant():
        return e if e.same_as(hi) else e.min(hi)
    c = e.get_constant_value()
    if c >= _BIG:
        return hi
    if c <= -_BIG:
        return DimExpr.const(lo)
    if dim.is_constant():
        n = dim.get_constant_value()
        return DimExpr.const(min(max(c + n if c < 0 else c, lo), hi.get_constant_value()))
    if c < 0:
        return (dim + c).max(lo)
    return e if c == lo else e.min(hi)


def slice_dim(dim: DimExpr, start: IntLike, end: IntLike, step: int) -> DimExpr:
    """The length of ``dim[start:end:step]`` with ONNX (= Python) clamping."""
    if step == 0:
        raise PluginInterfaceError("Slice: a step is 0")
    s, e = DimExpr.wrap(start), DimExpr.wrap(end)
    if dim.is_constant() and s.is_constant() and e.is_constant():
        n = len(range(*slice(s.get_constant_value(), e.get_constant_value(), step).indices(
            dim.get_constant_value())))
        return DimExpr.const(n)
    if step > 0:
        first, stop = _bound(s, dim, 0, dim), _bound(e, dim, 0, dim)
        span, safe = stop - first, first.is_constant() and first.get_constant_value() == 0
    else:
        first, stop = _bound(s, dim, 0, dim - 1), _bound(e, dim, -1, dim - 1)
        span, safe = first - stop, stop.is_constant() and stop.get_constant_value() == -1
    if span.is_constant():
        span = DimExpr.const(max(span.get_constant_value(), 0))
    elif not safe:
        span = span.max(0)
    return span.ceil_div(abs(step))


def _slices(rank: int, starts: Sequence[int], ends: Sequence[int],
            axes: Sequence[int] | None, steps: Sequence[int] | None) -> tuple[slice, ...]:
    axes = list(range(len(starts))) if axes is None or not len(axes) else list(axes)
    steps = [1] * len(starts) if steps is None or not len(steps) else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise PluginInterfaceError("Slice: starts, ends, axes and steps differ in length")
    out = [slice(None)] * rank
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        if st == 0:
            raise PluginInterfaceError("Slice: a step is 0")
        out[norm_axis(a, rank, "Slice axis")] = slice(s, e, st)
    return tuple(out)


def sliced_dims(dims: Sequence[DimExpr], starts: Sequence[IntLike], ends: Sequence[IntLike],
                axes: Sequence[int] | None, steps: Sequence[int] | None) -> list[DimExpr]:
    rank = len(dims)
    axes = list(range(len(starts))) if axes is None or not len(axes) else list(axes)
    steps = [1] * len(starts) if steps is None or not len(steps) else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise PluginInterfaceError("Slice: starts, ends, axes and steps differ in length")
    out = list(dims)
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        k = norm_axis(a, rank, "Slice axis")
        out[k] = slice_dim(dims[k], s, e, st)
    return out


class Slice_1(CpuPlugin):  # noqa: N801
    """Slice before opset 10: ``starts``, ``ends``, ``axes`` attributes (step 1)."""

    op_type = "Slice"
    plugin_version = "1"
    max_opset = 9
    attributes: ClassVar[dict[str, Any]] = {"starts": REQUIRED, "ends": REQUIRED, "axes": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        a = self.attrs
        return [list(sliced_dims(list(inputs[0]), a["starts"], a["ends"], a["axes"], None))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr = value_array(inputs[0])
        if arr is None:
            return None
        a = self.attrs
        return [flat(arr[_slices(arr.ndim, a["starts"], a["ends"], a["axes"], None)])]

    def compute(self, x: Array, *, out: Array, starts: Sequence[int], ends: Sequence[int],
                axes: Sequence[int] | None) -> None:
        np.copyto(out, x[_slices(x.ndim, starts, ends, axes, None)])


class Slice(ValuePlugin):
    """Slice from opset 10: ``starts``, ``ends``, optional ``axes`` and ``steps`` inputs.

    Starts and ends may be symbolic (computed from shapes) when steps are known; unknown
    values make the node data-dependent."""

    min_opset = 10
    plugin_version = "10"
    value_inputs = (1, 2, 3, 4)

    def _params(self, inputs: Sequence[DimsExprs | None]
                ) -> tuple[Sequence[IntLike], Sequence[IntLike], list[int] | None,
                           list[int] | None] | None:
        starts, ends = self.values(inputs, 1), self.values(inputs, 2)
        axes = None if len(inputs) < 4 or inputs[3] is None else self.ints(inputs, 3)
        steps = None if len(inputs) < 5 or inputs[4] is None else self.ints(inputs, 4)
        if starts is None or ends is None or (axes is None and len(inputs) > 3
                                              and inputs[3] is not None) or (
                steps is None and len(inputs) > 4 and inputs[4] is not None):
            return None
        return starts, ends, axes, steps

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        params = self._params(inputs)
        if self.runtime(params is None):
            return [list(self.unknown_dims(len(dims)))]
        assert params is not None
        return [list(sliced_dims(dims, *params))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr, params = value_array(inputs[0]), self._params(inputs)
        if arr is None or params is None:
            return None
        starts, ends, axes, steps = params
        if not all(DimExpr.wrap(v).is_constant() for v in [*starts, *ends]):
            return None
        ints = [[DimExpr.wrap(v).get_constant_value() for v in vs] for vs in (starts, ends)]
        return [flat(arr[_slices(arr.ndim, ints[0], ints[1], axes, steps)])]

    def compute(self, x: Array, starts: Array, ends: Array, axes: Array | None = None,
                steps: Array | None = None, *, out: Array | None = None) -> Any:
        sl = _slices(x.ndim, as_ints(starts), as_ints(ends),
                     None if axes is None else as_ints(axes),
                     None if steps is None else as_ints(steps))
        return emit(x[sl], out)
