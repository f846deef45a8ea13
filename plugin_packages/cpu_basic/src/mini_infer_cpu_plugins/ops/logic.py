"""Logic and comparisons: Not, And, Or, Xor, Equal (strings too), Less, Greater, LessOrEqual,
GreaterOrEqual and Where -- NumPy ufuncs into ``out`` (schemas in
:mod:`mini_infer_core.ops.logic`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.ops import logic as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._util import kernel

__all__ = ["Not", "And", "Or", "Xor", "Equal", "Less", "Greater", "LessOrEqual",
           "GreaterOrEqual", "Where"]

Array = NDArray[Any]


class Not(CpuPlugin, schema.Not):
    def compute(self, x: Array, *, out: Array) -> None:
        np.logical_not(x, out=out)


class _Predicate(CpuPlugin, schema.PredicateBase):
    #: the NumPy ufunc
    ufunc: Any = None

    def compute(self, a: Array, b: Array, *, out: Array, **_: Any) -> None:
        a, b = self.operands(a, b)
        if a.dtype == object or b.dtype == object:  # strings: Equal from opset 19
            out[...] = type(self).ufunc(np.asarray(a, dtype=object),
                                        np.asarray(b, dtype=object))
        else:
            type(self).ufunc(a, b, out=out)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """Numeric operands (of the current broadcast rules) bound to the ufunc."""
        a, b = inputs
        if self.attrs.get("broadcast") or not all(
                isinstance(v, np.ndarray) and v.dtype != object for v in (a, b, outputs[0])):
            return None
        return partial(type(self).ufunc, a, b, outputs[0])


# each one NumPy ufunc with a bool output
And, Or, Xor, Equal, Less, Greater, LessOrEqual, GreaterOrEqual = (
    kernel(op, _Predicate, f, __name__) for op, f in (
        (schema.And, np.logical_and), (schema.Or, np.logical_or), (schema.Xor, np.logical_xor),
        (schema.Equal, np.equal), (schema.Less, np.less), (schema.Greater, np.greater),
        (schema.LessOrEqual, np.less_equal), (schema.GreaterOrEqual, np.greater_equal)))


class Where(CpuPlugin, schema.Where):
    def compute(self, condition: Array, x: Array, y: Array, *, out: Array) -> None:
        np.copyto(out, y)
        np.copyto(out, x, where=condition)
