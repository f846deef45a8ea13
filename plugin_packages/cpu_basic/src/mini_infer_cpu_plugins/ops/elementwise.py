"""Elementwise arithmetic: Add, Sub, Mul, Div, Pow, Mod, Sum, Max, Min, Mean, Exp, Log, Sqrt,
Neg, Abs -- NumPy ufuncs writing into ``out`` (schemas in
:mod:`mini_infer_core.ops.elementwise`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.ops import elementwise as schema
from mini_infer_core.plugin import quiet_fp
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin

__all__ = ["Add", "Sub", "Mul", "Div", "Pow", "Mod", "Sum", "Max", "Min", "Mean", "Exp", "Log",
           "Sqrt", "Neg", "Abs"]

Array = NDArray[Any]


class _Binary(CpuPlugin, schema.BinaryBase):
    #: the NumPy ufunc, for operators that are one
    ufunc: Any = None

    def setup(self) -> None:
        super().setup()
        #: the legacy ``broadcast`` attribute (opset < 7) lines b up at ``axis``
        self._legacy = bool(self.attrs.get("broadcast"))

    def compute(self, a: Array, b: Array, *, out: Array, **_: Any) -> None:
        if self._legacy:
            a, b = self.operands(a, b)
        self.apply(a, b, out)

    def apply(self, a: Array, b: Array, out: Array) -> None:
        type(self).ufunc(a, b, out=out)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """The ufunc with the step's operands and output bound (operators that are one
        ufunc, without the legacy broadcast): ~1.5 us of Python less per node."""
        if self._legacy or type(self).apply is not _Binary.apply or type(self).ufunc is None:
            return None
        a, b = inputs
        return partial(type(self).ufunc, a, b, outputs[0])  # out positional: faster


def _bound_ufunc(ufunc: Any, inputs: Sequence[Any], outputs: Sequence[Any], quiet: bool,
                 **kw: Any) -> Callable[[], None] | None:
    """``ufunc`` over the step's arrays into its output, bound (marked :func:`quiet_fp`
    where the kernel runs under ``np.errstate``); None for anything but NumPy arrays."""
    arrays = (*inputs, *outputs)
    if not all(isinstance(a, np.ndarray) for a in arrays):
        return None
    call = partial(ufunc, *inputs, outputs[0], **kw)
    return quiet_fp(call) if quiet else call


def kernel(base: type[Any], family: type[CpuPlugin], ufunc: Any, module: str = __name__
           ) -> type[CpuPlugin]:
    """The kernel of schema ``base``: ``family``'s with the NumPy ``ufunc``, a class named like
    the schema in ``module``."""
    return type(base.__name__, (family, base), {"ufunc": ufunc, "__module__": module})


class Div(_Binary, schema.Div):
    def apply(self, a: Array, b: Array, out: Array) -> None:
        if out.dtype.kind in "iu":
            # ONNX integer division truncates toward zero (as C); float->int casts truncate
            with np.errstate(divide="ignore", invalid="ignore"):
                np.divide(a, b, out=out, casting="unsafe")
        else:
            np.divide(a, b, out=out)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """Float division bound (integer division truncates: through ``enqueue``)."""
        if self._legacy or getattr(outputs[0], "dtype", None) is None or \
                outputs[0].dtype.kind in "iu":
            return None
        return _bound_ufunc(np.divide, inputs, outputs, False)


class Pow(_Binary, schema.Pow):
    def apply(self, a: Array, b: Array, out: Array) -> None:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            np.power(a, b, out=out, casting="unsafe")

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        if self._legacy:
            return None
        return _bound_ufunc(np.power, inputs, outputs, True, casting="unsafe")


class Mod(_Binary, schema.Mod):
    def apply(self, a: Array, b: Array, out: Array) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            (np.fmod if self.attrs["fmod"] else np.mod)(a, b, out=out)


class _Variadic(CpuPlugin, schema.VariadicBase):
    #: the pairwise NumPy ufunc
    ufunc: Any = None

    def compute(self, *xs: Array, out: Array, **_: Any) -> None:
        if len(xs) == 1:
            np.copyto(out, xs[0])
            return
        ufunc = type(self).ufunc
        ufunc(xs[0], xs[1], out=out)
        for x in xs[2:]:
            ufunc(out, x, out=out)


class Mean(_Variadic, schema.Mean):
    ufunc = np.add

    def compute(self, *xs: Array, out: Array, **_: Any) -> None:
        super().compute(*xs, out=out)
        if len(xs) > 1:
            np.divide(out, len(xs), out=out, casting="unsafe")


class _Unary(CpuPlugin):
    ufunc: Any = None

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        type(self).ufunc(x, out=out)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        return _bound_ufunc(type(self).ufunc, inputs, outputs, False)


class _QuietUnary(_Unary):
    """The ufunc with the floating-point warnings ``quiet`` names (np.errstate's keywords)
    off."""

    quiet: dict[str, Any] = {}

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        with np.errstate(**self.quiet):
            type(self).ufunc(x, out=out)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        return _bound_ufunc(type(self).ufunc, inputs, outputs, True)


class Exp(_QuietUnary, schema.Exp):
    ufunc, quiet = np.exp, {"over": "ignore"}


class Log(_QuietUnary, schema.Log):
    ufunc, quiet = np.log, {"divide": "ignore", "invalid": "ignore"}


class Sqrt(_QuietUnary, schema.Sqrt):
    ufunc, quiet = np.sqrt, {"invalid": "ignore"}


# operators that are one NumPy ufunc
Add, Sub, Mul = (kernel(op, _Binary, f) for op, f in (
    (schema.Add, np.add), (schema.Sub, np.subtract), (schema.Mul, np.multiply)))
Sum, Max, Min = (kernel(op, _Variadic, f) for op, f in (
    (schema.Sum, np.add), (schema.Max, np.maximum), (schema.Min, np.minimum)))
Neg, Abs = kernel(schema.Neg, _Unary, np.negative), kernel(schema.Abs, _Unary, np.abs)
