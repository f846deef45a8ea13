"""Selection: TopK, NonZero, Unique, Compress -- NumPy kernels (schemas in
:mod:`mini_infer_core.ops.selection`). NonZero and Unique always return their outputs
(data-dependent); TopK and Compress do when K or the condition is known only at run time."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import selection as schema
from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CpuPlugin
from ._dynamic import emit

__all__ = ["TopK_1", "TopK_10", "TopK", "NonZero", "Unique", "Compress"]

Array = NDArray[Any]


def top_k(x: Array, k: int, axis: int, largest: bool) -> tuple[Array, Array]:
    """The ``k`` largest (smallest) along ``axis``, sorted; ties keep the lower index first."""
    n = x.shape[axis]
    if not 0 <= k <= n:
        raise PluginInterfaceError(f"TopK: k={k} for an axis of length {n}")
    if 0 < 4 * k <= n and x.dtype.kind == "f" and x.size:
        found = _few_of_many(x, k, axis, largest)
        if found is not None:
            return found
    if largest:
        order = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
        order = n - 1 - order
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    return np.take_along_axis(x, idx, axis=axis), idx


def _few_of_many(x: Array, k: int, axis: int, largest: bool) -> tuple[Array, Array] | None:
    """``top_k`` for a few of many floats (k-NN's nearest neighbours): a partition finds each
    row's k, only they are sorted (by value, then index). None where a NaN or a tie at the
    k-th value (the partition might pick a later index) leaves it to the full sort."""
    keys = np.moveaxis(x, axis, -1)
    if np.isnan(keys).any():  # NaN orders as the largest: the full sort places them
        return None
    keys = -keys if largest else keys
    part = np.argpartition(keys, k - 1, axis=-1)[..., :k]
    part.sort(axis=-1)  # by index, so that the stable sort by value keeps ties in index order
    picked = np.take_along_axis(keys, part, axis=-1)
    kth = picked.max(axis=-1, keepdims=True)
    if ((keys <= kth).sum(axis=-1) != k).any():
        return None
    order = np.argsort(picked, axis=-1, kind="stable")
    idx = np.moveaxis(np.take_along_axis(part, order, axis=-1), -1, axis).astype(np.int64)
    return np.take_along_axis(x, idx, axis=axis), idx


class _TopK(CpuPlugin, schema.TopKBase):
    def compute(self, x: Array, k_input: Array | None = None, *, out: Any = None, axis: int,
                largest: int = 1, **attrs: Any) -> Any:
        kk = int(attrs["k"]) if k_input is None else int(np.asarray(k_input).reshape(-1)[0])
        return emit(top_k(x, kk, norm_axis(axis, x.ndim), bool(largest)), out)


TopK_1, TopK_10, TopK = (type(op.__name__, (_TopK, op), {"__module__": __name__})
                         for op in (schema.TopK_1, schema.TopK_10, schema.TopK))


class NonZero(CpuPlugin, schema.NonZero):
    def compute(self, x: Array, *, out: Array | None = None) -> Any:
        if x.ndim == 0:
            found = np.zeros((0, int(bool(x))), np.int64)
        else:
            found = np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)
        return emit(found, out)


class Unique(CpuPlugin, schema.Unique):
    def compute(self, x: Array, *, out: Any = None, axis: int | None,
                sorted: int) -> Any:  # noqa: A002
        if axis is None:
            data, a = x.reshape(-1), 0
        else:
            data, a = x, norm_axis(axis, x.ndim)
        _, first, inverse, counts = np.unique(data, return_index=True, return_inverse=True,
                                              return_counts=True, axis=a)
        inverse = inverse.reshape(-1)
        if not sorted:
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            first, counts, inverse = first[order], counts[order], rank[inverse]
        y = np.take(data, first, axis=a)
        return emit((y, first.astype(np.int64), inverse.astype(np.int64),
                     counts.astype(np.int64)), out)


class Compress(CpuPlugin, schema.Compress):
    def compute(self, x: Array, condition: Array, *, out: Array | None = None,
                axis: int | None) -> Any:
        cond = np.asarray(condition).astype(bool).reshape(-1)
        return emit(np.compress(cond, x, axis=axis), out)
