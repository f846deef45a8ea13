"""Normalisation: BatchNormalization and LRN.

BatchNormalization (inference) folds its four parameter vectors into a per-channel scale and
shift in the accumulation type (float32 for float16) -- a few tiny ops -- and applies them in
one ``channel_affine`` RawKernel launch on the GPU, with a fused Relu where the builder fused
one (``BatchNormFusion``, which also folds a following per-channel Mul/Add into scale and
bias). LRN is one ``lrn`` RawKernel launch; on NumPy both run as broadcast ufuncs. Schemas
in :mod:`mini_infer_core.ops.normalization`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import normalization as schema
from mini_infer_core.plugin import BatchNormFusion

from ..serialization import CudaPlugin
from . import _raw
from ._common import Scratch, acc_dtype, array_module

__all__ = ["BatchNormalization", "LRN"]



class BatchNormalization(BatchNormFusion, CudaPlugin, schema.BatchNormalization):
    """Inference: the parameters folded into a per-channel scale and shift in the accumulation
    type, applied by one ``channel_affine`` launch. Training mode allocates temporaries."""

    def setup(self) -> None:
        self.scratch = Scratch()

    @property
    def graph_safe(self) -> bool:
        """The training-mode statistics allocate temporaries."""
        return not self.attrs["training_mode"]

    def compute(self, x: Any, scale: Any, bias: Any, mean: Any, var: Any, *, out: Any,
                epsilon: float, momentum: float, training_mode: int, __relu__: int = 0,
                **_: Any) -> None:
        xp = array_module(x, out)
        if training_mode:
            outs = out if isinstance(out, tuple) else (out,)
            for o, v in zip(outs, self.train(x, scale, bias, mean, var), strict=False):
                xp.copyto(o, v, casting="same_kind")
            return
        acc = acc_dtype(x.dtype)
        a = self.scratch.buffer(xp, "scale", scale.shape, acc)
        b = self.scratch.buffer(xp, "shift", scale.shape, acc)
        xp.copyto(a, var)
        xp.add(a, epsilon, out=a)
        xp.sqrt(a, out=a)
        xp.divide(scale, a, out=a)
        xp.multiply(mean, a, out=b)
        xp.subtract(bias, b, out=b)
        channels = x.shape[1] if x.ndim > 1 else 1
        per_channel = self.per_channel(x, scale)
        inner = int(np.prod(x.shape[2:], dtype=np.int64)) if per_channel else 1
        groups = channels if per_channel else scale.size
        if xp is not np and out.flags.c_contiguous:
            _raw.launch("epilogue", "channel_affine", x.dtype, x.size, (
                xp.ascontiguousarray(x), out, a, b, np.int64(inner), np.int32(groups),
                np.int32(_raw.ACT_RELU if __relu__ else _raw.ACT_NONE), np.int64(x.size)))
            return
        pshape = (groups, inner)
        x3 = x.reshape(-1, *pshape)
        if acc == x.dtype:
            o3 = out.reshape(x3.shape)
            xp.multiply(x3, a.reshape(pshape[0], 1), out=o3)
            xp.add(o3, b.reshape(pshape[0], 1), out=o3)
        else:
            tmp = self.scratch.buffer(xp, "acc", x3.shape, acc)
            xp.multiply(x3, a.reshape(pshape[0], 1), out=tmp)
            xp.add(tmp, b.reshape(pshape[0], 1), out=tmp)
            xp.copyto(out, tmp.reshape(out.shape), casting="same_kind")
        if __relu__:
            xp.maximum(out, 0, out=out)


class LRN(CudaPlugin, schema.LRN):
    def setup(self) -> None:
        super().setup()
        self.scratch = Scratch()

    def compute(self, x: Any, *, out: Any, alpha: float, beta: float, bias: float,
                size: int) -> None:
        xp = array_module(x, out)
        c = x.shape[1]
        inner = int(np.prod(x.shape[2:], dtype=np.int64))
        acc = acc_dtype(x.dtype)
        if xp is not np:
            scalar = acc.type
            dst = out if out.flags.c_contiguous else \
                self.scratch.buffer(xp, "dst", out.shape, out.dtype)
            _raw.launch("lrn", "lrn", x.dtype, x.size, (
                xp.ascontiguousarray(x), dst, np.int32(c), np.int64(inner), np.int32(size),
                scalar(alpha / size), scalar(beta), scalar(bias), np.int64(x.size)))
            if dst is not out:
                xp.copyto(out, dst)
            return
        lo = self.lead
        # squares in a zero-bordered channel buffer; the window sum adds `size` shifts of it
        sq = self.scratch.buffer(xp, "sq", (x.shape[0], c + size - 1, inner), acc, fill=0)
        x3 = x.reshape(x.shape[0], c, inner).astype(acc)
        np.square(x3, out=sq[:, lo:lo + c])
        total = sq[:, 0:c].copy()
        for t in range(1, size):
            total += sq[:, t:t + c]
        np.copyto(out, (x3 / (bias + (alpha / size) * total) ** beta).reshape(out.shape),
                  casting="same_kind")
