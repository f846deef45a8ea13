"""Shape, Gather and Slice: the operators of shape computations, with build-time values.

``Shape`` gives its input's dimensions as values, ``Gather`` and ``Slice`` pick from known
values, so ``Shape -> Gather/Slice -> Concat -> Reshape`` chains are known while the engine is
built, even with dynamic dimensions. At run time nothing is read back from the GPU: Shape
copies a device-resident table made on its first run, and Slice uses the starts/ends/axes/
steps it recorded at build time -- or, for starts computed from dynamic shapes, gathers with
indices computed on the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DataType, DimExpr, DimsExprs, IntLike

from ..serialization import CudaPlugin
from ._common import (
    Scratch,
    Shapes,
    absent,
    array_module,
    const_ints,
    host_ints,
    norm_axis,
    shape_values,
)
from ._values import Values, flat, value_array

__all__ = ["Shape", "Gather", "Slice_1", "Slice"]


#: a start/end at least this large (or this negative) means "to the end" (INT_MAX idioms)
_BIG = 2**31 - 1


def _shape_range(rank: int, start: int, end: int | None) -> tuple[int, int]:
    def clamp(v: int) -> int:
        return min(max(v + rank if v < 0 else v, 0), rank)
    return clamp(start), clamp(rank if end is None else end)


class Shape(CudaPlugin):
    """The input's shape as INT64; ``start``/``end`` (opset 15) take a part of it."""

    attributes: ClassVar[dict[str, Any]] = {"start": 0, "end": None}

    def setup(self) -> None:
        self.scratch = Scratch()

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        s, e = _shape_range(len(inputs[0]), self.attrs["start"], self.attrs["end"])
        return [[max(e - s, 0)]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        s, e = _shape_range(len(inputs[0]), self.attrs["start"], self.attrs["end"])
        return [list(inputs[0])[s:e]]

    def compute(self, x: Any, *, out: Any, start: int, end: int | None) -> None:
        xp = array_module(x, out)
        s, e = _shape_range(x.ndim, start, end)
        table = np.array(x.shape[s:e], np.int64).reshape(out.shape)
        xp.copyto(out, self.scratch.constant(xp, "shape", table))


class Gather(CudaPlugin):
    """``take`` along ``axis``: out = data.shape[:axis] + indices.shape +
    data.shape[axis+1:]; negative indices count from the end."""

    attributes: ClassVar[dict[str, Any]] = {"axis": 0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        data, idx = list(inputs[0]), list(inputs[1])
        a = norm_axis(self.attrs["axis"], len(data), "Gather axis")
        return [data[:a] + idx + data[a + 1:]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        data, idx = value_array(inputs[0]), value_array(inputs[1])
        if data is None or idx is None:
            return None
        a = norm_axis(self.attrs["axis"], data.ndim)
        n = data.shape[a]
        ints = np.array([DimExpr.wrap(v).get_constant_value() if DimExpr.wrap(v).is_constant()
                         else _not_constant() for v in idx.reshape(-1)], np.int64)
        ints = np.where(ints < 0, ints + n, ints).reshape(idx.shape)
        return [flat(np.take(data, ints, axis=a))]

    def compute(self, data: Any, indices: Any, *, out: Any, axis: int) -> None:
        xp = array_module(data, indices, out)
        xp.take(data, indices, axis=norm_axis(axis, data.ndim), out=out)


def _not_constant() -> int:
    raise ValueError("symbolic index")


def _dim_slice(dim: DimExpr, start: IntLike, end: IntLike, step: int) -> DimExpr:
    """The length of ``dim[start:end:step]`` with ONNX (= Python) clamping; symbolic starts
    and ends (from shapes) are taken as non-negative."""
    if step == 0:
        raise PluginInterfaceError("Slice: a step is 0")
    s, e = DimExpr.wrap(start), DimExpr.wrap(end)
    if dim.is_constant() and s.is_constant() and e.is_constant():
        n = dim.get_constant_value()
        return DimExpr.const(len(range(n)[slice(s.get_constant_value(), e.get_constant_value(),
                                                step)]))

    def bound(v: DimExpr, lo: int, hi: DimExpr) -> DimExpr:
        if not v.is_constant():
            return v if v.same_as(hi) else v.min(hi)
        c = v.get_constant_value()
        if c >= _BIG:
            return hi
        if c <= -_BIG:
            return DimExpr.const(lo)
        if c < 0:
            return (dim + c).max(lo)
        return v.min(hi)

    if step > 0:
        first, stop = bound(s, 0, dim), bound(e, 0, dim)
        span = stop - first
    else:
        first, stop = bound(s, 0, dim - 1), bound(e, -1, dim - 1)
        span = first - stop
    span = DimExpr.const(max(span.get_constant_value(), 0)) if span.is_constant() else \
        span.max(0)
    return span.ceil_div(abs(step))


def _normalized(rank: int, n: int, axes: Sequence[int] | None, steps: Sequence[int] | None
                ) -> tuple[list[int], list[int]]:
    ax = list(range(n)) if axes is None or not len(axes) else [norm_axis(a, rank, "Slice axis")
                                                              for a in axes]
    st = [1] * n if steps is None or not len(steps) else list(steps)
    if not len(ax) == len(st) == n:
        raise PluginInterfaceError("Slice: starts, ends, axes and steps differ in length")
    if 0 in st:
        raise PluginInterfaceError("Slice: a step is 0")
    if len(set(ax)) != len(ax):
        raise PluginInterfaceError(f"Slice: repeated axes {ax}")
    return ax, st


def _sliced(dims: Sequence[DimExpr], starts: Sequence[IntLike], ends: Sequence[IntLike],
            axes: Sequence[int] | None, steps: Sequence[int] | None) -> list[DimExpr]:
    if len(starts) != len(ends):
        raise PluginInterfaceError("Slice: starts and ends differ in length")
    ax, st = _normalized(len(dims), len(starts), axes, steps)
    out = list(dims)
    for s, e, a, k in zip(starts, ends, ax, st, strict=True):
        out[a] = _dim_slice(dims[a], s, e, k)
    return out


def _index(rank: int, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int] | None,
           steps: Sequence[int] | None) -> tuple[slice, ...]:
    ax, st = _normalized(rank, len(starts), axes, steps)
    index = [slice(None)] * rank
    for s, e, a, k in zip(starts, ends, ax, st, strict=True):
        index[a] = slice(s, e, k)
    return tuple(index)


class Slice_1(CudaPlugin):  # noqa: N801
    """Slice before opset 10: ``starts``, ``ends``, ``axes`` attributes (step 1)."""

    op_type = "Slice"
    plugin_version = "1"
    max_opset = 9
    attributes: ClassVar[dict[str, Any]] = {"starts": REQUIRED, "ends": REQUIRED, "axes": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        a = self.attrs
        return [list(_sliced(list(inputs[0]), a["starts"], a["ends"], a["axes"], None))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr = value_array(inputs[0])
        a = self.attrs
        return None if arr is None else [
            flat(arr[_index(arr.ndim, a["starts"], a["ends"], a["axes"], None)])]

    def compute(self, x: Any, *, out: Any, starts: Sequence[int], ends: Sequence[int],
                axes: Sequence[int] | None) -> None:
        array_module(x, out).copyto(out, x[_index(x.ndim, starts, ends, axes, None)])


class Slice(CudaPlugin):
    """Slice from opset 10: ``starts``, ``ends``, optional ``axes`` and ``steps`` inputs, all
    known when the engine is built (``shape_inputs``; starts/ends may be symbolic, computed
    from dynamic shapes). At run time only the starts matter (the output shape gives each
    length): constant ones are recorded with the plugin, symbolic ones are read on the device
    (a gather whose indices the GPU computes; that path allocates)."""

    plugin_version = "10"
    min_opset = 10
    shape_inputs = (1, 2, 3, 4)
    recorded_fields = ("__starts__", "__axes__", "__steps__")

    @property
    def graph_safe(self) -> bool:
        return "__starts__" in self.recorded

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        starts = shape_values(inputs, 1, "Slice", "starts")
        ends = shape_values(inputs, 2, "Slice", "ends")
        axes = None if absent(inputs, 3) else \
            const_ints(shape_values(inputs, 3, "Slice", "axes"), "Slice", "axes")
        steps = None if absent(inputs, 4) else \
            const_ints(shape_values(inputs, 4, "Slice", "steps"), "Slice", "steps")
        dims = _sliced(list(inputs[0]), starts, ends, axes, steps)
        known = all(v.is_constant() for v in starts)
        self.record("__starts__", [v.get_constant_value() for v in starts] if known else None)
        self.record("__axes__", axes)
        self.record("__steps__", steps)
        return [list(dims)]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr = value_array(inputs[0])
        if arr is None:
            return None
        params = [None if absent(inputs, k) else inputs[k].values for k in (1, 2, 3, 4)]
        if any(p is None for p in params[:2]) or any(
                not DimExpr.wrap(v).is_constant() for p in params if p for v in p):
            return None
        ints = [None if p is None else [DimExpr.wrap(v).get_constant_value() for v in p]
                for p in params]
        return [flat(arr[_index(arr.ndim, ints[0] or [], ints[1] or [], ints[2], ints[3])])]

    def compute(self, x: Any, starts: Any, ends: Any, axes: Any | None = None,
                steps: Any | None = None, *, out: Any) -> None:
        xp = array_module(x, out)
        rec = self.recorded
        ax = rec.get("__axes__", None if axes is None else host_ints(axes))
        st = rec.get("__steps__", None if steps is None else host_ints(steps))
        first = rec.get("__starts__", host_ints(starts) if xp is np else None)
        if first is not None:
            ax, st = _normalized(x.ndim, len(first), ax, st)
            index = [slice(None)] * x.ndim
            for s, a, k in zip(first, ax, st, strict=True):
                n = x.shape[a]
                s = min(max(s + n if s < 0 else s, 0), n if k > 0 else n - 1)
                stop = s + out.shape[a] * k
                index[a] = slice(s, None if stop < 0 else stop, k)
            xp.copyto(out, x[tuple(index)])
            return
        ax, st = _normalized(x.ndim, starts.size, ax, st)
        picked = x
        for k, (a, step) in enumerate(zip(ax, st, strict=True)):
            n = x.shape[a]
            s = starts.reshape(-1)[k].astype(xp.int64)
            s = xp.where(s < 0, s + n, s)
            s = xp.clip(s, 0, n if step > 0 else n - 1)
            idx = s + step * xp.arange(out.shape[a], dtype=xp.int64)
            picked = xp.take(picked, idx, axis=a)
        xp.copyto(out, picked)
