"""Gathering: Gather, GatherElements, GatherND, and OneHot -- NumPy kernels (schemas in
:mod:`mini_infer_core.ops.indexing`). Negative indices count from the end of the axis."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.ops import indexing as schema
from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CpuPlugin
from ._dynamic import emit

__all__ = ["Gather", "GatherElements", "GatherND", "OneHot"]

Array = NDArray[Any]


def _wrap(indices: Array, n: int) -> Array:
    idx = np.asarray(indices).astype(np.int64, copy=False)
    return np.where(idx < 0, idx + n, idx)


class Gather(CpuPlugin, schema.Gather):
    def compute(self, data: Array, indices: Array, *, out: Array, axis: int) -> None:
        a = norm_axis(axis, data.ndim)
        if indices.ndim == 0 and indices.dtype.kind in "iu":  # one index: a view, copied
            n = data.shape[a]
            i = int(indices)
            if not -n <= i < n:
                raise IndexError(f"Gather: index {i} is out of bounds for axis {a} of size {n}")
            np.copyto(out, data[(slice(None),) * a + (i + n if i < 0 else i,)])
            return
        np.copyto(out, np.take(data, _wrap(indices, data.shape[a]), axis=a))

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """One constant index (a read-only 0-d array) in range: a copy of the data's view
        there, bound. None otherwise."""
        data, indices = inputs[:2]
        out = outputs[0]
        if not isinstance(data, np.ndarray) or not isinstance(out, np.ndarray) or \
                not isinstance(indices, np.ndarray) or indices.flags.writeable or \
                indices.ndim or indices.dtype.kind not in "iu":
            return None
        a = norm_axis(self.attrs["axis"], data.ndim)
        n, i = data.shape[a], int(indices)
        if not -n <= i < n:
            return None  # enqueue says what is wrong
        i = i + n if i < 0 else i
        # a view (a plain integer index of a 1-D array gives a scalar: its value now)
        part = np.squeeze(data[(slice(None),) * a + (slice(i, i + 1),)], axis=a)
        return partial(np.copyto, out, part) if part.shape == out.shape else None


class GatherElements(CpuPlugin, schema.GatherElements):
    def compute(self, data: Array, indices: Array, *, out: Array, axis: int) -> None:
        a = norm_axis(axis, data.ndim)
        np.copyto(out, np.take_along_axis(data, _wrap(indices, data.shape[a]), axis=a))


def gather_nd(data: Array, indices: Array, batch_dims: int) -> Array:
    """ONNX GatherND: the last axis of ``indices`` indexes data after ``batch_dims`` axes."""
    b, k = batch_dims, indices.shape[-1]
    batch = data.shape[:b]
    nb = int(np.prod(batch, dtype=np.int64))
    d = data.reshape((nb,) + data.shape[b:])
    idx = indices.reshape(nb, -1, k).astype(np.int64)
    dims = np.array(data.shape[b:b + k], np.int64)
    idx = np.where(idx < 0, idx + dims, idx)
    rows = np.arange(nb)[:, None]
    picked = d[(rows,) + tuple(idx[..., j] for j in range(k))]
    return picked.reshape(indices.shape[:-1] + data.shape[b + k:])


class GatherND(CpuPlugin, schema.GatherND):
    def compute(self, data: Array, indices: Array, *, out: Array, batch_dims: int) -> None:
        np.copyto(out, gather_nd(data, indices, batch_dims))


class OneHot(CpuPlugin, schema.OneHot):
    def compute(self, indices: Array, depth: Array, values: Array, *, out: Array | None = None,
                axis: int) -> Any:
        n = int(np.asarray(depth).reshape(-1)[0])
        a = norm_axis(axis, indices.ndim + 1)
        idx = np.asarray(indices).astype(np.int64)
        idx = np.where(idx < 0, idx + n, idx)
        hot = np.expand_dims(idx, a) == np.arange(n).reshape((-1,) + (1,) * (indices.ndim - a))
        vals = np.asarray(values).reshape(-1)
        return emit(np.where(hot, vals[1], vals[0]).astype(vals.dtype), out)
