"""Generators: ConstantOfShape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs
from ..plugin.shapes import Shapes, Values, filled_values
from ._schema import ValueOp
from .shape import value_count

__all__ = ["ConstantOfShape"]


class ConstantOfShape(ValueOp):
    """A tensor of the shape given by input 0's values, filled with ``value`` (default 0.0f).

    The output type is the type of the one-element ``value`` tensor attribute (``fill``). A
    shape known when the engine is built gives an exact output shape; a run-time one makes the
    node data-dependent.
    """

    value_inputs = (0,)

    def setup(self) -> None:
        value = self.attrs["value"]
        fill = np.zeros((), np.float32) if value is None else np.asarray(value)
        if fill.size != 1:
            raise PluginInterfaceError(
                f"ConstantOfShape: 'value' must hold one element, it has {fill.size}")
        self.fill: np.ndarray[Any, Any] = fill.reshape(())

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        shape = self.values(inputs, 0)
        if self.runtime(shape is None):
            return [self.unknown_dims(value_count(inputs[0], "ConstantOfShape", "the rank"))]
        assert shape is not None
        return [list(shape)]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.from_numpy(self.fill.dtype)]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return filled_values(inputs[0].values, self.fill)
