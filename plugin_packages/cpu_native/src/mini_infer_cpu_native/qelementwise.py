"""cpu_basic's ``com.microsoft`` QLinearAdd and QLinearMul with their 8-bit cases in one
compiled pass (``_qelt.c``): A, B and C all uint8 or all int8, per-tensor parameters, and B
either A's shape or broadcast to it as one value per leading index ((N, C, 1, 1) against
(N, C, H, W): a squeeze-and-excitation's scale) or one value; either operand may be the
broadcast one (both operators commute). The arithmetic is cpu_basic's (float32, round half to
even, saturation), so both give the same bits. Anything else is cpu_basic's NumPy kernel.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import contrib_qlinear as _basic
from numpy.typing import NDArray

from ._abi import QBinaryArgs
from ._native import _kernel
from ._qgemm import _check, _ptr

__all__ = ["QLinearAdd", "QLinearMul"]

Array = NDArray[Any]
_INT8 = (np.dtype(np.uint8), np.dtype(np.int8))
_binary = _kernel("mi_qbinary_i8", QBinaryArgs)


def _one(v: Array | None) -> float | None:
    """A per-tensor parameter's value (0 where absent), None where it is not one value."""
    if v is None:
        return 0.0
    return float(v.reshape(-1)[0]) if v.size == 1 else None


def _layout(a: Array, b: Array, out: Array) -> tuple[int, int, int, int] | None:
    """(outer, inner, b_step, b_outer_step) where ``b`` is ``a``'s shape, or one value per
    leading index broadcast over the rest, or one value; None otherwise."""
    if a.shape != out.shape or not (a.flags.c_contiguous and b.flags.c_contiguous
                                    and out.flags.c_contiguous):
        return None
    if b.shape == a.shape:
        return 1, a.size, 1, 0
    if b.size == 1:
        return 1, a.size, 0, 0
    if b.ndim > a.ndim:
        return None
    bs = (1,) * (a.ndim - b.ndim) + b.shape
    lead = 0
    while lead < a.ndim and bs[lead] == a.shape[lead]:
        lead += 1
    if any(d != 1 for d in bs[lead:]):
        return None
    outer = math.prod(a.shape[:lead])
    return outer, a.size // max(outer, 1) if outer else 0, 0, 1


class _Binary:
    op: int = 0

    def _compiled(self, a: Array, a_scale: Array, a_zero_point: Array | None, b: Array,
                  b_scale: Array, b_zero_point: Array | None, c_scale: Array,
                  c_zero_point: Array | None, out: Array) -> bool:
        """The compiled pass where it applies (True), else nothing (False)."""
        if (a.dtype not in _INT8 or b.dtype != a.dtype or out.dtype != a.dtype
                or any(s.dtype != np.float32 or s.size != 1 for s in (a_scale, b_scale, c_scale))):
            return False
        zs = [_one(z) for z in (a_zero_point, b_zero_point, c_zero_point)]
        if any(z is None for z in zs):
            return False
        za, zb, zc = (int(z or 0) for z in zs)
        sa, sb = a_scale.reshape(-1)[0], b_scale.reshape(-1)[0]
        sc = c_scale.reshape(-1)[0]
        layout = _layout(a, b, out)
        if layout is None and a.shape != b.shape:  # A the broadcast one: swap
            layout = _layout(b, a, out)
            if layout is not None:
                a, b, za, zb, sa, sb = b, a, zb, za, sb, sa
        if layout is None:
            return False
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if self.op == 0:  # cpu_basic's ratios, in float32
                ra, rb = np.float32(sa / sc), np.float32(sb / sc)
            else:
                ra, rb = np.float32(sa * sb / sc), np.float32(0)
        outer, inner, step, ostep = layout
        kn = "mi_qbinary_i8"
        _check(_binary, QBinaryArgs(
            _ptr(a, (a.dtype,), a.size, False, kn, "a"),
            _ptr(b, (b.dtype,), b.size, False, kn, "b"),
            _ptr(out, (out.dtype,), out.size, True, kn, "y"),
            outer, inner, step, ostep, float(ra), float(rb), za, zb, zc, self.op,
            int(a.dtype == np.int8)))
        return True


class QLinearAdd(_Binary, _basic.QLinearAdd):
    """QLinearAdd in one compiled pass (see the module)."""

    package = "mini-infer-cpu-native"
    op = 0

    def compute(self, a: Array, a_scale: Array, a_zero_point: Array | None, b: Array,
                b_scale: Array, b_zero_point: Array | None, c_scale: Array,
                c_zero_point: Array | None = None, *, out: Array) -> None:
        if not (out.size and self._compiled(a, a_scale, a_zero_point, b, b_scale,
                                            b_zero_point, c_scale, c_zero_point, out)):
            super().compute(a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale,
                            c_zero_point, out=out)


class QLinearMul(_Binary, _basic.QLinearMul):
    """QLinearMul in one compiled pass (see the module)."""

    package = "mini-infer-cpu-native"
    op = 1

    def compute(self, a: Array, a_scale: Array, a_zero_point: Array | None, b: Array,
                b_scale: Array, b_zero_point: Array | None, c_scale: Array,
                c_zero_point: Array | None = None, *, out: Array) -> None:
        if not (out.size and self._compiled(a, a_scale, a_zero_point, b, b_scale,
                                            b_zero_point, c_scale, c_zero_point, out)):
            super().compute(a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale,
                            c_zero_point, out=out)
