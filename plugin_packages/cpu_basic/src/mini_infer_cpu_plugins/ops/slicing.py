"""Shape, Size and Slice -- NumPy kernels (schemas, with the build-time values that let shape
computations fold, in :mod:`mini_infer_core.ops.slicing`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.ops import slicing as schema
from mini_infer_core.plugin import shapes
from mini_infer_core.plugin.arrays import NDArray

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

    #: the index of the last call and what it was made from (rank, starts, ends, axes,
    #: steps): kept while those are the same read-only arrays (the engine's constants)
    _index: tuple[tuple[Any, ...], tuple[slice, ...]] | None = None

    def compute(self, x: Array, starts: Array, ends: Array, axes: Array | None = None,
                steps: Array | None = None, *, out: Array | None = None) -> Any:
        key = (x.ndim, starts, ends, axes, steps)
        kept = self._index
        if kept is not None and kept[0][0] == x.ndim and all(
                a is b for a, b in zip(kept[0][1:], key[1:], strict=True)):
            sl = kept[1]
        else:
            sl = shapes.slice_index(x.ndim, as_ints(starts), as_ints(ends),
                                    None if axes is None else as_ints(axes),
                                    None if steps is None else as_ints(steps))
            if all(a is None or not a.flags.writeable for a in key[1:]):
                self._index = (key, sl)
        part = x[sl]
        if out is not None and out.shape == part.shape:
            np.copyto(out, part)
            return None
        return emit(part, out)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """A copy of the slice's view, bound where starts, ends, axes and steps are
        constants (read-only arrays): ~1 NumPy call instead of ~6 us of Python a run."""
        x, starts, ends, axes, steps = [*inputs, None, None][:5]
        out = outputs[0]
        if not isinstance(x, np.ndarray) or not isinstance(out, np.ndarray) or any(
                a is not None and (not isinstance(a, np.ndarray) or a.flags.writeable)
                for a in (starts, ends, axes, steps)) or starts is None or ends is None:
            return None
        part = x[shapes.slice_index(x.ndim, as_ints(starts), as_ints(ends),
                                    None if axes is None else as_ints(axes),
                                    None if steps is None else as_ints(steps))]
        return partial(np.copyto, out, part) if part.shape == out.shape else None
