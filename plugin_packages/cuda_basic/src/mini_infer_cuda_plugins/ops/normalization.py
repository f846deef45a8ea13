"""Normalisation: BatchNormalization and LRN.

BatchNormalization (inference) folds its four parameter vectors into a per-channel scale and
shift in the accumulation type (float32 for float16) -- a few tiny ops -- and applies them in
one ``channel_affine`` RawKernel launch on the GPU, with a fused Relu where the builder fused
one (``BatchNormFusion``, which also folds a following per-channel Mul/Add into scale and
bias). LRN is one ``lrn`` RawKernel launch; on NumPy both run as broadcast ufuncs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, BatchNormFusion, DataType, DimsExprs, UnaryPlugin
from mini_infer_core.plugin.shapes import Shapes

from ..serialization import CudaPlugin
from . import _raw
from ._common import FLOATS, Scratch, acc_dtype, array_module

__all__ = ["BatchNormalization", "LRN"]



class BatchNormalization(BatchNormFusion, CudaPlugin, UnaryPlugin):
    """y = (x - mean) / sqrt(var + epsilon) * scale + B.

    Legacy attributes (``spatial``, ``is_test``, ``consumed_inputs``, ``momentum``) are
    accepted; ``spatial=0`` takes parameters shaped as ``x.shape[1:]``. ``training_mode=1``
    (opset 14+) normalises with the batch statistics and also outputs the running mean and
    variance (``input * momentum + batch * (1 - momentum)``); that path allocates
    temporaries.
    """

    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {
        "epsilon": 1e-5, "momentum": 0.9, "spatial": 1, "is_test": 0, "consumed_inputs": None,
        "training_mode": 0, "__relu__": 0}

    def setup(self) -> None:
        self.scratch = Scratch()

    @property
    def num_outputs(self) -> int:
        return 3 if self.attrs["training_mode"] else 1

    @property
    def graph_safe(self) -> bool:
        """The training-mode statistics allocate temporaries."""
        return not self.attrs["training_mode"]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x = list(inputs[0])
        if not self.attrs["training_mode"]:
            return [x]
        return [x, list(inputs[3]), list(inputs[4])]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0]] * self.num_outputs

    def compute(self, x: Any, scale: Any, bias: Any, mean: Any, var: Any, *, out: Any,
                epsilon: float, momentum: float, training_mode: int, __relu__: int = 0,
                **_: Any) -> None:
        xp = array_module(x, out)
        if training_mode:
            self._train(xp, x, scale, bias, mean, var, out, epsilon, momentum)
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
        per_channel = scale.size == channels
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

    @staticmethod
    def _train(xp: Any, x: Any, scale: Any, bias: Any, mean: Any, var: Any, out: Any,
               epsilon: float, momentum: float) -> None:
        dt = acc_dtype(x.dtype)
        axes = (0, *range(2, x.ndim))
        xa = x.astype(dt)
        bm = xa.mean(axis=axes)
        bv = xa.var(axis=axes)
        pshape = (-1,) + (1,) * (x.ndim - 2)
        y = (xa - bm.reshape(pshape)) / xp.sqrt(bv.reshape(pshape) + epsilon)
        y = y * scale.astype(dt).reshape(pshape) + bias.astype(dt).reshape(pshape)
        outs = out if isinstance(out, tuple) else (out,)
        xp.copyto(outs[0], y, casting="same_kind")
        if len(outs) > 1:
            xp.copyto(outs[1], mean.astype(dt) * momentum + bm * (1 - momentum),
                      casting="same_kind")
            xp.copyto(outs[2], var.astype(dt) * momentum + bv * (1 - momentum),
                      casting="same_kind")


class LRN(CudaPlugin, UnaryPlugin):
    """Local response normalisation across channels (ONNX):
    ``y = x / (bias + alpha / size * square_sum) ** beta`` with square_sum over channels
    ``[c - floor((size-1)/2), c + ceil((size-1)/2)]``."""

    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {
        "alpha": 1e-4, "beta": 0.75, "bias": 1.0, "size": REQUIRED}

    def setup(self) -> None:
        if self.attrs["size"] < 1:
            raise PluginInterfaceError(f"LRN: size must be >= 1, got {self.attrs['size']}")
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
        lo = (size - 1) // 2
        # squares in a zero-bordered channel buffer; the window sum adds `size` shifts of it
        sq = self.scratch.buffer(xp, "sq", (x.shape[0], c + size - 1, inner), acc, fill=0)
        x3 = x.reshape(x.shape[0], c, inner).astype(acc)
        np.square(x3, out=sq[:, lo:lo + c])
        total = sq[:, 0:c].copy()
        for t in range(1, size):
            total += sq[:, t:t + c]
        np.copyto(out, (x3 / (bias + (alpha / size) * total) ** beta).reshape(out.shape),
                  casting="same_kind")
