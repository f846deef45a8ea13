"""Generators: ConstantOfShape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, DimsExprs

from ..serialization import CpuPlugin
from ._util import IntLike, shape_values

__all__ = ["ConstantOfShape"]


class ConstantOfShape(CpuPlugin):
    """A tensor of the shape given by input 0's values, filled with ``value`` (default 0.0f).

    The output type is the type of the one-element ``value`` tensor attribute.
    """

    min_opset = 9
    shape_inputs = (0,)
    attributes: ClassVar[dict[str, Any]] = {"value": None}

    def setup(self) -> None:
        value = self.attrs["value"]
        if value is None:
            self.fill: np.ndarray[Any, Any] = np.zeros((), np.float32)
        else:
            arr = np.asarray(value)
            if arr.size != 1:
                raise PluginInterfaceError(
                    f"ConstantOfShape: 'value' must hold one element, it has {arr.size}")
            self.fill = arr.reshape(())

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        return [list(shape_values(inputs, 0, "ConstantOfShape", "shape"))]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.from_numpy(self.fill.dtype)]

    def compute(self, shape: NDArray[Any], *, out: NDArray[Any], **_: Any) -> None:
        np.copyto(out, self.fill)
