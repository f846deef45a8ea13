"""Normalisation: BatchNormalization, InstanceNormalization and LRN.

Inference BatchNormalization is ``y = x * a + b`` per channel, then the fused Relu (a
``maximum`` against zeros): ``a`` and ``b`` are folded once per set of read-only weights
(the engine's constants). The three passes go channel chunk by chunk
(:data:`BN_CHUNK_BYTES`), so that the second and third read the chunk from the L2 cache.
NumPy copies rows shorter than its ufunc buffer (8192 elements) through that buffer to
broadcast ``a`` over them, about 3x slower than running on the rows in place; the kernel
lowers the buffer size while it runs on maps of 128 or more elements (smaller maps are
faster buffered). Schemas in :mod:`mini_infer_core.ops.normalization`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import normalization as schema
from mini_infer_core.plugin import BatchNormFusion
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._nn_util import acc_dtype
from ._util import Scratch, relu, zeros_like_chunk

__all__ = ["BatchNormalization", "InstanceNormalization", "LRN"]

Array = NDArray[Any]

#: output bytes per chunk of channels: the chunk stays in the L2 cache between the passes
BN_CHUNK_BYTES = 256 * 1024
#: maps of at least this many elements run with a ufunc buffer smaller than them
_UNBUFFERED_MAP = 128


class BatchNormalization(BatchNormFusion, CpuPlugin, schema.BatchNormalization):
    """Folded to y = x * a + b (a and b kept while the same read-only weights come back)."""

    def setup(self) -> None:
        self.scratch = Scratch()

    def compute(self, x: Array, scale: Array, bias: Array, mean: Array, var: Array, *,
                out: Any, epsilon: float, momentum: float, training_mode: int,
                __relu__: int = 0, **_: Any) -> None:
        if training_mode:
            outs = out if isinstance(out, tuple) else (out,)
            for o, v in zip(outs, self.train(x, scale, bias, mean, var), strict=False):
                np.copyto(o, v, casting="unsafe")
            return
        a, b = self._folded((scale, bias, mean, var), epsilon, out.dtype)
        per_channel = self.per_channel(x, scale)
        if per_channel and x.ndim > 1 and x.flags.c_contiguous and out.flags.c_contiguous:
            self._per_channel(x, a, b, out, bool(__relu__))
            return
        # spatial=0 (parameters per activation), or strided arrays
        pshape = (-1,) + (1,) * (x.ndim - 2) if per_channel else x.shape[1:]
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


class InstanceNormalization(CpuPlugin, schema.InstanceNormalization):
    def compute(self, x: Array, scale: Array, bias: Array, *, out: Array, epsilon: float,
                **_: Any) -> None:
        dt = acc_dtype(x.dtype)
        n, c = x.shape[:2]
        xm = x.reshape(n, c, -1).astype(dt, copy=False)
        mean = xm.mean(axis=2, keepdims=True)
        # the centred values go straight into the output where it can hold them (float32/64
        # models: no temporaries, three passes fewer over a wav2vec2 GroupNorm's 6.5 MB)
        direct = out.dtype == dt and out.flags.c_contiguous
        d = out.reshape(xm.shape) if direct else np.empty(xm.shape, dt)
        np.subtract(xm, mean, out=d)
        var = np.vecdot(d, d)[..., None] / dt.type(max(xm.shape[2], 1))
        d *= (scale.astype(dt, copy=False).reshape(1, c, 1) / np.sqrt(var + dt.type(epsilon)))
        d += bias.astype(dt, copy=False).reshape(1, c, 1)
        if not direct:
            np.copyto(out, d.reshape(x.shape), casting="unsafe")


class LRN(CpuPlugin, schema.LRN):
    """The squares go once into a zero-bordered channel buffer (kept per shape) and ``size``
    shifted slices of it are added -- vectorised, exact (no cumulative-sum cancellation)."""

    def setup(self) -> None:
        super().setup()
        self.scratch = Scratch()

    def compute(self, x: Array, *, out: Array, alpha: float, beta: float, bias: float,
                size: int) -> None:
        c = x.shape[1]
        lo = self.lead
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
