"""Activations: Relu, LeakyRelu, Sigmoid, Tanh, Clip, Softmax, LogSoftmax, Dropout (schemas in
:mod:`mini_infer_core.ops.activation`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.ops import activation as schema
from mini_infer_core.ops import schema_kernels
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._util import RELU_CHUNK, Scratch, copy_into, relu, zeros_like_chunk

__all__ = ["Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip_1", "Clip_11", "Softmax_1",
           "Softmax_13", "LogSoftmax_1", "LogSoftmax_13", "Dropout_1", "Dropout_10"]

Array = NDArray[Any]


class Relu(CpuPlugin, schema.Relu):
    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        relu(x, out)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """:func:`relu` of one chunk (contiguous, at most ``RELU_CHUNK`` elements) as its
        one ``maximum`` call, bound (silero-vad's Relu ~10 -> ~2 us). None otherwise."""
        x, out = inputs[0], outputs[0]
        if not isinstance(x, np.ndarray) or not isinstance(out, np.ndarray) or \
                not (x.flags.c_contiguous and out.flags.c_contiguous) or \
                x.dtype != out.dtype or x.dtype.kind != "f" or not 0 < x.size <= RELU_CHUNK \
                or x.shape != out.shape:
            return None
        return partial(np.maximum, x.reshape(-1), zeros_like_chunk(x.dtype, x.size),
                       out=out.reshape(-1))


class LeakyRelu(CpuPlugin, schema.LeakyRelu):
    def compute(self, x: Array, *, out: Array, alpha: float, **_: Any) -> None:
        # alpha <= 1: max(x, alpha*x); alpha > 1: min(x, alpha*x) -- no temporary needed
        np.multiply(x, alpha, out=out)
        if alpha <= 1.0:
            np.maximum(out, x, out=out)
        else:
            np.minimum(out, x, out=out)


class Sigmoid(CpuPlugin, schema.Sigmoid):
    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        # 1 / (1 + exp(-x)), in place; exp overflows to inf for x << 0: the right limit 0
        with np.errstate(over="ignore"):
            np.exp(np.negative(x, out=out), out=out)
        np.reciprocal(np.add(out, 1, out=out), out=out)


class Tanh(CpuPlugin, schema.Tanh):
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


class Clip_1(CpuPlugin, schema.Clip_1):  # noqa: N801
    def compute(self, x: Array, *, out: Array, min: float | None = None,  # noqa: A002
                max: float | None = None, **_: Any) -> None:  # noqa: A002
        _clip(x, min, max, out)


class Clip_11(CpuPlugin, schema.Clip_11):  # noqa: N801
    def compute(self, x: Array, lo: Array | None = None, hi: Array | None = None, *,
                out: Array) -> None:
        _clip(x, lo, hi, out)


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


class _Dropout(CpuPlugin, schema.DropoutBase):
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


class Dropout_1(_Dropout, schema.Dropout_1):  # noqa: N801
    pass


class Dropout_10(_Dropout, schema.Dropout_10):  # noqa: N801
    """With ``training_mode`` true and a ratio above 0, elements are dropped with a
    Mersenne-Twister stream seeded by ``seed`` (0 when absent, so runs are reproducible) and
    the rest scaled by 1 / (1 - ratio), as onnx's reference does."""

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
