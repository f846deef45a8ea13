"""Bitwise operators on integers: BitShift, BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot
(schemas in :mod:`mini_infer_core.ops.bitwise`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import bitwise as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._util import kernel

__all__ = ["BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"]

Array = NDArray[Any]


class BitShift(CpuPlugin, schema.BitShift):
    def compute(self, x: Array, y: Array, *, out: Array, direction: str) -> None:
        bits = x.dtype.itemsize * 8
        signed = x.dtype.kind == "i"
        valid = (y >= 0) & (y < bits) if signed or y.dtype.kind == "i" else y < bits
        amount = np.where(valid, y, 0).astype(x.dtype)
        if direction == "LEFT":
            if signed:  # wraps: shift the bits as unsigned
                unsigned = np.dtype(f"u{x.dtype.itemsize}")
                np.left_shift(x.view(unsigned), amount.astype(unsigned),
                              out=out.view(unsigned))
            else:
                np.left_shift(x, amount, out=out)
            np.copyto(out, 0, where=~valid)
        else:
            np.right_shift(x, amount, out=out)
            if signed:
                np.copyto(out, np.where(x < 0, -1, 0).astype(x.dtype), where=~valid)
            else:
                np.copyto(out, 0, where=~valid)


class _Ufunc(CpuPlugin):
    ufunc: Any = None

    def compute(self, *xs: Array, out: Array) -> None:
        type(self).ufunc(*xs, out=out)


BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot = (kernel(op, _Ufunc, f, __name__) for op, f in (
    (schema.BitwiseAnd, np.bitwise_and), (schema.BitwiseOr, np.bitwise_or),
    (schema.BitwiseXor, np.bitwise_xor), (schema.BitwiseNot, np.invert)))
