"""Activations: Relu, LeakyRelu, Sigmoid, Tanh, Clip, Softmax, LogSoftmax, Dropout."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from ..plugin import DataType
from ..plugin.shapes import FLOAT_TYPES, norm_axis
from ._schema import UnaryOp

__all__ = ["Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip_1", "Clip_11", "Softmax_1",
           "Softmax_13", "LogSoftmax_1", "LogSoftmax_13", "Dropout_1", "Dropout_10"]

#: float types of the activations (bfloat16 from opset 13/14)
FLOATS = (*FLOAT_TYPES, DataType.BFLOAT16)


class Relu(UnaryOp):
    """max(x, 0)."""


class LeakyRelu(UnaryOp):
    """x where x >= 0, alpha * x elsewhere."""

    dtypes = FLOATS


class Sigmoid(UnaryOp):
    """1 / (1 + exp(-x))."""

    dtypes = FLOATS


class Clip_1(UnaryOp):  # noqa: N801
    """Clip before opset 11: ``min``/``max`` attributes (absent: unbounded)."""

    plugin_version = "1"
    max_opset = 10
    attributes: ClassVar[dict[str, Any]] = {"min": None, "max": None, "consumed_inputs": None}


class Clip_11(UnaryOp):  # noqa: N801
    """Clip from opset 11: optional scalar ``min``/``max`` inputs."""

    plugin_version = "11"
    min_opset = 11


class Tanh(UnaryOp):
    dtypes = FLOATS


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


class DropoutBase(UnaryOp):
    n_outputs = 2


class Dropout_1(DropoutBase):  # noqa: N801
    """Dropout before opset 10: in inference a copy; the mask has the input's type."""

    plugin_version = "1"
    max_opset = 9

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], input_types[0]]


class Dropout_10(DropoutBase):  # noqa: N801
    """Dropout from opset 10: in inference a copy and an all-True bool mask; with
    ``training_mode`` (input 2, opset 12) elements are dropped."""

    plugin_version = "10"
    min_opset = 10

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], DataType.BOOL]

