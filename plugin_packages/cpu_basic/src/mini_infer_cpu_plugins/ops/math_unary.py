"""Unary math: trigonometric and hyperbolic functions, rounding, Sign, Reciprocal, IsNaN and
IsInf (Erf: :mod:`.erf`) -- NumPy ufuncs (ml_dtypes types such as bfloat16 included)
writing into ``out`` (schemas in :mod:`mini_infer_core.ops.math_unary`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import math_unary as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._util import kernel

__all__ = [
    "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
    "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "Reciprocal", "Floor", "Ceil", "Round", "Sign", "IsNaN", "IsInf",
]

Array = NDArray[Any]


class _Ufunc(CpuPlugin):
    """``out = ufunc(x)``; floating-point warnings (domain, overflow) are silenced: ONNX
    defines the results as NaN / inf, as IEEE does."""

    ufunc: Any = None

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        with np.errstate(all="ignore"):
            type(self).ufunc(x, out=out)


# operators that are one NumPy ufunc (np.round rounds halves to even, as ONNX)
(Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Reciprocal, Floor, Ceil,
 Round, Sign) = (kernel(op, _Ufunc, f, __name__) for op, f in (
    (schema.Sin, np.sin), (schema.Cos, np.cos), (schema.Tan, np.tan),
    (schema.Asin, np.arcsin), (schema.Acos, np.arccos), (schema.Atan, np.arctan),
    (schema.Sinh, np.sinh), (schema.Cosh, np.cosh), (schema.Asinh, np.arcsinh),
    (schema.Acosh, np.arccosh), (schema.Atanh, np.arctanh), (schema.Reciprocal, np.reciprocal),
    (schema.Floor, np.floor), (schema.Ceil, np.ceil), (schema.Round, np.round),
    (schema.Sign, np.sign)))


class IsNaN(CpuPlugin, schema.IsNaN):
    def compute(self, x: Array, *, out: Array) -> None:
        np.isnan(x, out=out)


class IsInf(CpuPlugin, schema.IsInf):
    def compute(self, x: Array, *, out: Array, detect_negative: int,
                detect_positive: int) -> None:
        np.isinf(x, out=out)
        if not detect_negative:
            out &= ~np.signbit(x)
        if not detect_positive:
            out &= np.signbit(x)
