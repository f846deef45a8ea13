"""Unary math: trigonometric and hyperbolic functions, rounding, Sign, Reciprocal, Erf,
IsNaN and IsInf. NumPy ufuncs (ml_dtypes types such as bfloat16 included)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.plugin import DataType, UnaryPlugin

from ..serialization import CpuPlugin
from ._erf import erf

__all__ = [
    "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
    "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Erf", "IsNaN", "IsInf",
]

Array = NDArray[Any]


class _Ufunc(CpuPlugin, UnaryPlugin):
    """``out = ufunc(x)``; floating-point warnings (domain, overflow) are silenced: ONNX
    defines the results as NaN / inf, as IEEE does."""

    ufunc: ClassVar[Any] = None

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        with np.errstate(all="ignore"):
            type(self).ufunc(x, out=out)


class Sin(_Ufunc):
    min_opset = 7
    ufunc = np.sin


class Cos(_Ufunc):
    min_opset = 7
    ufunc = np.cos


class Tan(_Ufunc):
    min_opset = 7
    ufunc = np.tan


class Asin(_Ufunc):
    min_opset = 7
    ufunc = np.arcsin


class Acos(_Ufunc):
    min_opset = 7
    ufunc = np.arccos


class Atan(_Ufunc):
    min_opset = 7
    ufunc = np.arctan


class Sinh(_Ufunc):
    min_opset = 9
    ufunc = np.sinh


class Cosh(_Ufunc):
    min_opset = 9
    ufunc = np.cosh


class Asinh(_Ufunc):
    min_opset = 9
    ufunc = np.arcsinh


class Acosh(_Ufunc):
    min_opset = 9
    ufunc = np.arccosh


class Atanh(_Ufunc):
    min_opset = 9
    ufunc = np.arctanh


class Reciprocal(_Ufunc):
    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}
    ufunc = np.reciprocal


class Floor(_Ufunc):
    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}
    ufunc = np.floor


class Ceil(_Ufunc):
    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}
    ufunc = np.ceil


class Round(_Ufunc):
    """Round half to even, as ``np.round``."""

    min_opset = 11
    ufunc = np.round


class Sign(_Ufunc):
    min_opset = 9
    ufunc = np.sign


class Erf(CpuPlugin, UnaryPlugin):
    min_opset = 9

    def compute(self, x: Array, *, out: Array) -> None:
        if x.dtype.kind in "iu":
            erf(x.astype(np.float64), out)  # integers: erf is 0 at 0, +-1 elsewhere
        else:
            with np.errstate(all="ignore"):
                erf(x, out)


class IsNaN(CpuPlugin, UnaryPlugin):
    min_opset = 9

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.BOOL]

    def compute(self, x: Array, *, out: Array) -> None:
        np.isnan(x, out=out)


class IsInf(CpuPlugin, UnaryPlugin):
    min_opset = 10
    attributes: ClassVar[dict[str, Any]] = {"detect_negative": 1, "detect_positive": 1}

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.BOOL]

    def compute(self, x: Array, *, out: Array, detect_negative: int,
                detect_positive: int) -> None:
        np.isinf(x, out=out)
        if not detect_negative:
            out &= ~np.signbit(x)
        if not detect_positive:
            out &= np.signbit(x)
