"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, computed in float32 (float64
for float64) and cast to the output type (schemas and the formula in
:mod:`mini_infer_core.ops.loss`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import loss as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._nn_util import acc_dtype, put

__all__ = ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"]

Array = NDArray[Any]


def _nll(logp: Array, target: Array, weight: Array | None, ignore_index: int | None,
         reduction: str) -> Array:
    """The loss from log-probabilities ``logp`` (N, C, ...) in the compute dtype."""
    n, c = logp.shape[:2]
    lp = logp.reshape(n, c, -1)
    t = target.reshape(n, -1).astype(np.int64)
    keep = np.ones(t.shape, bool) if ignore_index is None else t != ignore_index
    safe = np.clip(t, 0, c - 1)
    picked = np.take_along_axis(lp, safe[:, None, :], axis=1)[:, 0, :]
    w = np.ones(t.shape, lp.dtype) if weight is None else weight.astype(lp.dtype)[safe]
    w = np.where(keep, w, lp.dtype.type(0))
    loss = -picked * w
    if reduction == "none":
        return loss.reshape(target.shape)  # type: ignore[no-any-return]
    if reduction == "sum":
        return np.asarray(loss.sum())
    return np.asarray(loss.sum() / w.sum())


class NegativeLogLikelihoodLoss(CpuPlugin, schema.NegativeLogLikelihoodLoss):
    def compute(self, x: Array, target: Array, weight: Array | None = None, *, out: Array,
                ignore_index: int | None, **_: Any) -> None:
        dt = acc_dtype(x.dtype)
        loss = _nll(x.astype(dt), target, weight, ignore_index, self.reduction)
        np.copyto(out, loss, casting="unsafe")


class SoftmaxCrossEntropyLoss(CpuPlugin, schema.SoftmaxCrossEntropyLoss):
    def compute(self, x: Array, target: Array, weight: Array | None = None, *, out: Any,
                ignore_index: int | None, **_: Any) -> None:
        dt = acc_dtype(x.dtype)
        xa = x.astype(dt)
        logp = xa - xa.max(axis=1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
        put(out, 0, _nll(logp, target, weight, ignore_index, self.reduction))
        put(out, 1, logp)
