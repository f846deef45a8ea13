"""Shape, Size and Slice: the operators of shape computations, with build-time values.

``Shape`` gives its input's dimensions as values (``output_values``), ``Size`` their product,
and ``Slice`` slices known values, so ``Shape -> Slice -> Concat -> Reshape`` chains are known
when the engine is built, even with dynamic dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..plugin import DataType, DimsExprs, IntLike, shapes
from ..plugin.shapes import Shapes, Values
from ._schema import Op, ValueOp

__all__ = ["Shape", "Size", "Slice_1", "Slice"]

#: Slice's starts, ends, axes (None: the first ones) and steps (None: 1)
SliceParams = tuple[Sequence[IntLike], Sequence[IntLike], list[int] | None, list[int] | None]


class Shape(Op):
    """The input's shape as INT64; ``start``/``end`` (opset 15) take a part of it."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        s, e = shapes.shape_range(len(inputs[0]), self.attrs["start"], self.attrs["end"])
        return [[max(e - s, 0)]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        s, e = shapes.shape_range(len(inputs[0]), self.attrs["start"], self.attrs["end"])
        return [list(inputs[0])[s:e]]


class Size(Op):
    """The number of elements of the input, as an INT64 scalar."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [[]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        dims = list(inputs[0])
        const = math.prod(d.get_constant_value() for d in dims if d.is_constant())
        return [[shapes.dim_prod([d for d in dims if not d.is_constant()]) * const]]


class Slice_1(Op):  # noqa: N801
    """Slice before opset 10: ``starts``, ``ends``, ``axes`` attributes (step 1)."""

    float_values = True  # exact on whole numbers

    plugin_version = "1"
    max_opset = 9

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        a = self.attrs
        return [list(shapes.slice_dims(list(inputs[0]), a["starts"], a["ends"], a["axes"], None))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        a = self.attrs
        return shapes.slice_values(inputs[0], a["starts"], a["ends"], a["axes"])


class Slice(ValueOp):
    """Slice from opset 10: ``starts``, ``ends``, optional ``axes`` and ``steps`` inputs.

    Starts and ends may be symbolic (computed from shapes) when axes and steps are known;
    unknown values make the node data-dependent."""

    float_values = True  # exact on whole numbers

    plugin_version = "10"
    min_opset = 10
    value_inputs = (1, 2, 3, 4)

    def params(self, inputs: Sequence[DimsExprs | None]) -> SliceParams | None:
        """Starts, ends, axes and steps as known at build time (None: not all known)."""
        starts, ends = self.values(inputs, 1), self.values(inputs, 2)
        axes = None if shapes.absent(inputs, 3) else self.ints(inputs, 3)
        steps = None if shapes.absent(inputs, 4) else self.ints(inputs, 4)
        if starts is None or ends is None or (axes is None and not shapes.absent(inputs, 3)) \
                or (steps is None and not shapes.absent(inputs, 4)):
            return None
        return starts, ends, axes, steps

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        params = self.params(inputs)
        if self.runtime(params is None):
            return [self.unknown_dims(len(dims))]
        assert params is not None
        return [list(shapes.slice_dims(dims, *params))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        params = self.params(inputs)
        return None if params is None else shapes.slice_values(inputs[0], *params)
