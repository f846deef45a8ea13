"""Gathering: Gather, GatherElements, GatherND, and OneHot.

Indices may be negative (counted from the end of the axis). Gather also gathers build-time
values (``Shape -> Gather`` picks a dimension while the engine is built).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimExpr, DimsExprs
from ..plugin.shapes import Shapes, Values, gather_dims, gather_values, norm_axis
from ._schema import Op, ValueOp

__all__ = ["Gather", "GatherElements", "GatherND", "OneHot"]


class Gather(Op):
    """``take`` along ``axis``: out = data.shape[:axis] + indices.shape + data.shape[axis+1:]."""

    float_values = True  # exact on whole numbers

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [gather_dims(inputs[0], inputs[1], self.attrs["axis"])]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return gather_values(inputs[0], inputs[1], self.attrs["axis"])


class GatherElements(Op):
    """``take_along_axis``: the output has the indices' shape."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        norm_axis(self.attrs["axis"], len(inputs[0]), "GatherElements axis")
        return [list(inputs[1])]


class GatherND(Op):
    """GatherND; ``batch_dims`` from opset 12."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        data, idx = list(inputs[0]), list(inputs[1])
        k = idx[-1]
        if not k.is_constant():
            raise PluginInterfaceError("GatherND: the last dimension of indices must be static")
        b = self.attrs["batch_dims"]
        return [idx[:-1] + data[b + k.get_constant_value():]]


class OneHot(ValueOp):
    """A ``depth``-long axis inserted at ``axis``: values[1] where the index is, values[0]
    elsewhere (negative indices count from depth; out-of-range ones give all values[0]).

    The output has the type of ``values``. A depth computed at run time (or a float one, whose
    value the engine does not carry) makes the node data-dependent."""

    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        a = norm_axis(self.attrs["axis"], len(dims) + 1, "OneHot axis")
        depth = self.ints(inputs, 1)
        self.runtime(depth is None)
        d = self.dynamic_dim("depth") if depth is None else DimExpr.const(depth[0])
        return [dims[:a] + [d] + dims[a:]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[2]]
