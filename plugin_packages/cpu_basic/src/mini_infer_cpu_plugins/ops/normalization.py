"""Normalisation: BatchNormalization, InstanceNormalization and LRN.

Inference BatchNormalization is ``y = x * a + b`` per channel, then the fused Relu (a
``maximum`` against zeros): ``a`` and ``b`` are folded once per set of read-only weights
(the engine's constants). The three passes go channel chunk by chunk
(:data:`BN_CHUNK_BYTES`), so that the second and third read the chunk from the L2 cache.
NumPy copies rows shorter than its ufunc buffer (8192 elements) through that buffer to
broadcast ``a`` over them, about 3x slower than running on the rows in place; the kernel
lowers the buffer size while it runs on maps of 128 or more elements (smaller maps are
faster buffered).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import (
    REQUIRED,
    BatchNormFusion,
    DataType,
    DimsExprs,
    IntLike,
    UnaryPlugin,
)

from ..serialization import CpuPlugin
from ._nn_util import NN_FLOATS, acc_dtype
from ._util import FLOATS, Scratch, relu, zeros_like_chunk

__all__ = ["BatchNormalization", "InstanceNormalization", "LRN"]

Array = NDArray[Any]

#: output bytes per chunk of channels: the chunk stays in the L2 cache between the passes
BN_CHUNK_BYTES = 256 * 1024
#: maps of at least this many elements run with a ufunc buffer smaller than them
_UNBUFFERED_MAP = 128
class BatchNormalization(BatchNormFusion, CpuPlugin, UnaryPlugin):
    """y = (x - mean) / sqrt(var + epsilon) * scale + B, folded to y = x * a + b.

    Legacy attributes (``spatial``, ``is_test``, ``consumed_inputs``, ``momentum``) are
    accepted; ``spatial=0`` takes per-activation parameters shaped as ``x.shape[1:]``.
    ``training_mode=1`` (opset 14+) normalises with the batch statistics and also outputs
    running_mean and running_var (input_mean * momentum + batch_mean * (1 - momentum)).
    """

    dtypes = NN_FLOATS
    attributes: ClassVar[dict[str, Any]] = {
        "epsilon": 1e-5, "momentum": 0.9, "spatial": 1, "is_test": 0, "consumed_inputs": None,
        "training_mode": 0, "__relu__": 0}

    def setup(self) -> None:
        self.scratch = Scratch()

    @property
    def num_outputs(self) -> int:
        return 3 if self.attrs["training_mode"] else 1

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        x: list[IntLike] = list(inputs[0])
        if not self.attrs["training_mode"]:
            return [x]
        return [x, list(inputs[3]), list(inputs[4])]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], input_types[3], input_types[4]][:self.num_outputs]

    def compute(self, x: Array, scale: Array, bias: Array, mean: Array, var: Array, *,
                out: Any, epsilon: float, momentum: float, training_mode: int,
                __relu__: int = 0, **_: Any) -> None:
        if training_mode:
            self._train(x, scale, bias, mean, var, out, epsilon, momentum)
            return
        c = x.shape[1] if x.ndim > 1 else 1
        a, b = self._folded((scale, bias, mean, var), epsilon, out.dtype)
        if scale.size == c and x.ndim > 1 and x.flags.c_contiguous and out.flags.c_contiguous:
            self._per_channel(x, a, b, out, bool(__relu__))
            return
        # spatial=0 (parameters per activation), or strided arrays
        pshape = x.shape[1:] if scale.size != c else (c,) + (1,) * (x.ndim - 2)
        np.multiply(x, a.reshape(pshape), out=out)
        np.add(out, b.reshape(pshape), out=out)
        if __relu__:
            relu(out, out)

    def _folded(self, weights: tuple[Array, ...], epsilon: float, dtype: Any
                ) -> tuple[Array, Array]:
        """a = scale / sqrt(var + epsilon), b = bias - mean * a; kept while the same
        read-only weights come back."""
        key = (epsilon, np.dtype(dtype).str)
        hit = self.scratch.get("folded")
        if hit is not None and hit[1] == key and all(
                w is v for w, v in zip(hit[0], weights, strict=True)):
            return hit[2]  # type: ignore[no-any-return]
        scale, bias, mean, var = weights
        a, b = np.empty(scale.shape, dtype), np.empty(scale.shape, dtype)
        np.add(var, epsilon, out=a)
        np.sqrt(a, out=a)
        np.divide(scale, a, out=a)
        np.multiply(mean, a, out=b)
        np.subtract(bias, b, out=b)
        folded = (a, b)
        if not any(w.flags.writeable for w in weights):
            self.scratch.put("folded", (weights, key, folded))
        return folded

    @staticmethod
    def _per_channel(x: Array, a: Array, b: Array, out: Array, relu: bool) -> None:
        """``out = x * a + b`` (then ``max(out, 0)``), chunk by chunk of channels."""
        n, c = x.shape[:2]
        hw = x.size // max(1, n * c)
        x3, y3 = x.reshape(n, c, hw), out.reshape(n, c, hw)
        a2, b2 = a.reshape(c, 1), b.reshape(c, 1)
        step = min(c, max(1, BN_CHUNK_BYTES // max(1, hw * out.itemsize)))
        zeros = zeros_like_chunk(out.dtype, step * hw).reshape(step, hw) if relu else None
        old = np.setbufsize(256) if hw >= _UNBUFFERED_MAP else None
        try:
            for i in range(n):
                for c0 in range(0, c, step):
                    y = y3[i, c0:c0 + step]
                    np.multiply(x3[i, c0:c0 + step], a2[c0:c0 + step], out=y)
                    np.add(y, b2[c0:c0 + step], out=y)
                    if zeros is not None:
                        np.maximum(y, zeros[:len(y)], out=y)
        finally:
            if old is not None:
                np.setbufsize(old)

    @staticmethod
    def _train(x: Array, scale: Array, bias: Array, mean: Array, var: Array, out: Any,
               epsilon: float, momentum: float) -> None:
        dt = acc_dtype(x.dtype)
        axes = (0, *range(2, x.ndim))
        xa = x.astype(dt)
        bm = xa.mean(axis=axes)
        bv = xa.var(axis=axes)
        pshape = (-1,) + (1,) * (x.ndim - 2)
        y = (xa - bm.reshape(pshape)) / np.sqrt(bv.reshape(pshape) + dt.type(epsilon))
        y = y * scale.astype(dt).reshape(pshape) + bias.astype(dt).reshape(pshape)
        outs = out if isinstance(out, tuple) else (out,)
        np.copyto(outs[0], y, casting="unsafe")
        if len(outs) > 1:
            np.copyto(outs[1], mean.astype(dt) * momentum + bm * (1 - momentum),
                      casting="unsafe")
            np.copyto(outs[2], var.astype(dt) * momentum + bv * (1 - momentum),
                      casting="unsafe")


class InstanceNormalization(CpuPlugin, UnaryPlugin):
    """y = scale * (x - mean) / sqrt(var + epsilon) + B, statistics per (n, c) over the
    spatial axes."""

    dtypes = NN_FLOATS
    attributes: ClassVar[dict[str, Any]] = {"epsilon": 1e-5, "consumed_inputs": None}

    def compute(self, x: Array, scale: Array, bias: Array, *, out: Array, epsilon: float,
                **_: Any) -> None:
        dt = acc_dtype(x.dtype)
        n, c = x.shape[:2]
        xm = x.reshape(n, c, -1).astype(dt)
        mean = xm.mean(axis=2, keepdims=True)
        d = xm - mean
        var = np.mean(d * d, axis=2, keepdims=True)
        d *= (scale.astype(dt).reshape(1, c, 1) / np.sqrt(var + dt.type(epsilon)))
        d += bias.astype(dt).reshape(1, c, 1)
        np.copyto(out, d.reshape(x.shape), casting="unsafe")


class LRN(CpuPlugin, UnaryPlugin):
    """Local response normalisation across channels (ONNX formula).

    square_sum[c] sums x^2 over channels [c - floor((size-1)/2), c + ceil((size-1)/2)]: the
    squares go once into a zero-bordered channel buffer (kept per shape) and ``size``
    shifted slices of it are added -- vectorised, exact (no cumulative-sum cancellation).
    """

    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {
        "alpha": 1e-4, "beta": 0.75, "bias": 1.0, "size": REQUIRED}

    def setup(self) -> None:
        if self.attrs["size"] < 1:
            raise PluginInterfaceError(f"LRN: size must be >= 1, got {self.attrs['size']}")
        self.scratch = Scratch()

    def compute(self, x: Array, *, out: Array, alpha: float, beta: float, bias: float,
                size: int) -> None:
        c = x.shape[1]
        lo = (size - 1) // 2
        sq = self.scratch.buffer(
            "sq", (x.shape[0], c + size - 1, *x.shape[2:]), x.dtype, fill=0)
        np.square(x, out=sq[:, lo:lo + c])
        np.copyto(out, sq[:, 0:c])
        for t in range(1, size):
            np.add(out, sq[:, t:t + c], out=out)
        np.multiply(out, alpha / size, out=out)
        np.add(out, bias, out=out)
        np.power(out, beta, out=out)
        np.divide(x, out, out=out)
