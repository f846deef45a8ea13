"""Dimensions, axes and build-time values (part of :mod:`mini_infer_core.plugin.shapes`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import PluginInterfaceError
from ._dims import MAX_VALUES, DimExpr, DimsExprs, IntLike
from ._types import DataType

__all__ = [
    "FLOAT_TYPES",
    "INT_TYPES",
    "MAX_VALUES",
    "Shapes",
    "Values",
    "absent",
    "cast_values",
    "compare",
    "const",
    "const_ints",
    "dim_prod",
    "elementwise_values",
    "filled_values",
    "flat",
    "input_values",
    "norm_axis",
    "same_values",
    "shape_values",
    "trunc_div",
    "value_array",
    "variadic_values",
]

#: what ``output_shapes`` returns: one shape per output
Shapes = Sequence[Sequence[IntLike]]
#: what ``output_values`` returns: flattened values per output (None: unknown)
Values = Sequence[Sequence[IntLike] | None] | None


#: input types of kernels that only make sense on floating-point data
FLOAT_TYPES: tuple[DataType, ...] = (DataType.FLOAT, DataType.HALF, DataType.DOUBLE)
#: integer types: a cast between them keeps (shape) values
INT_TYPES: frozenset[DataType] = frozenset({
    DataType.INT64, DataType.INT32, DataType.INT16, DataType.INT8, DataType.UINT8,
    DataType.UINT16, DataType.UINT32, DataType.UINT64})


# -- dimensions and axes ----------------------------------------------------------------------
def dim_prod(dims: Sequence[IntLike]) -> DimExpr:
    """The product of dimension expressions (1 for none)."""
    out = DimExpr.const(1)
    for d in dims:
        out = out * d
    return out


def norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    """A possibly negative axis as a non-negative one, checked against ``rank`` (a scalar,
    rank 0, takes axis 0)."""
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < max(rank, 1):
        raise PluginInterfaceError(f"{what} {axis} is out of range for rank {rank}")
    return a


def _int_product(values: Sequence[int]) -> int:
    return int(np.prod(values, dtype=np.int64)) if values else 1


# -- build-time values of inputs --------------------------------------------------------------
def absent(inputs: Sequence[DimsExprs | None], index: int) -> bool:
    """Whether optional input ``index`` is missing (the builder passes None for it, or a
    shorter list)."""
    return index >= len(inputs) or inputs[index] is None


def input_values(inputs: Sequence[DimsExprs | None], index: int
                 ) -> tuple[DimExpr, ...] | None:
    """The build-time values of input ``index`` (``()`` for an empty tensor); None when the
    input is absent or its values are unknown (computed at run time)."""
    dims = None if absent(inputs, index) else inputs[index]
    if dims is None:
        return None
    if dims.values is not None:
        return tuple(dims.values)
    if any(d.is_constant() and d.get_constant_value() == 0 for d in dims):
        return ()
    return None


def shape_values(inputs: Sequence[DimsExprs | None], index: int, op: str, what: str, *,
                 device: str = "") -> tuple[DimExpr, ...]:
    """The build-time values of input ``index`` (``()`` for an empty tensor); raises when the
    input is missing or its values are unknown. ``device`` names the device that needs them
    in the message."""
    if absent(inputs, index):
        raise PluginInterfaceError(f"{op}: its {what} input (input {index}) is missing")
    vals = input_values(inputs, index)
    if vals is None:
        where = f" for the {device} device" if device else ""
        raise PluginInterfaceError(
            f"{op}: the values of its {what} input (input {index}) must be known when the "
            f"engine is built (a constant or computed from shapes only){where}")
    return vals


def const_ints(values: Sequence[IntLike], op: str, what: str) -> list[int]:
    """Build-time constant integers from dimension expressions; raises for a symbolic one."""
    exprs = [DimExpr.wrap(v) for v in values]
    if not all(v.is_constant() for v in exprs):
        raise PluginInterfaceError(
            f"{op}: {what} must be build-time constants, got {[str(v) for v in exprs]}")
    return [v.get_constant_value() for v in exprs]


def const(v: IntLike) -> int:
    """The constant value of ``v``; ``ValueError`` when it is symbolic (for value functions:
    the result is then unknown)."""
    e = DimExpr.wrap(v)
    if not e.is_constant():
        raise ValueError(f"{e} is not a build-time constant")
    return e.get_constant_value()


# -- value inference --------------------------------------------------------------------------
def value_array(dims: DimsExprs | None) -> np.ndarray[Any, np.dtype[np.object_]] | None:
    """A tensor's build-time values as an object array of :class:`DimExpr` shaped as the
    (static) tensor, or None when they are unknown."""
    if dims is None or dims.values is None or not dims.is_static():
        return None
    shape = dims.to_tuple()
    if _int_product(shape) != len(dims.values):
        return None
    arr = np.empty(len(dims.values), dtype=object)
    arr[:] = list(dims.values)
    return arr.reshape(shape)


def flat(arr: Any) -> list[DimExpr]:
    """An object array (or scalar) of values as the flat list ``output_values`` returns."""
    return [DimExpr.wrap(v) for v in np.asarray(arr, dtype=object).reshape(-1)]


def same_values(inputs: Sequence[DimsExprs | None]) -> Values:
    """``output_values`` of an operator that keeps its input's elements in order (Reshape,
    Flatten, Squeeze, Unsqueeze, Identity)."""
    first = inputs[0] if inputs else None
    return None if first is None or first.values is None else [list(first.values)]


def elementwise_values(inputs: Sequence[DimsExprs | None], fn: Callable[..., Any]) -> Values:
    """``output_values`` of a broadcasting elementwise operator: ``fn`` applied to every
    tuple of (broadcast) input values; None when an input's values are unknown, the result
    is large, or ``fn`` raises ``ValueError`` (symbolic), ``ZeroDivisionError`` or
    ``TypeError``."""
    arrays = [value_array(d) for d in inputs]
    if not arrays or any(a is None for a in arrays):
        return None
    known = [a for a in arrays if a is not None]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in known))
    except ValueError:
        return None
    if _int_product(shape) > MAX_VALUES:
        return None
    columns = [np.broadcast_to(a, shape).reshape(-1) for a in known]
    try:
        return [[fn(*row) for row in zip(*columns, strict=True)]]
    except (ValueError, ZeroDivisionError, TypeError):
        return None


def variadic_values(inputs: Sequence[DimsExprs | None], fn: Callable[[Any, Any], Any]
                    ) -> Values:
    """:func:`elementwise_values` of a variadic operator (Sum, Max, Min) folding the binary
    ``fn`` over its inputs, left to right."""
    def fold(*vals: Any) -> Any:
        acc = vals[0]
        for v in vals[1:]:
            acc = fn(acc, v)
        return acc

    return elementwise_values(inputs, fold)


def compare(a: IntLike, op: str, b: IntLike) -> int:
    """``a op b`` (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``) as 0 or 1, decided from the
    values where they are constants, from structure (``N == N``) or from bounds (a dimension
    is never negative, so ``N == -1`` is 0); ``ValueError`` when it cannot be decided at
    build time."""
    x, y = DimExpr.wrap(a), DimExpr.wrap(b)
    if op in ("==", "!="):
        if x.same_as(y):
            return int(op == "==")
        (xlo, xhi), (ylo, yhi) = x.bounds(), y.bounds()
        apart = (xhi is not None and ylo is not None and xhi < ylo) or (
            yhi is not None and xlo is not None and yhi < xlo)
        if apart:
            return int(op == "!=")
        raise ValueError(f"{x} {op} {y} is not known at build time")
    if op in (">", ">="):
        return compare(y, "<" if op == ">" else "<=", x)
    d = x - y  # op is "<" or "<=": decided by the bounds of the difference
    lo, hi = d.bounds()
    strict = op == "<"
    if hi is not None and (hi < 0 if strict else hi <= 0):
        return 1
    if lo is not None and (lo >= 0 if strict else lo > 0):
        return 0
    raise ValueError(f"{x} {op} {y} is not known at build time")


def trunc_div(a: DimExpr, b: DimExpr) -> IntLike:
    """Integer division rounding toward zero (ONNX, C). Symbolic only for a positive constant
    divisor (dimensions are never negative); ``ValueError`` otherwise and for a zero one."""
    if b.is_constant() and const(b) == 0:
        raise ValueError("division by zero")
    if a.is_constant() and b.is_constant():
        x, y = const(a), const(b)
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    if b.is_constant() and const(b) > 0:
        return a // b
    raise ValueError("symbolic division")


def cast_values(values: Sequence[DimExpr] | None, to: DataType) -> Values:
    """``output_values`` of Cast: values (whole numbers: dimensions and what is computed
    from them) survive a cast to an integer or float type, constant ones a cast to bool;
    other targets lose them."""
    if values is None:
        return None
    if to in INT_TYPES or to in FLOAT_TYPES or to is DataType.BFLOAT16:
        return [list(values)]
    if to is DataType.BOOL and all(v.is_constant() for v in values):
        return [[int(v.get_constant_value() != 0) for v in values]]
    return None


def filled_values(shape: Sequence[DimExpr] | None, fill: np.ndarray[Any, Any]) -> Values:
    """``output_values`` of ConstantOfShape: ``fill`` (one integer, bool or whole-number float
    element) repeated over a constant ``shape`` of at most :data:`MAX_VALUES` elements, else
    None."""
    if shape is None or fill.dtype.kind not in "iubf" or not all(
            d.is_constant() for d in shape):
        return None
    if fill.dtype.kind == "f" and not (np.isfinite(fill) and float(fill) == int(fill)):
        return None
    n = _int_product([d.get_constant_value() for d in shape])
    return [[int(fill)] * n] if n <= MAX_VALUES else None
