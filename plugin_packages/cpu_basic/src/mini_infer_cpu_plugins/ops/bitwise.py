"""Bitwise operators on integers: BitShift, BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, BroadcastPlugin, UnaryPlugin

from ..serialization import CpuPlugin

__all__ = ["BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"]

Array = NDArray[Any]


class BitShift(CpuPlugin, BroadcastPlugin):
    """``x << y`` or ``x >> y`` elementwise (opset 11; signed types and the out-of-range
    rules from 28): a shift amount that is negative or at least the bit width gives 0
    (right shifts of negative signed values: -1); left shifts wrap; right shifts of signed
    values are arithmetic."""

    min_opset = 11
    attributes: ClassVar[dict[str, Any]] = {"direction": REQUIRED}

    def setup(self) -> None:
        if self.attrs["direction"] not in ("LEFT", "RIGHT"):
            raise PluginInterfaceError(
                f"BitShift: direction must be LEFT or RIGHT, got {self.attrs['direction']!r}")

    def compute(self, x: Array, y: Array, *, out: Array, direction: str) -> None:
        bits = x.dtype.itemsize * 8
        signed = x.dtype.kind == "i"
        valid = (y >= 0) & (y < bits) if signed or y.dtype.kind == "i" else y < bits
        amount = np.where(valid, y, 0).astype(x.dtype)
        if direction == "LEFT":
            if signed:
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


class _Bitwise(CpuPlugin, BroadcastPlugin):
    min_opset = 18
    ufunc: ClassVar[Any] = None

    def compute(self, a: Array, b: Array, *, out: Array) -> None:
        type(self).ufunc(a, b, out=out)


class BitwiseAnd(_Bitwise):
    ufunc = np.bitwise_and


class BitwiseOr(_Bitwise):
    ufunc = np.bitwise_or


class BitwiseXor(_Bitwise):
    ufunc = np.bitwise_xor


class BitwiseNot(CpuPlugin, UnaryPlugin):
    min_opset = 18

    def compute(self, x: Array, *, out: Array) -> None:
        np.invert(x, out=out)
