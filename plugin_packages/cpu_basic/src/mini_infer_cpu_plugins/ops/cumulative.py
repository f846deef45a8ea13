"""Along-an-axis accumulations and triangles: CumSum, CumProd, Trilu (schemas in
:mod:`mini_infer_core.ops.cumulative`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import cumulative as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._util import kernel

__all__ = ["CumSum", "CumProd", "Trilu"]

Array = NDArray[Any]


class _Accumulate(CpuPlugin, schema.Accumulation):
    """The NumPy ufunc's ``accumulate`` (``ufunc.identity`` starts an exclusive run)."""

    ufunc: Any = None

    def compute(self, x: Array, axis: Array, *, out: Array, exclusive: int,
                reverse: int) -> None:
        ufunc = type(self).ufunc
        a = self.axis_of(axis, x.ndim)
        y = np.flip(x, a) if reverse else x
        r = ufunc.accumulate(y, axis=a, dtype=x.dtype)
        if exclusive:
            head = np.full_like(np.take(r, [0], axis=a) if r.shape[a] else r, ufunc.identity)
            r = np.concatenate([head, np.take(r, np.arange(r.shape[a] - 1), axis=a)], axis=a)
        np.copyto(out, np.flip(r, a) if reverse else r)


CumSum, CumProd = (kernel(op, _Accumulate, f, __name__)
                   for op, f in ((schema.CumSum, np.add), (schema.CumProd, np.multiply)))


class Trilu(CpuPlugin, schema.Trilu):
    def compute(self, x: Array, k: Array | None = None, *, out: Array, upper: int) -> None:
        kk = schema.scalar_int(k)
        n, m = x.shape[-2], x.shape[-1]
        rows, cols = np.arange(n)[:, None], np.arange(m)[None, :]
        keep = cols - rows >= kk if upper else cols - rows <= kk
        np.copyto(out, np.where(keep, x, np.zeros((), x.dtype)))
