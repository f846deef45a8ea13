"""Bitwise operators on integers: BitShift, BitwiseAnd, BitwiseOr, BitwiseXor (broadcasting)
and BitwiseNot."""

from __future__ import annotations

from ..errors import PluginInterfaceError
from ._schema import BroadcastOp, UnaryOp

__all__ = ["BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"]


class BitShift(BroadcastOp):
    """``x << y`` or ``x >> y`` elementwise (opset 11; signed types and the out-of-range
    rules from 28): a shift amount that is negative or at least the bit width gives 0
    (right shifts of negative signed values: -1); left shifts wrap; right shifts of signed
    values are arithmetic."""

    def setup(self) -> None:
        if self.attrs["direction"] not in ("LEFT", "RIGHT"):
            raise PluginInterfaceError(
                f"BitShift: direction must be LEFT or RIGHT, got {self.attrs['direction']!r}")


class BitwiseAnd(BroadcastOp):
    """``a & b``."""


class BitwiseOr(BroadcastOp):
    """``a | b``."""


class BitwiseXor(BroadcastOp):
    """``a ^ b``."""


class BitwiseNot(UnaryOp):
    """``~x`` (two's complement for signed types)."""
