"""Unary math: trigonometric and hyperbolic functions, rounding, Sign, Reciprocal, IsNaN and
IsInf (Erf, which transformers' exported GELU uses, is :mod:`.erf`: an engine with an Erf does
not make this family's classes).

Each is one input and one output of its shape. The float-only ones (``FloatMath``) take
float16, float, double and bfloat16 (bfloat16 from opset 13 or 22, as onnx adds it); Sign
takes every numeric type; IsNaN and IsInf answer with bool. Results outside a function's
domain are NaN or inf, as IEEE defines them (ONNX does not make them errors).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..plugin import DataType
from ._schema import FLOATS, UnaryOp

__all__ = [
    "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
    "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "Reciprocal", "Floor", "Ceil", "Round", "Sign", "IsNaN", "IsInf",
]


class FloatMath(UnaryOp):
    """A unary function of floating-point tensors (float16, float, double, bfloat16)."""

    dtypes = FLOATS


class Sin(FloatMath):
    """sin(x), x in radians."""


class Cos(FloatMath):
    """cos(x), x in radians."""


class Tan(FloatMath):
    """tan(x), x in radians."""


class Asin(FloatMath):
    """arcsin(x) in [-pi/2, pi/2]; NaN outside [-1, 1]."""


class Acos(FloatMath):
    """arccos(x) in [0, pi]; NaN outside [-1, 1]."""


class Atan(FloatMath):
    """arctan(x) in (-pi/2, pi/2)."""


class Sinh(FloatMath):
    """sinh(x) = (e^x - e^-x) / 2."""


class Cosh(FloatMath):
    """cosh(x) = (e^x + e^-x) / 2."""


class Asinh(FloatMath):
    """arsinh(x) = ln(x + sqrt(x^2 + 1))."""


class Acosh(FloatMath):
    """arcosh(x) = ln(x + sqrt(x^2 - 1)); NaN below 1."""


class Atanh(FloatMath):
    """artanh(x) = ln((1 + x) / (1 - x)) / 2; +-inf at +-1, NaN beyond."""


class Reciprocal(FloatMath):
    """1 / x (inf at 0)."""


class Floor(FloatMath):
    """The largest integer <= x."""


class Ceil(FloatMath):
    """The smallest integer >= x."""


class Round(FloatMath):
    """x rounded to the nearest integer, halves to even (``round(2.5) = 2``)."""


class Sign(UnaryOp):
    """-1, 0 or 1 as x is negative, zero or positive (NaN stays NaN); any numeric type."""


class ElementTest(UnaryOp):
    """A test of each element: a bool tensor of the input's shape."""

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.BOOL]


class IsNaN(ElementTest):
    """x != x."""


class IsInf(ElementTest):
    """x is +inf (with ``detect_positive``) or -inf (with ``detect_negative``)."""
