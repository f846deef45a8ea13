"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (with its log_prob output).

input (N, C, d1, ...), target (N, d1, ...): loss[n, d] = -input[n, target[n, d], d] *
w[n, d], where w = weight[target] (1 without weight) and 0 where target == ignore_index;
reduction ``none`` keeps the target's shape, ``sum`` adds, ``mean`` divides by sum(w).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, DimsExprs, IntLike

from ..serialization import CpuPlugin
from ._nn_util import NN_FLOATS, acc_dtype, put, to_str

__all__ = ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"]

Array = NDArray[Any]
_REDUCTIONS = ("none", "sum", "mean")


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


class _Loss(CpuPlugin):
    attributes: ClassVar[dict[str, Any]] = {"ignore_index": None, "reduction": "mean"}

    def setup(self) -> None:
        red = to_str(self.attrs["reduction"])
        if red not in _REDUCTIONS:
            raise PluginInterfaceError(
                f"{self.op_type}: reduction {red!r} is not one of {_REDUCTIONS}")
        self.reduction = red

    def supports_format_combination(self, pos: int, in_out: Sequence[Any],
                                    num_inputs: int) -> bool:
        dtype = in_out[pos].dtype
        if pos == 1:
            return dtype in (DataType.INT32, DataType.INT64)
        return dtype in NN_FLOATS

    def _loss_shape(self, inputs: Sequence[DimsExprs]) -> list[IntLike]:
        if len(inputs[0]) < 2:
            raise PluginInterfaceError(f"{self.op_type}: input must have rank >= 2")
        return list(inputs[1]) if self.reduction == "none" else []

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0]] * self.num_outputs


class NegativeLogLikelihoodLoss(_Loss):
    min_opset = 12

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        return [self._loss_shape(inputs)]

    def compute(self, x: Array, target: Array, weight: Array | None = None, *, out: Array,
                ignore_index: int | None, **_: Any) -> None:
        dt = acc_dtype(x.dtype)
        loss = _nll(x.astype(dt), target, weight, ignore_index, self.reduction)
        np.copyto(out, loss, casting="unsafe")


class SoftmaxCrossEntropyLoss(_Loss):
    """Cross entropy of softmax(scores) along axis 1; output 2 is the log-softmax."""

    min_opset = 12
    n_outputs = 2

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        return [self._loss_shape(inputs), list(inputs[0])]

    def compute(self, x: Array, target: Array, weight: Array | None = None, *, out: Any,
                ignore_index: int | None, **_: Any) -> None:
        dt = acc_dtype(x.dtype)
        xa = x.astype(dt)
        logp = xa - xa.max(axis=1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
        put(out, 0, _nll(logp, target, weight, ignore_index, self.reduction))
        put(out, 1, logp)
