"""Build-time values of elementwise operators on small integer (shape) tensors.

``elementwise_values(inputs, fn)`` broadcasts the inputs' known values (``DimsExprs.values``)
and applies ``fn`` to every tuple of elements. ``fn`` works on :class:`DimExpr` (so ``Add``
of a symbolic batch dimension and a constant stays symbolic) and raises ``ValueError`` when
a result cannot be known at build time (``const`` does that for a symbolic operand); then the
output's values are simply unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mini_infer_core.plugin import DimExpr, DimsExprs

from ._util import IntLike

__all__ = ["const", "elementwise_values", "trunc_div"]

#: at most this many elements are evaluated (the engine keeps no more than 64 anyway)
_MAX = 64


def const(v: DimExpr) -> int:
    """The constant value of ``v``; ValueError when it is symbolic."""
    if not v.is_constant():
        raise ValueError(f"{v} is not a build-time constant")
    return v.get_constant_value()


def trunc_div(a: DimExpr, b: DimExpr) -> IntLike:
    """Integer division rounding toward zero (C, ONNX); symbolic only for a positive
    constant divisor (dimensions are non-negative)."""
    if a.is_constant() and b.is_constant():
        x, y = a.get_constant_value(), const(b)
        if y == 0:
            raise ValueError("division by zero")
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    if b.is_constant() and const(b) > 0:
        return a // b
    raise ValueError("symbolic division")


def elementwise_values(inputs: Sequence[DimsExprs | None], fn: Callable[..., Any]
                       ) -> list[Sequence[IntLike] | None] | None:
    """``[values]`` of a broadcasting elementwise op, or None when not computable."""
    arrays = []
    for d in inputs:
        if d is None or d.values is None or not d.is_static():
            return None
        vals = list(d.values)
        arr = np.empty(len(vals), dtype=object)
        arr[:] = vals
        arrays.append(arr.reshape(d.to_tuple()))
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        return None
    if int(np.prod(shape, dtype=np.int64)) > _MAX:
        return None
    flat = [np.broadcast_to(a, shape).reshape(-1) for a in arrays]
    try:
        return [[fn(*vals) for vals in zip(*flat, strict=True)]]
    except (ValueError, ZeroDivisionError, TypeError):
        return None
