"""Generators: ConstantOfShape, Range, EyeLike.

ConstantOfShape and Range read input values: a shape or bounds known when the engine is
built give exact output shapes (and, for integers, build-time values); run-time ones make the
node data-dependent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimExpr, DimsExprs, IntLike
from ..plugin.shapes import Shapes, Values, filled_values
from ._schema import Op, ValueOp

__all__ = ["ConstantOfShape", "Range_11", "Range", "EyeLike"]


class ConstantOfShape(ValueOp):
    """A tensor of the shape given by input 0's values, filled with ``value`` (default 0.0f).

    The output type is the type of the one-element ``value`` tensor attribute (in
    ``self.fill``, a 0-D NumPy array).
    """

    float_values = True  # exact on whole numbers

    value_inputs = (0,)

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

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        shape = self.values(inputs, 0)
        if self.runtime(shape is None):
            n = inputs[0][0] if len(inputs[0]) else DimExpr.const(1)
            if not n.is_constant():
                raise PluginInterfaceError("ConstantOfShape: the rank must be static")
            return [list(self.unknown_dims(n.get_constant_value()))]
        assert shape is not None
        return [list(shape)]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.from_numpy(self.fill.dtype)]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return filled_values(inputs[0].values, self.fill)


def range_length(start: IntLike, limit: IntLike, delta: IntLike) -> DimExpr:
    """max(ceil((limit - start) / delta), 0) over dimension expressions (delta constant)."""
    d = DimExpr.wrap(delta)
    if not d.is_constant() or d.get_constant_value() == 0:
        raise PluginInterfaceError("Range: delta must be a non-zero build-time constant")
    dv = d.get_constant_value()
    span = DimExpr.wrap(limit) - start if dv > 0 else DimExpr.wrap(start) - limit
    n = span.ceil_div(abs(dv))
    return DimExpr.const(max(n.get_constant_value(), 0)) if n.is_constant() else n.max(0)


class RangeBase(ValueOp):
    """start + i * delta for i < max(ceil((limit - start) / delta), 0). Float inputs (whose
    values the engine does not carry) or run-time ones make the node data-dependent."""

    float_values = True  # exact on whole numbers

    value_inputs = (0, 1, 2)

    def length(self, inputs: Sequence[DimsExprs | None]) -> DimExpr | None:
        """The output length when the bounds are known at build time, else None."""
        vals = [self.values(inputs, i) for i in range(3)]
        if any(v is None or len(v) != 1 for v in vals):
            return None
        delta = vals[2][0]  # type: ignore[index]
        if not delta.is_constant() or delta.get_constant_value() == 0:
            return None
        return range_length(vals[0][0], vals[1][0], delta)  # type: ignore[index]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        n = self.length(inputs)
        if self.runtime(n is None):
            n = self.dynamic_dim("length")
        assert n is not None
        return [[n]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        n = self.length(inputs)
        if n is None or not n.is_constant():
            return None
        start, delta = inputs[0].values, inputs[2].values
        assert start is not None and delta is not None
        return [[start[0] + i * delta[0] for i in range(n.get_constant_value())]]


class Range_11(RangeBase):  # noqa: N801
    """Range of opsets 11-26."""

    plugin_version = "11"
    max_opset = 26


class Range(RangeBase):
    """Range from opset 27: ``stash_type`` is the precision float16/bfloat16 ranges are
    computed in (float by default)."""

    plugin_version = "27"
    min_opset = 27


class EyeLike(Op):
    """A 2-D tensor shaped as the input with ones on diagonal ``k``; type ``dtype`` (default:
    the input's)."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        if len(inputs[0]) != 2:
            raise PluginInterfaceError(f"EyeLike: input must be 2-D, it has rank "
                                       f"{len(inputs[0])}")
        return [list(inputs[0])]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        dtype = self.attrs["dtype"]
        return [input_types[0] if dtype is None else DataType(dtype)]
