"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (with its log_prob output).

input (N, C, d1, ...), target (N, d1, ...): loss[n, d] = -input[n, target[n, d], d] *
w[n, d], where w = weight[target] (1 without weight) and 0 where target == ignore_index;
reduction ``none`` keeps the target's shape, ``sum`` adds, ``mean`` divides by sum(w).
The scores, weights and outputs are floats, the target int32 or int64.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs, IntLike, PluginTensorDesc
from ..plugin.shapes import Shapes
from ._schema import FLOATS, Op

__all__ = ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"]

REDUCTIONS = ("none", "sum", "mean")
#: the types of the target (input 1)
TARGET_TYPES = (DataType.INT32, DataType.INT64)


class LossBase(Op):
    """What both losses share: ``reduction`` (checked; a str in ``self.reduction``), the
    types, the loss's shape."""

    def setup(self) -> None:
        red = self.attrs["reduction"]
        red = red.decode() if isinstance(red, bytes) else str(red)
        if red not in REDUCTIONS:
            raise PluginInterfaceError(
                f"{self.op_type}: reduction {red!r} is not one of {REDUCTIONS}")
        self.reduction = red

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        if not super().supports_format_combination(pos, in_out, num_inputs):
            return False
        return in_out[pos].dtype in (TARGET_TYPES if pos == 1 else FLOATS)

    def loss_shape(self, inputs: Sequence[DimsExprs]) -> list[IntLike]:
        """The loss's shape: the target's without reduction, else a scalar."""
        if len(inputs[0]) < 2:
            raise PluginInterfaceError(f"{self.op_type}: input must have rank >= 2")
        return list(inputs[1]) if self.reduction == "none" else []

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0]] * self.num_outputs


class NegativeLogLikelihoodLoss(LossBase):
    """The loss from log-probabilities (input 0)."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [self.loss_shape(inputs)]


class SoftmaxCrossEntropyLoss(LossBase):
    """Cross entropy of softmax(scores) along axis 1; output 1 is the log-softmax."""

    n_outputs = 2

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [self.loss_shape(inputs), list(inputs[0])]
