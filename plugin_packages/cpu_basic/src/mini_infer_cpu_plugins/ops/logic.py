"""Logic and comparisons: Not, And, Or, Xor, Equal, Less, Greater, LessOrEqual,
GreaterOrEqual (bool outputs, broadcasting; opset-1 ``broadcast``/``axis`` supported) and
Where. Equal compares strings too. Build-time values propagate for shape computations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.plugin import (
    BroadcastPlugin,
    DataType,
    DimExpr,
    DimsExprs,
    UnaryPlugin,
    broadcast_dims,
)
from mini_infer_core.plugin.shapes import Shapes, Values, const, elementwise_values

from ..serialization import CpuPlugin
from .elementwise import _Binary

__all__ = ["Not", "And", "Or", "Xor", "Equal", "Less", "Greater", "LessOrEqual",
           "GreaterOrEqual", "Where"]

Array = NDArray[Any]


class Not(CpuPlugin, UnaryPlugin):
    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.BOOL]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return elementwise_values(inputs[:1], lambda a: int(not const(a)))

    def compute(self, x: Array, *, out: Array) -> None:
        np.logical_not(x, out=out)


class _Predicate(_Binary):
    """A broadcasting binary operator with a bool output."""

    attributes: ClassVar[dict[str, Any]] = {"broadcast": 0, "axis": None}
    ufunc: ClassVar[Any] = None

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.BOOL]

    def apply(self, a: Array, b: Array, out: Array) -> None:
        type(self).ufunc(a, b, out=out)


def _cmp(fn: Any) -> Any:
    return staticmethod(lambda a, b: int(bool(fn(const(a), const(b)))))


class And(_Predicate):
    ufunc = np.logical_and
    value_fn = _cmp(lambda a, b: a and b)


class Or(_Predicate):
    ufunc = np.logical_or
    value_fn = _cmp(lambda a, b: a or b)


class Xor(_Predicate):
    ufunc = np.logical_xor
    value_fn = _cmp(lambda a, b: bool(a) != bool(b))


def _equal_value(a: DimExpr, b: DimExpr) -> int:
    if a.same_as(b):
        return 1
    return int(const(a) == const(b))


class Equal(_Predicate):
    """Equality (numbers, bool, strings from opset 19)."""

    ufunc = np.equal
    value_fn = staticmethod(_equal_value)

    def apply(self, a: Array, b: Array, out: Array) -> None:
        if a.dtype == object or b.dtype == object:
            out[...] = np.asarray(a, dtype=object) == np.asarray(b, dtype=object)
        else:
            np.equal(a, b, out=out)


class Less(_Predicate):
    ufunc = np.less
    value_fn = _cmp(lambda a, b: a < b)


class Greater(_Predicate):
    ufunc = np.greater
    value_fn = _cmp(lambda a, b: a > b)


class LessOrEqual(_Predicate):
    min_opset = 12
    attributes: ClassVar[dict[str, Any]] = {}
    ufunc = np.less_equal
    value_fn = _cmp(lambda a, b: a <= b)


class GreaterOrEqual(_Predicate):
    min_opset = 12
    attributes: ClassVar[dict[str, Any]] = {}
    ufunc = np.greater_equal
    value_fn = _cmp(lambda a, b: a >= b)


def _where_value(c: DimExpr, x: DimExpr, y: DimExpr) -> DimExpr:
    return x if const(c) else y


class Where(CpuPlugin, BroadcastPlugin):
    """``x`` where ``condition`` else ``y``, all three broadcast together."""

    min_opset = 9

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(broadcast_dims(*inputs[:3]))]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[1]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return elementwise_values(inputs[:3], _where_value)

    def compute(self, condition: Array, x: Array, y: Array, *, out: Array) -> None:
        np.copyto(out, y)
        np.copyto(out, x, where=condition)
