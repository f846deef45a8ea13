"""cpu_basic's LRN and BatchNormalization with their float32 cases compiled: one pass per
channel (the build folds most BatchNormalizations into the convolution before them, so most
engines never import this module; see :mod:`.conv`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import normalization as _norm

from mini_infer_core.plugin.arrays import NDArray

from ._native import lrn, run_calls, scale_shift, usable
from .blocked import BlockedAffine

__all__ = ["LRN", "BatchNormalization"]

Array = NDArray[Any]


class LRN(_norm.LRN):
    """float32: one compiled pass per channel (its window's squares summed afresh, the power
    by square roots for beta 0.75 and 0.5); float64 is cpu_basic's."""

    def compute(self, x: Array, *, out: Array, alpha: float, beta: float, bias: float,
                size: int) -> None:
        if x.ndim < 2 or not usable(x, out):
            super().compute(x, out=out, alpha=alpha, beta=beta, bias=bias, size=size)
            return
        acc = self.scratch.buffer("native", (max(1, x.size // max(x.shape[0] * x.shape[1], 1)),),
                                  np.float32)
        lrn(x, out, acc, int(size), float(alpha), float(beta), float(bias))


class BatchNormalization(BlockedAffine, _norm.BatchNormalization):
    """Inference, float32, contiguous, per channel: ``x * a + b`` and the fused Relu in one
    compiled pass (cpu_basic: two or three NumPy passes), or blocked where the builder chose
    the blocked format (:class:`.blocked.BlockedAffine`); the rest is cpu_basic's."""

    def compute(self, x: Array, scale: Array, bias: Array, mean: Array, var: Array, *,
                out: Any, epsilon: float, training_mode: int = 0, __relu__: int = 0,
                **kw: Any) -> None:
        if self._block() and not training_mode:
            key = (x, out, scale, bias, mean, var)
            kept = self._calls
            if kept is not None and all(p is q for p, q in zip(kept[0], key, strict=True)):
                run_calls(kept[1])  # the same arrays (and read-only weights): the same call
                return
            a, b = self._folded((scale, bias, mean, var), epsilon, np.float32)
            calls = self._affine_calls(x, a, b, out, bool(__relu__))
            if calls is not None:
                if any(w.flags.writeable for w in key[2:]):  # weights computed: fold again
                    run_calls(calls)
                else:
                    self._run_blocked(key, calls)
                return
        super().compute(x, scale, bias, mean, var, out=out, epsilon=epsilon,
                        training_mode=training_mode, __relu__=__relu__, **kw)

    @staticmethod
    def _per_channel(x: Array, a: Array, b: Array, out: Array, relu: bool) -> None:
        if not usable(x, a, b, out) or x.ndim < 2:
            _norm.BatchNormalization._per_channel(x, a, b, out, relu)
            return
        scale_shift(x, out, a, b, 0.0 if relu else -np.inf, np.inf)


# errors about serialized data name this distribution (the layout is cpu_basic's)
for _cls in (LRN, BatchNormalization):
    _cls.package = "mini-infer-cpu-native"
