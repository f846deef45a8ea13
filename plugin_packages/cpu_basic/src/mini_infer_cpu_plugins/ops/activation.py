"""Activations: Relu, LeakyRelu, Sigmoid, Tanh, Clip, Softmax, LogSoftmax, Dropout."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.plugin import DataType, UnaryPlugin
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CpuPlugin
from ._util import FLOATS, Scratch, copy_into, relu

__all__ = [
    "Relu",
    "LeakyRelu",
    "Sigmoid",
    "Tanh",
    "Clip_1",
    "Clip_11",
    "Softmax_1",
    "Softmax_13",
    "LogSoftmax_1",
    "LogSoftmax_13",
    "Dropout_1",
    "Dropout_10",
]

Array = NDArray[Any]

#: float types of the activations (bfloat16 from opset 13/14)
_FLOATS = (*FLOATS, DataType.BFLOAT16)


class Relu(CpuPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        relu(x, out)


class LeakyRelu(CpuPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"alpha": 0.01, "consumed_inputs": None}
    dtypes = _FLOATS

    def compute(self, x: Array, *, out: Array, alpha: float, **_: Any) -> None:
        # alpha <= 1: max(x, alpha*x); alpha > 1: min(x, alpha*x) -- no temporary needed
        np.multiply(x, alpha, out=out)
        if alpha <= 1.0:
            np.maximum(out, x, out=out)
        else:
            np.minimum(out, x, out=out)


class Sigmoid(CpuPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}
    dtypes = _FLOATS

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        # 1 / (1 + exp(-x)); exp overflows to inf for x << 0, giving the right limit 0
        with np.errstate(over="ignore"):
            np.negative(x, out=out)
            np.exp(out, out=out)
        np.add(out, 1, out=out)
        np.reciprocal(out, out=out)


class Tanh(CpuPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}
    dtypes = _FLOATS

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        np.tanh(x, out=out)


def _clip(x: Array, lo: Any, hi: Any, out: Array) -> None:
    if lo is None and hi is None:
        np.copyto(out, x)
    elif hi is None:
        np.maximum(x, lo, out=out)
    elif lo is None:
        np.minimum(x, hi, out=out)
    else:
        np.maximum(x, lo, out=out)
        np.minimum(out, hi, out=out)


class Clip_1(CpuPlugin, UnaryPlugin):  # noqa: N801
    """Clip before opset 11: ``min``/``max`` attributes (absent: unbounded)."""

    op_type = "Clip"
    plugin_version = "1"
    max_opset = 10
    attributes: ClassVar[dict[str, Any]] = {"min": None, "max": None, "consumed_inputs": None}

    def compute(self, x: Array, *, out: Array, min: float | None = None,  # noqa: A002
                max: float | None = None, **_: Any) -> None:  # noqa: A002
        _clip(x, min, max, out)


class Clip_11(CpuPlugin, UnaryPlugin):  # noqa: N801
    """Clip from opset 11: optional ``min``/``max`` scalar inputs."""

    op_type = "Clip"
    plugin_version = "11"
    min_opset = 11

    def compute(self, x: Array, lo: Array | None = None, hi: Array | None = None, *,
                out: Array) -> None:
        _clip(x, lo, hi, out)


class _SoftmaxBase(CpuPlugin, UnaryPlugin):
    dtypes = _FLOATS
    coerce_2d: ClassVar[bool] = False
    log: ClassVar[bool] = False

    def setup(self) -> None:
        self.scratch = Scratch()

    def compute(self, x: Array, *, out: Array, axis: int) -> None:
        a = norm_axis(axis, x.ndim)
        if self.coerce_2d:
            rows = int(np.prod(x.shape[:a], dtype=np.int64))
            x2 = x.reshape(rows, -1)
            if out.flags.c_contiguous:
                self._softmax(x2, out.reshape(x2.shape), 1)
            else:
                tmp = self.scratch.buffer("out", x2.shape, out.dtype)
                self._softmax(x2, tmp, 1)
                out[...] = tmp.reshape(out.shape)
        else:
            self._softmax(x, out, a)

    def _softmax(self, x: Array, out: Array, axis: int) -> None:
        red_shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
        red = self.scratch.buffer("red", red_shape, out.dtype)
        np.max(x, axis=axis, keepdims=True, out=red)
        np.subtract(x, red, out=out)
        if self.log:
            tmp = self.scratch.buffer("exp", out.shape, out.dtype)
            np.exp(out, out=tmp)
            np.sum(tmp, axis=axis, keepdims=True, out=red)
            np.log(red, out=red)
            np.subtract(out, red, out=out)
        else:
            np.exp(out, out=out)
            np.sum(out, axis=axis, keepdims=True, out=red)
            np.divide(out, red, out=out)


class Softmax_1(_SoftmaxBase):  # noqa: N801
    """Softmax before opset 13: the input is coerced to 2-D at ``axis``."""

    op_type = "Softmax"
    plugin_version = "1"
    max_opset = 12
    coerce_2d = True
    attributes: ClassVar[dict[str, Any]] = {"axis": 1}


class Softmax_13(_SoftmaxBase):  # noqa: N801
    """Softmax from opset 13: along ``axis``."""

    op_type = "Softmax"
    plugin_version = "13"
    min_opset = 13
    attributes: ClassVar[dict[str, Any]] = {"axis": -1}


class LogSoftmax_1(Softmax_1):  # noqa: N801
    op_type = "LogSoftmax"
    log = True


class LogSoftmax_13(Softmax_13):  # noqa: N801
    op_type = "LogSoftmax"
    log = True


class _Dropout(CpuPlugin, UnaryPlugin):
    n_outputs = 2

    def in_place_inputs(self, inputs: Sequence[Any], outputs: Sequence[Any]
                        ) -> dict[int, tuple[int, int]]:
        """Without a training_mode input, the output is the input: it may live in place."""
        return {} if len(inputs) > 2 and inputs[2] is not None else {0: (0, 0)}

    def compute(self, x: Array, *_inputs: Array | None, out: Any, **_: Any) -> None:
        # optional inputs ratio / training_mode (opset 12) are not used in inference
        if isinstance(out, tuple):
            copy_into(out[0], x)
            for mask in out[1:]:
                mask.fill(True)
        else:
            copy_into(out, x)


class Dropout_1(_Dropout):  # noqa: N801
    """Inference Dropout before opset 10: output = input; the mask has the input's type
    (all ones). ``ratio``/``is_test``/``consumed_inputs`` are accepted."""

    op_type = "Dropout"
    plugin_version = "1"
    max_opset = 9
    attributes: ClassVar[dict[str, Any]] = {"ratio": 0.5, "is_test": 0, "consumed_inputs": None}

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], input_types[0]]


class Dropout_10(_Dropout):  # noqa: N801
    """Dropout from opset 10: in inference (the default) output = input and the mask is all
    True. With ``training_mode`` (input 2, from opset 12) true and a ratio above 0, elements
    are dropped with a Mersenne-Twister stream seeded by ``seed`` (0 when absent, so runs are
    reproducible) and the rest scaled by 1 / (1 - ratio), as onnx's reference does.
    """

    def compute(self, x: Array, *inputs: Array | None, out: Any, **attrs: Any) -> None:
        training = len(inputs) > 1 and inputs[1] is not None and bool(np.asarray(inputs[1]))
        ratio = float(np.asarray(inputs[0])) if inputs and inputs[0] is not None \
            else float(attrs.get("ratio", 0.5))
        if not training or ratio == 0:
            super().compute(x, *inputs, out=out)
            return
        seed = attrs.get("seed")
        rng = np.random.RandomState(0 if seed is None else int(seed))
        mask = rng.uniform(0.0, 1.0, x.shape) >= ratio
        y = out[0] if isinstance(out, tuple) else out
        np.multiply(x, mask, out=y)
        np.multiply(y, np.asarray(1.0 / (1.0 - ratio), dtype=y.dtype), out=y)
        if isinstance(out, tuple) and len(out) > 1:
            np.copyto(out[1], mask)

    op_type = "Dropout"
    plugin_version = "10"
    min_opset = 10
    attributes: ClassVar[dict[str, Any]] = {"ratio": 0.5, "seed": None}

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], DataType.BOOL]
