"""Normalisation: BatchNormalization (inference) and LRN."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, UnaryPlugin

from ..serialization import CpuPlugin
from ._util import FLOATS, Scratch

__all__ = ["BatchNormalization", "LRN"]

Array = NDArray[Any]


class BatchNormalization(CpuPlugin, UnaryPlugin):
    """y = (x - mean) / sqrt(var + epsilon) * scale + B, folded to y = x * a + b.

    Legacy attributes (``spatial``, ``is_test``, ``consumed_inputs``, ``momentum``) are
    accepted; ``spatial=0`` takes per-activation parameters shaped as ``x.shape[1:]``.
    Training mode (``training_mode=1``) is not supported: it is an inference kernel.
    """

    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {
        "epsilon": 1e-5, "momentum": 0.9, "spatial": 1, "is_test": 0, "consumed_inputs": None,
        "training_mode": 0}

    def setup(self) -> None:
        if self.attrs["training_mode"]:
            raise PluginInterfaceError(
                "BatchNormalization: training_mode=1 is not supported (inference only)")
        self.scratch = Scratch()

    def compute(self, x: Array, scale: Array, bias: Array, mean: Array, var: Array, *,
                out: Array, epsilon: float, **_: Any) -> None:
        c = x.shape[1] if x.ndim > 1 else 1
        if scale.size == c:
            pshape: tuple[int, ...] = (c,) + (1,) * (x.ndim - 2)
        else:
            pshape = x.shape[1:]
        a = self.scratch.buffer("a", scale.shape, out.dtype)
        b = self.scratch.buffer("b", scale.shape, out.dtype)
        np.add(var, epsilon, out=a)
        np.sqrt(a, out=a)
        np.divide(scale, a, out=a)
        np.multiply(mean, a, out=b)
        np.subtract(bias, b, out=b)
        np.multiply(x, a.reshape(pshape), out=out)
        np.add(out, b.reshape(pshape), out=out)


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
