"""Shape, Gather and Slice -- CuPy kernels (schemas, with the build-time values that let
shape computations fold, in :mod:`mini_infer_core.ops.slicing` and ``.indexing``).

At run time nothing is read back from the GPU: Shape copies a device-resident table made on
its first run, and Slice uses the starts/axes/steps it recorded at build time -- or, for
starts computed from dynamic shapes, gathers with indices computed on the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.ops import indexing, slicing
from mini_infer_core.plugin import DimExpr, DimsExprs, shapes
from mini_infer_core.plugin.shapes import Shapes

from ..serialization import CudaPlugin
from ._common import Scratch, array_module, host_ints
from .shape import BuildTimeValues

__all__ = ["Shape", "Gather", "Slice_1", "Slice"]


class Shape(CudaPlugin, slicing.Shape):
    def setup(self) -> None:
        self.scratch = Scratch()

    def compute(self, x: Any, *, out: Any, start: int, end: int | None) -> None:
        xp = array_module(x, out)
        s, e = shapes.shape_range(x.ndim, start, end)
        table = np.array(x.shape[s:e], np.int64).reshape(out.shape)
        xp.copyto(out, self.scratch.constant(xp, "shape", table))


class Gather(CudaPlugin, indexing.Gather):
    def compute(self, data: Any, indices: Any, *, out: Any, axis: int) -> None:
        xp = array_module(data, indices, out)
        xp.take(data, indices, axis=shapes.norm_axis(axis, data.ndim), out=out)


class Slice_1(CudaPlugin, slicing.Slice_1):  # noqa: N801
    def compute(self, x: Any, *, out: Any, starts: Sequence[int], ends: Sequence[int],
                axes: Sequence[int] | None) -> None:
        array_module(x, out).copyto(out, x[shapes.slice_index(x.ndim, starts, ends, axes, None)])


class Slice(CudaPlugin, BuildTimeValues, slicing.Slice):
    """Only the starts matter at run time (the output shape gives each length): constant
    ones are recorded with the plugin, symbolic ones (computed from dynamic shapes) are read
    on the device (a gather whose indices the GPU computes; that path allocates)."""

    hidden_fields = ("__starts__", "__axes__", "__steps__")

    @property
    def graph_safe(self) -> bool:
        return "__starts__" in self.hidden

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = super().output_shapes(inputs)
        params = self.params(inputs)
        assert params is not None  # else runtime() refused the node
        starts, _, axes, steps = params
        first = [DimExpr.wrap(v) for v in starts]
        known = all(v.is_constant() for v in first)
        self.record("__starts__", [v.get_constant_value() for v in first] if known else None)
        self.record("__axes__", axes)
        self.record("__steps__", steps)
        return dims

    def compute(self, x: Any, starts: Any, ends: Any, axes: Any | None = None,
                steps: Any | None = None, *, out: Any) -> None:
        xp = array_module(x, out)
        rec = self.hidden
        ax = rec.get("__axes__", None if axes is None else host_ints(axes))
        st = rec.get("__steps__", None if steps is None else host_ints(steps))
        first = rec.get("__starts__", host_ints(starts) if xp is np else None)
        if first is not None:
            ax, st = shapes.slice_axes(x.ndim, len(first), ax, st)
            index = [slice(None)] * x.ndim
            for s, a, k in zip(first, ax, st, strict=True):
                n = x.shape[a]
                s = min(max(s + n if s < 0 else s, 0), n if k > 0 else n - 1)
                stop = s + out.shape[a] * k
                index[a] = slice(s, None if stop < 0 else stop, k)
            xp.copyto(out, x[tuple(index)])
            return
        ax, st = shapes.slice_axes(x.ndim, starts.size, ax, st)
        picked = x
        for k, (a, step) in enumerate(zip(ax, st, strict=True)):
            n = x.shape[a]
            s = starts.reshape(-1)[k].astype(xp.int64)
            s = xp.where(s < 0, s + n, s)
            s = xp.clip(s, 0, n if step > 0 else n - 1)
            idx = s + step * xp.arange(out.shape[a], dtype=xp.int64)
            picked = xp.take(picked, idx, axis=a)
        xp.copyto(out, picked)
