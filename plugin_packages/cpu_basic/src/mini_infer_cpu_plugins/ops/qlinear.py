"""Quantized products: MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv.

The integer products are computed in float64 (BLAS): every product of 8-bit (or 16-bit)
integers and every sum up to 2**53 is exact there, so the int32 results are exact and the
speed is the float GEMM's. The convolutions reuse Conv's kernel (:class:`~.conv.ConvKernel`:
im2col + GEMM). Schemas in :mod:`mini_infer_core.ops.qlinear`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import qlinear as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._quant import requantize
from .conv import ConvKernel

__all__ = ["MatMulInteger", "QLinearMatMul", "ConvInteger", "QLinearConv"]

Array = NDArray[Any]


def _shift_rows(a: Array, zp: Array | None) -> Array:
    """``a - zp`` in float64; a 1-D ``zp`` is per row (``a``'s second-to-last axis)."""
    af = a.astype(np.float64)
    if zp is None:
        return af
    z = zp.astype(np.float64)
    if z.ndim == 1 and z.size > 1 and a.ndim >= 2:
        z = z.reshape(-1, 1)
    return af - z


def _shift_cols(b: Array, zp: Array | None) -> Array:
    """``b - zp`` in float64; a 1-D ``zp`` is per column (``b``'s last axis)."""
    bf = b.astype(np.float64)
    return bf if zp is None else bf - zp.astype(np.float64)


class MatMulInteger(CpuPlugin, schema.MatMulInteger):
    """Zero points per tensor, per row of A, per column of B."""

    def compute(self, a: Array, b: Array, a_zero_point: Array | None = None,
                b_zero_point: Array | None = None, *, out: Array) -> None:
        prod = np.matmul(_shift_rows(a, a_zero_point), _shift_cols(b, b_zero_point))
        np.copyto(out, prod, casting="unsafe")


def _scale_rows(s: Array, rank: int) -> Array:
    return s.reshape(-1, 1) if s.ndim == 1 and s.size > 1 and rank >= 2 else s


class QLinearMatMul(CpuPlugin, schema.QLinearMatMul):
    """a's scale/zero point may be per row, b's per column."""

    def compute(self, a: Array, a_scale: Array, a_zero_point: Array, b: Array,
                b_scale: Array, b_zero_point: Array, y_scale: Array,
                y_zero_point: Array | None = None, *, out: Array) -> None:
        acc = np.matmul(_shift_rows(a, a_zero_point), _shift_cols(b, b_zero_point))
        multiplier = _scale_rows(a_scale, a.ndim) * b_scale / y_scale
        requantize(acc, multiplier, y_zero_point, out)


class _IntegerConv(ConvKernel):
    """Conv on ``x - x_zero_point`` and ``w - w_zero_point`` (per output channel allowed),
    accumulated exactly in float64."""

    def accumulate(self, x: Array, x_zero_point: Array | None, w: Array,
                   w_zero_point: Array | None, group: int) -> Array:
        xf = x.astype(np.float64)
        if x_zero_point is not None:
            xf -= x_zero_point.astype(np.float64).reshape(())
        wf = w.astype(np.float64)
        if w_zero_point is not None:
            wz = w_zero_point.astype(np.float64)
            if wz.ndim == 1 and wz.size > 1:
                wz = wz.reshape((-1,) + (1,) * (w.ndim - 1))
            wf -= wz
        shape = (x.shape[0], w.shape[0], *self._plan(xf, wf, group).out_dims)
        acc = self.scratch.buffer("acc", shape, np.float64)
        ConvKernel.compute(self, xf, wf, None, out=acc, group=group)
        return acc


class ConvInteger(_IntegerConv, schema.ConvInteger):
    def compute(self, x: Array, w: Array, x_zero_point: Array | None = None,  # type: ignore[override]
                w_zero_point: Array | None = None, *, out: Array, group: int,
                **_: Any) -> None:
        acc = self.accumulate(x, x_zero_point, w, w_zero_point, group)
        np.copyto(out, acc, casting="unsafe")


class QLinearConv(_IntegerConv, schema.QLinearConv):
    """w's scale/zero point may be per output channel."""

    def compute(self, x: Array, x_scale: Array, x_zero_point: Array,  # type: ignore[override]
                w: Array, w_scale: Array, w_zero_point: Array, y_scale: Array,
                y_zero_point: Array | None = None, b: Array | None = None, *, out: Array,
                group: int, **_: Any) -> None:
        acc = self.accumulate(x, x_zero_point, w, w_zero_point, group)
        if b is not None:
            acc = acc + b.astype(np.float64).reshape((1, -1) + (1,) * (acc.ndim - 2))
        ws = w_scale.reshape((1, -1) + (1,) * (acc.ndim - 2)) if w_scale.size > 1 else w_scale
        requantize(acc, x_scale * ws / y_scale, y_zero_point, out)
