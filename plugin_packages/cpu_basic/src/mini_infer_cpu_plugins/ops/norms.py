"""Normalizations along axes: Hardmax, LpNormalization, MeanVarianceNormalization (schemas in
:mod:`mini_infer_core.ops.norms`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.ops import norms as schema
from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CpuPlugin

__all__ = ["Hardmax_1", "Hardmax", "LpNormalization", "MeanVarianceNormalization"]

Array = NDArray[Any]


def hardmax(x: Array, axis: int) -> Array:
    """1 at the first maximum along ``axis``, 0 elsewhere."""
    y = np.zeros_like(x)
    if x.size:
        first = np.expand_dims(np.argmax(x, axis=axis), axis)
        np.put_along_axis(y, first, 1, axis=axis)
    return y


class _Hardmax(CpuPlugin, schema.HardmaxBase):
    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        flat, axis = self.operand(x)
        np.copyto(out, hardmax(flat, axis).reshape(x.shape))


Hardmax_1, Hardmax = (type(base.__name__, (_Hardmax, base), {"__module__": __name__})
                      for base in (schema.Hardmax_1, schema.Hardmax))


class LpNormalization(CpuPlugin, schema.LpNormalization):
    def compute(self, x: Array, *, out: Array, axis: int, p: int) -> None:
        a = norm_axis(axis, x.ndim)
        if p == 1:
            norm = np.sum(np.abs(x), axis=a, keepdims=True)
        else:
            norm = np.sqrt(np.sum(np.square(x), axis=a, keepdims=True))
        with np.errstate(divide="ignore", invalid="ignore"):
            np.copyto(out, np.where(norm == 0, 0, x / norm), casting="unsafe")


class MeanVarianceNormalization(CpuPlugin, schema.MeanVarianceNormalization):
    def compute(self, x: Array, *, out: Array, axes: Sequence[int]) -> None:
        ax = tuple(norm_axis(a, x.ndim, "axis") for a in axes)
        mean = np.mean(x, axis=ax, keepdims=True)
        var = np.mean(np.square(x), axis=ax, keepdims=True) - np.square(mean)
        with np.errstate(invalid="ignore"):
            np.copyto(out, (x - mean) / (np.sqrt(var) + x.dtype.type(1e-9)), casting="unsafe")
