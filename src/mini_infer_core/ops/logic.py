"""Logic and comparisons: Not, And, Or, Xor, Equal, Less, Greater, LessOrEqual,
GreaterOrEqual (bool outputs, broadcasting; opset-1 ``broadcast``/``axis`` supported) and
Where. Build-time values propagate for shape computations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..plugin import DataType, DimExpr, DimsExprs, broadcast_dims
from ..plugin.shapes import Shapes, Values, compare, const, elementwise_values
from ._schema import BroadcastOp, UnaryOp
from .elementwise import BinaryBase

__all__ = ["Not", "And", "Or", "Xor", "Equal", "Less", "Greater", "LessOrEqual",
           "GreaterOrEqual", "Where"]


class Not(UnaryOp):
    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.BOOL]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return elementwise_values(inputs[:1], lambda a: int(not const(a)))


class PredicateBase(BinaryBase):
    """A broadcasting binary operator with a bool output."""

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.BOOL]


def _cmp(fn: Callable[[int, int], Any]) -> Any:
    return staticmethod(lambda a, b: int(bool(fn(const(a), const(b)))))


def _compare(op: str) -> Any:
    """A comparison decided from values, structure or bounds (``N == -1`` is false)."""
    return staticmethod(lambda a, b: compare(a, op, b))


class And(PredicateBase):
    value_fn = _cmp(lambda a, b: a and b)


class Or(PredicateBase):
    value_fn = _cmp(lambda a, b: a or b)


class Xor(PredicateBase):
    value_fn = _cmp(lambda a, b: bool(a) != bool(b))


class Equal(PredicateBase):
    """Equality (numbers, bool, strings from opset 19)."""

    value_fn = _compare("==")


class Less(PredicateBase):
    value_fn = _compare("<")


class Greater(PredicateBase):
    value_fn = _compare(">")


class LessOrEqual(PredicateBase):
    value_fn = _compare("<=")


class GreaterOrEqual(PredicateBase):
    value_fn = _compare(">=")


def _where_value(c: DimExpr, x: DimExpr, y: DimExpr) -> DimExpr:
    return x if const(c) else y


class Where(BroadcastOp):
    """``x`` where ``condition`` else ``y``, all three broadcast together."""

    float_values = True  # exact on whole numbers

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(broadcast_dims(*inputs[:3]))]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[1]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return elementwise_values(inputs[:3], _where_value)
