"""Optimizer steps of the ``ai.onnx.preview.training`` domain: Adagrad, Adam, Momentum.

Each takes the learning rate R and the update count T (scalars), then n tensors to optimize
followed by their gradients and their state tensors (one kind of state for Adagrad and
Momentum, two for Adam); it returns the n new tensors followed by their new states. n comes
from the input count; the output count from the node (``__num_outputs__``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs
from ..plugin.shapes import Shapes
from ._schema import Op

__all__ = ["Adagrad", "Adam", "Momentum"]

TRAINING = "ai.onnx.preview.training"


class OptimizerBase(Op):
    """``R, T, X_1..n, G_1..n, <state>_1..n ...`` -> ``X_new_1..n, <state>_new_1..n ...``."""

    domain = TRAINING
    hidden_fields = ("__num_outputs__",)
    #: state tensors per optimized tensor (besides X and its gradient)
    states: ClassVar[int] = 1

    @property
    def num_outputs(self) -> int:
        return int(self.hidden.get("__num_outputs__", 1 + self.states))

    def count(self, n_inputs: int) -> int:
        """n, the number of optimized tensors, from the number of inputs."""
        per = 2 + self.states
        n, rest = divmod(n_inputs - 2, per)
        if n < 1 or rest:
            raise PluginInterfaceError(
                f"{self.op_type}: {n_inputs} inputs is not R, T and {per} tensors per "
                "optimized tensor")
        if self.num_outputs != n * (1 + self.states):
            raise PluginInterfaceError(
                f"{self.op_type}: {n} optimized tensor(s) give {n * (1 + self.states)} "
                f"outputs, the node has {self.num_outputs}")
        return n

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        n = self.count(len(inputs))
        picks = list(range(n)) + [2 * n + j for j in range(n * self.states)]
        shapes = []
        for i in picks:
            d = inputs[2 + i]
            if d is None:
                raise PluginInterfaceError(f"{self.op_type}: input {2 + i} is missing")
            shapes.append(list(d))
        return shapes

    def output_types(self, input_types: Sequence[DataType | None]) -> list[DataType]:
        n = self.count(len(input_types))
        picks = list(range(n)) + [2 * n + j for j in range(n * self.states)]
        return [input_types[2 + i] or DataType.FLOAT for i in picks]


class Adagrad(OptimizerBase):
    """State: the accumulated squared gradient H."""


class Adam(OptimizerBase):
    """States: the averaged gradient V, then the averaged squared gradient H."""

    states = 2


class Momentum(OptimizerBase):
    """State: the momentum V; ``mode`` "standard" or "nesterov"."""

    def setup(self) -> None:
        if self.attrs["mode"] not in ("standard", "nesterov"):
            raise PluginInterfaceError(
                f"Momentum: mode must be 'standard' or 'nesterov', not {self.attrs['mode']!r}")
