"""Shape, Size and Slice -- NumPy kernels (schemas, with the build-time values that let shape
computations fold, in :mod:`mini_infer_core.ops.slicing`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.ops import slicing as schema
from mini_infer_core.plugin import shapes

from ..serialization import CpuPlugin
from ._dynamic import as_ints, emit

__all__ = ["Shape", "Size", "Slice_1", "Slice"]

Array = NDArray[Any]


class Shape(CpuPlugin, schema.Shape):
    def compute(self, x: Array, *, out: Array, start: int, end: int | None) -> None:
        s, e = shapes.shape_range(x.ndim, start, end)
        out[...] = np.array(x.shape[s:e], np.int64).reshape(out.shape)


class Size(CpuPlugin, schema.Size):
    def compute(self, x: Array, *, out: Array) -> None:
        out[...] = np.int64(x.size)


class Slice_1(CpuPlugin, schema.Slice_1):  # noqa: N801
    def compute(self, x: Array, *, out: Array, starts: Sequence[int], ends: Sequence[int],
                axes: Sequence[int] | None) -> None:
        np.copyto(out, x[shapes.slice_index(x.ndim, starts, ends, axes, None)])


class Slice(CpuPlugin, schema.Slice):
    """Unknown starts, ends, axes or steps make the node data-dependent: the slice is then
    returned."""

    def compute(self, x: Array, starts: Array, ends: Array, axes: Array | None = None,
                steps: Array | None = None, *, out: Array | None = None) -> Any:
        sl = shapes.slice_index(x.ndim, as_ints(starts), as_ints(ends),
                                None if axes is None else as_ints(axes),
                                None if steps is None else as_ints(steps))
        return emit(x[sl], out)
