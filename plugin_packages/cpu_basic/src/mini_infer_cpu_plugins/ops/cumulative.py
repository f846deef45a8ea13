"""Along-an-axis accumulations and triangles: CumSum, CumProd, Trilu."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.plugin import UnaryPlugin
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CpuPlugin

__all__ = ["CumSum", "CumProd", "Trilu"]

Array = NDArray[Any]


def accumulate(x: Array, axis: Array, ufunc: Any, identity: int, exclusive: int,
               reverse: int) -> Array:
    """Running ``ufunc`` along ``axis`` (a 0-D or 1-element tensor); ``exclusive`` shifts the
    result by one (starting from the identity), ``reverse`` runs from the end."""
    a = norm_axis(int(np.asarray(axis).reshape(-1)[0]), x.ndim, "axis")
    y = np.flip(x, a) if reverse else x
    r = ufunc.accumulate(y, axis=a, dtype=x.dtype)
    if exclusive:
        head = np.full_like(np.take(r, [0], axis=a) if r.shape[a] else r, identity)
        r = np.concatenate([head, np.take(r, np.arange(r.shape[a] - 1), axis=a)], axis=a)
    return np.flip(r, a) if reverse else r


class CumSum(CpuPlugin, UnaryPlugin):
    """Cumulative sum along the axis given by input 1."""

    min_opset = 11
    attributes: ClassVar[dict[str, Any]] = {"exclusive": 0, "reverse": 0}

    def compute(self, x: Array, axis: Array, *, out: Array, exclusive: int,
                reverse: int) -> None:
        np.copyto(out, accumulate(x, axis, np.add, 0, exclusive, reverse))


class CumProd(CpuPlugin, UnaryPlugin):
    """Cumulative product along the axis given by input 1 (opset 26)."""

    min_opset = 26
    attributes: ClassVar[dict[str, Any]] = {"exclusive": 0, "reverse": 0}

    def compute(self, x: Array, axis: Array, *, out: Array, exclusive: int,
                reverse: int) -> None:
        np.copyto(out, accumulate(x, axis, np.multiply, 1, exclusive, reverse))


class Trilu(CpuPlugin, UnaryPlugin):
    """Upper (``upper=1``) or lower triangle of the last two axes, from diagonal ``k`` (the
    optional input 1, default 0); the rest is zero."""

    min_opset = 14
    attributes: ClassVar[dict[str, Any]] = {"upper": 1}

    def compute(self, x: Array, k: Array | None = None, *, out: Array, upper: int) -> None:
        kk = 0 if k is None else int(np.asarray(k).reshape(-1)[0])
        n, m = x.shape[-2], x.shape[-1]
        rows, cols = np.arange(n)[:, None], np.arange(m)[None, :]
        keep = cols - rows >= kk if upper else cols - rows <= kk
        np.copyto(out, np.where(keep, x, np.zeros((), x.dtype)))
