"""Build-time values of small integer tensors, so shape computations (``Shape -> Gather ->
Unsqueeze -> Concat -> Reshape``) stay known while the engine is built when their nodes run
on this device (see ``OnnxPlugin.output_values``).

Values are :class:`DimExpr` (``Add`` of a symbolic batch size and a constant stays symbolic).
A function that cannot know a result raises ``ValueError``; the output's values are then
simply unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mini_infer_core.plugin import DimExpr, DimsExprs, IntLike

__all__ = ["Values", "const", "elementwise_values", "flat", "same_values", "trunc_div",
           "value_array"]

Values = list[Sequence[IntLike] | None] | None

#: the core keeps values for tensors of at most this many elements
_MAX = 64


def const(v: DimExpr) -> int:
    """The constant value of ``v``; ValueError when it is symbolic."""
    if not v.is_constant():
        raise ValueError(f"{v} is not a build-time constant")
    return v.get_constant_value()


def trunc_div(a: DimExpr, b: DimExpr) -> IntLike:
    """Integer division rounding toward zero (ONNX, C); symbolic only for a positive constant
    divisor (dimensions are not negative)."""
    if b.is_constant() and const(b) == 0:
        raise ValueError("division by zero")
    if a.is_constant() and b.is_constant():
        x, y = const(a), const(b)
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    if b.is_constant() and const(b) > 0:
        return a // b
    raise ValueError("symbolic division")


def value_array(dims: DimsExprs | None) -> np.ndarray[Any, Any] | None:
    """A tensor's build-time values as an object array of its (static) shape, or None."""
    if dims is None or dims.values is None or not dims.is_static():
        return None
    shape = dims.to_tuple()
    if int(np.prod(shape, dtype=np.int64)) != len(dims.values):
        return None
    arr = np.empty(len(dims.values), dtype=object)
    arr[:] = list(dims.values)
    return arr.reshape(shape)


def flat(arr: Any) -> list[DimExpr]:
    """An object array (or scalar) of values as the flat list ``output_values`` returns."""
    return [DimExpr.wrap(v) for v in np.asarray(arr, dtype=object).reshape(-1)]


def same_values(inputs: Sequence[DimsExprs | None]) -> Values:
    """Values of an operator that keeps its input's elements in order (Reshape, Identity)."""
    first = inputs[0] if inputs else None
    return None if first is None or first.values is None else [list(first.values)]


def elementwise_values(inputs: Sequence[DimsExprs | None], fn: Callable[..., Any]) -> Values:
    """``[values]`` of a broadcasting elementwise operator, or None when not computable."""
    arrays = [value_array(d) for d in inputs]
    if not arrays or any(a is None for a in arrays):
        return None
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays if a is not None))
    except ValueError:
        return None
    if int(np.prod(shape, dtype=np.int64)) > _MAX:
        return None
    columns = [np.broadcast_to(a, shape).reshape(-1) for a in arrays if a is not None]
    try:
        return [[fn(*row) for row in zip(*columns, strict=True)]]
    except (ValueError, ZeroDivisionError, TypeError):
        return None
