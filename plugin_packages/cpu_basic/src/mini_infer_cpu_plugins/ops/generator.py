"""Generators: ConstantOfShape, Range, EyeLike (schemas in
:mod:`mini_infer_core.ops.generator`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mini_infer_core.ops import generator as schema
from mini_infer_core.plugin import DataType
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._dynamic import as_ints, emit

__all__ = ["ConstantOfShape", "Range_11", "Range", "EyeLike"]

Array = NDArray[Any]


class ConstantOfShape(CpuPlugin, schema.ConstantOfShape):
    def compute(self, shape: Array, *, out: Array | None = None, **_: Any) -> Any:
        if out is None:
            return np.full(as_ints(shape), self.fill, self.fill.dtype)
        np.copyto(out, self.fill)
        return None


def _arange(start: Array, limit: Array, delta: Array, stash: np.dtype[Any] | None) -> Array:
    dtype = np.asarray(start).dtype
    s, lim, d = (np.asarray(v).reshape(-1)[0].item() for v in (start, limit, delta))
    n = max(math.ceil((float(lim) - float(s)) / float(d)), 0)
    if dtype.kind in "iu":
        return (int(s) + np.arange(n, dtype=np.int64) * int(d)).astype(dtype)
    work = stash if stash is not None else np.dtype(np.float64)
    vals = np.asarray(s, work) + np.arange(n, dtype=work) * np.asarray(d, work)
    return vals.astype(dtype)  # type: ignore[no-any-return]


class _Range(CpuPlugin, schema.RangeBase):
    """float16 and bfloat16 ranges are computed in float (``stash_type`` 11: double), others
    in float64 or exactly for integers."""

    def compute(self, start: Array, limit: Array, delta: Array, *, out: Array | None = None,
                stash_type: int = 1) -> Any:
        dtype = np.asarray(start).dtype
        stash = None
        # ml_dtypes' bfloat16 is a user-defined dtype (isbuiltin 2): any other is told apart
        # without importing ml_dtypes (half a second of a transformer's first run, issue 30)
        if dtype == np.float16 or (dtype.isbuiltin == 2 and dtype == DataType.BFLOAT16.numpy):
            stash = np.dtype(np.float64 if stash_type == 11 else np.float32)
        return emit(_arange(start, limit, delta, stash), out)


class Range_11(_Range, schema.Range_11):  # noqa: N801
    pass


class Range(_Range, schema.Range):
    pass


class EyeLike(CpuPlugin, schema.EyeLike):
    def compute(self, x: Array, *, out: Array, dtype: int | None, k: int) -> None:
        out[...] = np.eye(out.shape[0], out.shape[1], k, dtype=out.dtype)
