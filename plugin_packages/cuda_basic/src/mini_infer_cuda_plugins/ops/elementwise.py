"""Elementwise arithmetic: Add, Sub, Mul, Div, Pow, Sum, Exp, Log, Sqrt, Neg, Abs -- CuPy (or
NumPy) ufuncs writing into ``out`` (schemas in :mod:`mini_infer_core.ops.elementwise`)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from mini_infer_core.ops import elementwise as schema

from ..serialization import CudaPlugin
from ._common import array_module

__all__ = ["Add", "Sub", "Mul", "Div", "Pow", "Sum", "Exp", "Log", "Sqrt", "Neg", "Abs"]


class _Ufunc(CudaPlugin):
    """The operator as one ufunc of the array module, named in ``ufunc``; ONNX (IEEE)
    defines the results where NumPy would warn (inf, NaN)."""

    ufunc: ClassVar[str] = ""

    def compute(self, *xs: Any, out: Any, **_: Any) -> None:
        if isinstance(self, schema.BinaryBase):
            xs = self.operands(*xs)
        xp = array_module(*xs, out)
        fn = getattr(xp, type(self).ufunc)
        with np.errstate(all="ignore"):
            if len(xs) == 1:
                fn(xs[0], out=out)
                return
            fn(xs[0], xs[1], out=out, casting="unsafe")
            for x in xs[2:]:
                fn(out, x, out=out)


def ufunc_kernel(base: type[Any], ufunc: str, module: str = __name__, **extra: Any
                 ) -> type[CudaPlugin]:
    """The kernel of schema ``base``: the array module's ``ufunc``, a class named like the
    schema in ``module``."""
    return type(base.__name__, (_Ufunc, base), {"ufunc": ufunc, "__module__": module, **extra})


class Div(CudaPlugin, schema.Div):
    """Integer division truncates toward zero: a floor division, corrected where the signs
    differ and the divisor does not divide (a temporary: not graph-safe)."""

    @property
    def graph_safe(self) -> bool:
        return not any(d.dtype.numpy.kind == "i" for d in self.output_descs)

    def compute(self, a: Any, b: Any, *, out: Any, **_: Any) -> None:
        a, b = self.operands(a, b)
        xp = array_module(a, b, out)
        with np.errstate(all="ignore"):
            if out.dtype.kind not in "iu":
                xp.divide(a, b, out=out)
                return
            xp.floor_divide(a, b, out=out)
            if out.dtype.kind == "i":
                fix = (xp.remainder(a, b) != 0) & ((a < 0) != (b < 0))
                xp.add(out, fix, out=out, casting="unsafe")


# operators that are one ufunc of the array module
Add, Sub, Mul, Sum, Exp, Log, Sqrt, Neg, Abs = (ufunc_kernel(op, name) for op, name in (
    (schema.Add, "add"), (schema.Sub, "subtract"), (schema.Mul, "multiply"),
    (schema.Sum, "add"), (schema.Exp, "exp"), (schema.Log, "log"), (schema.Sqrt, "sqrt"),
    (schema.Neg, "negative"), (schema.Abs, "absolute")))
Pow = ufunc_kernel(schema.Pow, "power", mixed_floats=True)
