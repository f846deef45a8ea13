"""Softmax (opsets 1 and 13), as CuPy reductions and ufuncs writing into ``out`` and
instance-owned buffers: max, subtract, exp, sum (accumulated in float32 for float16),
divide."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from mini_infer_core.plugin import UnaryPlugin
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CudaPlugin
from ._common import FLOATS, Scratch, acc_dtype, array_module

__all__ = ["Softmax_1", "Softmax_13"]


class _Softmax(CudaPlugin, UnaryPlugin):
    dtypes = FLOATS
    #: opsets 1-12 flatten the input to 2-D at ``axis``
    coerce_2d: ClassVar[bool] = False

    def setup(self) -> None:
        self.scratch = Scratch()

    def compute(self, x: Any, *, out: Any, axis: int) -> None:
        xp = array_module(x, out)
        a = norm_axis(axis, x.ndim)
        if not self.coerce_2d:
            self._softmax(xp, x, out, a)
            return
        rows = int(np.prod(x.shape[:a], dtype=np.int64))
        x2 = x.reshape(rows, -1)
        if out.flags.c_contiguous:
            self._softmax(xp, x2, out.reshape(x2.shape), 1)
        else:
            tmp = self.scratch.buffer(xp, "out", x2.shape, out.dtype)
            self._softmax(xp, x2, tmp, 1)
            out[...] = tmp.reshape(out.shape)

    def _softmax(self, xp: Any, x: Any, out: Any, axis: int) -> None:
        red_shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
        red = self.scratch.buffer(xp, "max", red_shape, out.dtype)
        xp.amax(x, axis=axis, keepdims=True, out=red)
        xp.subtract(x, red, out=out)
        xp.exp(out, out=out)
        acc = acc_dtype(out.dtype)
        total = self.scratch.buffer(xp, "sum", red_shape, acc)
        xp.sum(out, axis=axis, keepdims=True, dtype=acc, out=total)
        xp.divide(out, total, out=out, casting="same_kind")


class Softmax_1(_Softmax):  # noqa: N801
    """Softmax before opset 13: over the input flattened to 2-D at ``axis``."""

    op_type = "Softmax"
    plugin_version = "1"
    max_opset = 12
    coerce_2d = True
    attributes: ClassVar[dict[str, Any]] = {"axis": 1}


class Softmax_13(_Softmax):  # noqa: N801
    """Softmax from opset 13: along ``axis``."""

    op_type = "Softmax"
    plugin_version = "13"
    min_opset = 13
    attributes: ClassVar[dict[str, Any]] = {"axis": -1}
