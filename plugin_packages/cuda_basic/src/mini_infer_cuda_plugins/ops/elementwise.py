"""Elementwise arithmetic: the broadcasting binary operators Add, Sub, Mul, Div, Pow, the
variadic Sum, and Exp, Log, Sqrt, Neg, Abs -- CuPy (or NumPy) ufuncs writing into ``out``.

Integer operators also give their build-time values (``output_values``) so shape arithmetic
folds while the engine is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.plugin import (
    BroadcastPlugin,
    DimsExprs,
    UnaryPlugin,
    shapes,
)
from mini_infer_core.plugin.shapes import Shapes, Values

from ..serialization import CudaPlugin
from ._common import FLOATS, array_module

__all__ = ["Add", "Sub", "Mul", "Div", "Pow", "Sum", "Exp", "Log", "Sqrt", "Neg", "Abs"]



class Binary(CudaPlugin, BroadcastPlugin):
    """A broadcasting two-input operator; opset<7 ``broadcast``/``axis`` supported."""

    attributes: ClassVar[dict[str, Any]] = {
        "broadcast": 0, "axis": None, "consumed_inputs": None}
    #: the operation on build-time values; None: values are not propagated
    value_fn: ClassVar[Callable[..., Any] | None] = None

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        fn = type(self).value_fn
        if fn is None or self.attrs.get("broadcast"):
            return None
        return shapes.elementwise_values(inputs[:2], fn)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [shapes.binary_dims(inputs[0], inputs[1], self.attrs.get("broadcast", 0),
                                   self.attrs.get("axis"))]

    def compute(self, a: Any, b: Any, *, out: Any, broadcast: int = 0,
                axis: int | None = None, **_: Any) -> None:
        extra = shapes.legacy_broadcast_rank(b.ndim, a.ndim, broadcast, axis)
        if extra:
            b = b.reshape(b.shape + (1,) * extra)
        with np.errstate(all="ignore"):
            self.apply(array_module(a, b, out), a, b, out)

    def apply(self, xp: Any, a: Any, b: Any, out: Any) -> None:
        raise NotImplementedError


class Add(Binary):
    value_fn = staticmethod(lambda a, b: a + b)

    def apply(self, xp: Any, a: Any, b: Any, out: Any) -> None:
        xp.add(a, b, out=out)


class Sub(Binary):
    value_fn = staticmethod(lambda a, b: a - b)

    def apply(self, xp: Any, a: Any, b: Any, out: Any) -> None:
        xp.subtract(a, b, out=out)


class Mul(Binary):
    value_fn = staticmethod(lambda a, b: a * b)

    def apply(self, xp: Any, a: Any, b: Any, out: Any) -> None:
        xp.multiply(a, b, out=out)


class Div(Binary):
    """Division; integer division truncates toward zero (ONNX, C)."""

    value_fn = staticmethod(shapes.trunc_div)

    @property
    def graph_safe(self) -> bool:
        """Signed integer division allocates its rounding correction."""
        return not any(d.dtype.numpy.kind == "i" for d in self.output_descs)

    def apply(self, xp: Any, a: Any, b: Any, out: Any) -> None:
        if out.dtype.kind == "u":
            xp.floor_divide(a, b, out=out)
        elif out.dtype.kind == "i":
            xp.floor_divide(a, b, out=out)
            # floor differs from truncation where the signs differ and b does not divide a
            fix = (xp.remainder(a, b) != 0) & ((a < 0) != (b < 0))
            xp.add(out, fix, out=out, casting="unsafe")
        else:
            xp.divide(a, b, out=out)


class Pow(Binary):
    """X ** Y with X's type (Y may have another type from opset 12)."""

    mixed_floats = True
    attributes: ClassVar[dict[str, Any]] = {"broadcast": 0, "axis": None}

    def apply(self, xp: Any, a: Any, b: Any, out: Any) -> None:
        xp.power(a, b, out=out, casting="unsafe")


class Sum(CudaPlugin, BroadcastPlugin):
    """Variadic elementwise sum, inputs broadcast together."""

    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.variadic_values(inputs, lambda a, b: a + b)

    def compute(self, *xs: Any, out: Any, **_: Any) -> None:
        xp = array_module(*xs, out)
        if len(xs) == 1:
            xp.copyto(out, xs[0])
            return
        xp.add(xs[0], xs[1], out=out)
        for x in xs[2:]:
            xp.add(out, x, out=out)


class _Unary(CudaPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}
    #: the ufunc's name in NumPy and CuPy
    ufunc: ClassVar[str] = ""

    def compute(self, x: Any, *, out: Any, **_: Any) -> None:
        xp = array_module(x, out)
        with np.errstate(all="ignore"):  # ONNX (IEEE) defines the results: inf, NaN
            getattr(xp, type(self).ufunc)(x, out=out)


class Exp(_Unary):
    dtypes = FLOATS
    ufunc = "exp"


class Log(_Unary):
    dtypes = FLOATS
    ufunc = "log"


class Sqrt(_Unary):
    dtypes = FLOATS
    ufunc = "sqrt"


class Neg(_Unary):
    ufunc = "negative"

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.elementwise_values(inputs[:1], lambda a: 0 - a)


class Abs(_Unary):
    ufunc = "absolute"

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.elementwise_values(inputs[:1], lambda a: abs(shapes.const(a)))
