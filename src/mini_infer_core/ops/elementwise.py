"""Elementwise arithmetic: the broadcasting binary operators (Add, Sub, Mul, Div, Pow, Mod),
the variadic Sum, Max, Min and Mean, and Exp, Log, Sqrt, Neg, Abs.

The integer operators also compute their build-time values (``output_values``) so shape
arithmetic (``Shape -> Gather -> Mul -> Concat -> Reshape``) folds when the engine is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ..plugin import DataType, DimExpr, DimsExprs, shapes
from ..plugin.shapes import FLOAT_TYPES, Shapes, Values
from ._schema import BroadcastOp, UnaryOp

__all__ = ["Add", "Sub", "Mul", "Div", "Pow", "Mod", "Sum", "Max", "Min", "Mean", "Exp", "Log",
           "Sqrt", "Neg", "Abs"]


class BinaryBase(BroadcastOp):
    """A two-input broadcasting operator; opset<7 legacy ``broadcast``/``axis`` supported."""

    float_values = True  # exact on whole numbers

    #: the operation on build-time values (DimExpr); None: values are not propagated
    value_fn: ClassVar[Callable[..., Any] | None] = None

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        fn = type(self).value_fn
        if fn is None or self.attrs.get("broadcast"):
            return None
        return shapes.elementwise_values(inputs[:2], fn)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [shapes.binary_dims(inputs[0], inputs[1], self.attrs.get("broadcast", 0),
                                   self.attrs.get("axis"))]

    def operands(self, a: Any, b: Any) -> tuple[Any, Any]:
        """``a`` and ``b`` as they broadcast: with the legacy ``broadcast`` attribute, ``b``
        gets trailing unit axes so that it lines up at ``axis``."""
        extra = shapes.legacy_broadcast_rank(b.ndim, a.ndim, self.attrs.get("broadcast", 0),
                                             self.attrs.get("axis"))
        return a, (b.reshape(b.shape + (1,) * extra) if extra else b)


class Add(BinaryBase):
    value_fn = staticmethod(lambda a, b: a + b)


class Sub(BinaryBase):
    value_fn = staticmethod(lambda a, b: a - b)


class Mul(BinaryBase):
    value_fn = staticmethod(lambda a, b: a * b)


class Div(BinaryBase):
    """Division; integer division truncates toward zero (ONNX, C)."""

    float_values = False  # 3.0 / 2.0 is no whole number

    value_fn = staticmethod(shapes.trunc_div)


class Pow(BinaryBase):
    """X ** Y with X's type (Y may have another type from opset 12)."""


def _mod_value(a: DimExpr, b: DimExpr, fmod: int) -> int:
    x, y = shapes.const(a), shapes.const(b)
    if y == 0:
        raise ValueError("modulo by zero")
    if fmod:
        r = abs(x) % abs(y)
        return r if x >= 0 else -r
    return x % y


class Mod(BinaryBase):
    """Remainder: ``fmod=0`` takes the divisor's sign (integers; floats from opset 28),
    ``fmod=1`` the dividend's (C ``fmod``). Integer division by zero gives 0."""

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        fmod = self.attrs["fmod"]
        return shapes.elementwise_values(inputs[:2], lambda a, b: _mod_value(a, b, fmod))


class VariadicBase(BroadcastOp):
    """An elementwise reduction over any number of inputs, broadcast together."""

    float_values = True  # exact on whole numbers

    value_fn: ClassVar[Callable[..., Any] | None] = None

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        fn = type(self).value_fn
        return None if fn is None else shapes.variadic_values(inputs, fn)


class Sum(VariadicBase):
    """Variadic elementwise sum with multidirectional broadcasting."""

    value_fn = staticmethod(lambda a, b: a + b)


class Max(VariadicBase):
    """Variadic elementwise maximum (NaN propagates)."""

    value_fn = staticmethod(lambda a, b: a.max(b))


class Min(VariadicBase):
    """Variadic elementwise minimum (NaN propagates)."""

    value_fn = staticmethod(lambda a, b: a.min(b))


class Mean(VariadicBase):
    """Variadic elementwise mean."""


#: float types of Exp/Log/Sqrt (bfloat16 from opset 13)
FLOATS = (*FLOAT_TYPES, DataType.BFLOAT16)


class Exp(UnaryOp):
    dtypes = FLOATS


class Neg(UnaryOp):
    float_values = True  # exact on whole numbers

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.elementwise_values(inputs[:1], lambda a: 0 - a)


class Log(UnaryOp):
    dtypes = FLOATS


class Abs(UnaryOp):
    float_values = True  # exact on whole numbers

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.elementwise_values(inputs[:1], lambda a: abs(shapes.const(a)))


class Sqrt(UnaryOp):
    dtypes = FLOATS
