"""Softmax (opsets 1 and 13), as CuPy reductions and ufuncs writing into ``out`` and
instance-owned buffers: max, subtract, exp, sum (accumulated in float32 for float16),
divide."""

from __future__ import annotations

from typing import Any

from mini_infer_core.ops import softmax as schema

from ..serialization import CudaPlugin
from ._common import Scratch, acc_dtype, array_module

__all__ = ["Softmax_1", "Softmax_13"]


class _Softmax(CudaPlugin, schema.SoftmaxBase):
    def setup(self) -> None:
        self.scratch = Scratch()

    def compute(self, x: Any, *, out: Any, axis: int) -> None:
        xp = array_module(x, out)
        x, y, a = self.operands(x, out)
        red_shape = x.shape[:a] + (1,) + x.shape[a + 1:]
        red = self.scratch.buffer(xp, "max", red_shape, y.dtype)
        xp.amax(x, axis=a, keepdims=True, out=red)
        xp.subtract(x, red, out=y)
        xp.exp(y, out=y)
        acc = acc_dtype(y.dtype)
        total = self.scratch.buffer(xp, "sum", red_shape, acc)
        xp.sum(y, axis=a, keepdims=True, dtype=acc, out=total)
        xp.divide(y, total, out=y, casting="same_kind")


class Softmax_1(_Softmax, schema.Softmax_1):  # noqa: N801
    pass


class Softmax_13(_Softmax, schema.Softmax_13):  # noqa: N801
    pass
