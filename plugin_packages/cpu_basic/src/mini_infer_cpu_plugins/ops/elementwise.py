"""Elementwise arithmetic: broadcasting binary operators (Add, Sub, Mul, Div, Pow, Mod), the
variadic Sum, Max, Min and Mean, and Exp, Log, Sqrt, Neg, Abs.

The integer operators also compute their build-time values (``output_values``) so shape
arithmetic (``Shape -> Gather -> Mul -> Concat -> Reshape``) folds when the engine is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.plugin import (
    BroadcastPlugin,
    DataType,
    DimExpr,
    DimsExprs,
    UnaryPlugin,
    shapes,
)
from mini_infer_core.plugin.shapes import Shapes, Values

from ..serialization import CpuPlugin
from ._util import FLOATS

__all__ = ["Add", "Sub", "Mul", "Div", "Pow", "Mod", "Sum", "Max", "Min", "Mean", "Exp", "Log",
           "Sqrt", "Neg", "Abs"]

Array = NDArray[Any]


class _Binary(CpuPlugin, BroadcastPlugin):
    """A two-input broadcasting operator. Opset<7 legacy ``broadcast``/``axis`` supported."""

    attributes: ClassVar[dict[str, Any]] = {
        "broadcast": 0, "axis": None, "consumed_inputs": None}
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

    def compute(self, a: Array, b: Array, *, out: Array, broadcast: int = 0,
                axis: int | None = None, **_: Any) -> None:
        extra = shapes.legacy_broadcast_rank(b.ndim, a.ndim, broadcast, axis)
        if extra:
            b = b.reshape(b.shape + (1,) * extra)
        self.apply(a, b, out)

    def apply(self, a: Array, b: Array, out: Array) -> None:
        raise NotImplementedError


class Add(_Binary):
    value_fn = staticmethod(lambda a, b: a + b)

    def apply(self, a: Array, b: Array, out: Array) -> None:
        np.add(a, b, out=out)


class Sub(_Binary):
    value_fn = staticmethod(lambda a, b: a - b)

    def apply(self, a: Array, b: Array, out: Array) -> None:
        np.subtract(a, b, out=out)


class Mul(_Binary):
    value_fn = staticmethod(lambda a, b: a * b)

    def apply(self, a: Array, b: Array, out: Array) -> None:
        np.multiply(a, b, out=out)


class Div(_Binary):
    value_fn = staticmethod(shapes.trunc_div)

    def apply(self, a: Array, b: Array, out: Array) -> None:
        if out.dtype.kind in "iu":
            # ONNX integer division truncates toward zero (as C); float->int casts truncate
            with np.errstate(divide="ignore", invalid="ignore"):
                np.divide(a, b, out=out, casting="unsafe")
        else:
            np.divide(a, b, out=out)


class Pow(_Binary):
    """X ** Y; the output has X's type (Y may have another type from opset 12)."""

    attributes: ClassVar[dict[str, Any]] = {"broadcast": 0, "axis": None}

    def apply(self, a: Array, b: Array, out: Array) -> None:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            np.power(a, b, out=out, casting="unsafe")


def _mod_value(a: DimExpr, b: DimExpr, fmod: int) -> int:
    x, y = shapes.const(a), shapes.const(b)
    if y == 0:
        raise ValueError("modulo by zero")
    if fmod:
        r = abs(x) % abs(y)
        return r if x >= 0 else -r
    return x % y


class Mod(_Binary):
    """Remainder: ``fmod=0`` takes the divisor's sign (integers; floats from opset 28),
    ``fmod=1`` the dividend's (C ``fmod``). Integer division by zero gives 0."""

    min_opset = 10
    attributes: ClassVar[dict[str, Any]] = {"fmod": 0}

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        fmod = self.attrs["fmod"]
        return shapes.elementwise_values(inputs[:2], lambda a, b: _mod_value(a, b, fmod))

    def compute(self, a: Array, b: Array, *, out: Array, broadcast: int = 0,
                axis: int | None = None, fmod: int = 0, **_: Any) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            if fmod:
                np.fmod(a, b, out=out)
            else:
                np.mod(a, b, out=out)


class _Variadic(CpuPlugin, BroadcastPlugin):
    """An elementwise reduction over any number of inputs, broadcast together."""

    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}
    ufunc: ClassVar[Any] = None
    value_fn: ClassVar[Callable[..., Any] | None] = None

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        fn = type(self).value_fn
        return None if fn is None else shapes.variadic_values(inputs, fn)

    def compute(self, *xs: Array, out: Array, **_: Any) -> None:
        if len(xs) == 1:
            np.copyto(out, xs[0])
            return
        ufunc = type(self).ufunc
        ufunc(xs[0], xs[1], out=out)
        for x in xs[2:]:
            ufunc(out, x, out=out)


class Sum(_Variadic):
    """Variadic elementwise sum with multidirectional broadcasting."""

    ufunc = np.add
    value_fn = staticmethod(lambda a, b: a + b)


class Max(_Variadic):
    """Variadic elementwise maximum (NaN propagates)."""

    ufunc = np.maximum
    value_fn = staticmethod(lambda a, b: a.max(b))


class Min(_Variadic):
    """Variadic elementwise minimum (NaN propagates)."""

    ufunc = np.minimum
    value_fn = staticmethod(lambda a, b: a.min(b))


class Mean(_Variadic):
    """Variadic elementwise mean."""

    ufunc = np.add

    def compute(self, *xs: Array, out: Array, **_: Any) -> None:
        super().compute(*xs, out=out)
        if len(xs) > 1:
            np.divide(out, len(xs), out=out, casting="unsafe")


#: float types of Exp/Log/Sqrt (bfloat16 from opset 13)
_FLOATS = (*FLOATS, DataType.BFLOAT16)


class _Unary(CpuPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}


class Exp(_Unary):
    dtypes = _FLOATS

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        with np.errstate(over="ignore"):
            np.exp(x, out=out)


class Log(_Unary):
    dtypes = _FLOATS

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            np.log(x, out=out)


class Sqrt(_Unary):
    dtypes = _FLOATS

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        with np.errstate(invalid="ignore"):
            np.sqrt(x, out=out)


class Neg(_Unary):
    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.elementwise_values(inputs[:1], lambda a: 0 - a)

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        np.negative(x, out=out)


class Abs(_Unary):
    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.elementwise_values(inputs[:1], lambda a: abs(shapes.const(a)))

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        np.abs(x, out=out)
