"""Activations: Relu, LeakyRelu, Sigmoid, Tanh, Clip (schemas in
:mod:`mini_infer_core.ops.activation`; Softmax and Dropout: :mod:`.softmax`, :mod:`.dropout`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.ops import activation as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._util import RELU_CHUNK, relu, zeros_like_chunk

__all__ = ["Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip_1", "Clip_11"]

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
