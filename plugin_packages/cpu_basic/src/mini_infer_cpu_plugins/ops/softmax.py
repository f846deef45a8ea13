"""Softmax and LogSoftmax (schemas in :mod:`mini_infer_core.ops.softmax`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import schema_kernels
from mini_infer_core.ops import softmax as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._util import Scratch

__all__ = ["Softmax_1", "Softmax_13", "LogSoftmax_1", "LogSoftmax_13"]

Array = NDArray[Any]


class _Softmax(CpuPlugin, schema.SoftmaxBase):
    """max, subtract, exp, sum, divide (log: log of the sum, subtract), into ``out`` and
    buffers the instance keeps."""

    def setup(self) -> None:
        self.scratch = Scratch()

    def compute(self, x: Array, *, out: Array, axis: int) -> None:
        x, y, a = self.operands(x, out)
        red_shape = x.shape[:a] + (1,) + x.shape[a + 1:]
        red = self.scratch.buffer("red", red_shape, y.dtype)
        np.max(x, axis=a, keepdims=True, out=red)
        np.subtract(x, red, out=y)
        if self.log:
            tmp = self.scratch.buffer("exp", y.shape, y.dtype)
            np.exp(y, out=tmp)
            np.sum(tmp, axis=a, keepdims=True, out=red)
            np.log(red, out=red)
            np.subtract(y, red, out=y)
        else:
            np.exp(y, out=y)
            np.sum(y, axis=a, keepdims=True, out=red)
            np.divide(y, red, out=y)


Softmax_1, Softmax_13, LogSoftmax_1, LogSoftmax_13 = schema_kernels(
    _Softmax, schema.Softmax_1, schema.Softmax_13, schema.LogSoftmax_1, schema.LogSoftmax_13,
    module=__name__)
