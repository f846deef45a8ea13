"""Softmax and LogSoftmax, every opset."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from ..plugin.shapes import norm_axis
from ._schema import FLOATS, UnaryOp

__all__ = ["Softmax_1", "Softmax_13", "LogSoftmax_1", "LogSoftmax_13"]


class SoftmaxBase(UnaryOp):
    """Softmax and LogSoftmax, every opset."""

    dtypes = FLOATS
    #: before opset 13 the input is flattened to 2-D at ``axis``
    coerce_2d: ClassVar[bool] = False
    #: LogSoftmax
    log: ClassVar[bool] = False

    def operands(self, x: Any, out: Any) -> tuple[Any, Any, int]:
        """``x``, ``out`` and the axis as the kernel reduces them: flattened to 2-D at
        ``axis`` before opset 13 (views: outputs are C-contiguous)."""
        a = norm_axis(self.attrs["axis"], x.ndim)
        if not self.coerce_2d:
            return x, out, a
        rows = math.prod(x.shape[:a])
        return x.reshape(rows, -1), out.reshape(rows, -1), 1


class Softmax_1(SoftmaxBase):  # noqa: N801
    """Softmax before opset 13: over the input flattened to 2-D at ``axis``."""

    plugin_version = "1"
    max_opset = 12
    coerce_2d = True


class Softmax_13(SoftmaxBase):  # noqa: N801
    """Softmax from opset 13: along ``axis``."""

    plugin_version = "13"
    min_opset = 13


class LogSoftmax_1(Softmax_1):  # noqa: N801
    log = True


class LogSoftmax_13(Softmax_13):  # noqa: N801
    log = True
