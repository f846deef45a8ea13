"""Shape, Size and Slice: the operators of shape computations, with build-time values.

``Shape`` returns its input's dimensions as values (``output_values``), ``Size`` their product,
and ``Slice`` slices known values, so ``Shape -> Slice -> Concat -> Reshape`` chains are known
when the engine is built, even with dynamic dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.plugin import REQUIRED, DataType, DimsExprs, IntLike, shapes
from mini_infer_core.plugin.shapes import Shapes, Values

from ..serialization import CpuPlugin
from ._dynamic import ValuePlugin, as_ints, emit

__all__ = ["Shape", "Size", "Slice_1", "Slice"]

Array = NDArray[Any]


class Shape(CpuPlugin):
    """The input's shape as INT64; ``start``/``end`` (opset 15) take a part of it."""

    attributes: ClassVar[dict[str, Any]] = {"start": 0, "end": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        s, e = shapes.shape_range(len(inputs[0]), self.attrs["start"], self.attrs["end"])
        return [[max(e - s, 0)]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        s, e = shapes.shape_range(len(inputs[0]), self.attrs["start"], self.attrs["end"])
        return [list(inputs[0])[s:e]]

    def compute(self, x: Array, *, out: Array, start: int, end: int | None) -> None:
        s, e = shapes.shape_range(x.ndim, start, end)
        out[...] = np.array(x.shape[s:e], np.int64).reshape(out.shape)


class Size(CpuPlugin):
    """The number of elements of the input, as an INT64 scalar."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [[]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        dims = list(inputs[0])
        const = math.prod(d.get_constant_value() for d in dims if d.is_constant())
        return [[shapes.dim_prod([d for d in dims if not d.is_constant()]) * const]]

    def compute(self, x: Array, *, out: Array) -> None:
        out[...] = np.int64(x.size)


class Slice_1(CpuPlugin):  # noqa: N801
    """Slice before opset 10: ``starts``, ``ends``, ``axes`` attributes (step 1)."""

    op_type = "Slice"
    plugin_version = "1"
    max_opset = 9
    attributes: ClassVar[dict[str, Any]] = {"starts": REQUIRED, "ends": REQUIRED, "axes": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        a = self.attrs
        return [list(shapes.slice_dims(list(inputs[0]), a["starts"], a["ends"], a["axes"], None))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        a = self.attrs
        return shapes.slice_values(inputs[0], a["starts"], a["ends"], a["axes"])

    def compute(self, x: Array, *, out: Array, starts: Sequence[int], ends: Sequence[int],
                axes: Sequence[int] | None) -> None:
        np.copyto(out, x[shapes.slice_index(x.ndim, starts, ends, axes, None)])


class Slice(ValuePlugin):
    """Slice from opset 10: ``starts``, ``ends``, optional ``axes`` and ``steps`` inputs.

    Starts and ends may be symbolic (computed from shapes) when steps are known; unknown
    values make the node data-dependent."""

    min_opset = 10
    plugin_version = "10"
    value_inputs = (1, 2, 3, 4)

    def _params(self, inputs: Sequence[DimsExprs | None]
                ) -> tuple[Sequence[IntLike], Sequence[IntLike], list[int] | None,
                           list[int] | None] | None:
        starts, ends = self.values(inputs, 1), self.values(inputs, 2)
        axes = None if len(inputs) < 4 or inputs[3] is None else self.ints(inputs, 3)
        steps = None if len(inputs) < 5 or inputs[4] is None else self.ints(inputs, 4)
        if starts is None or ends is None or (axes is None and len(inputs) > 3
                                              and inputs[3] is not None) or (
                steps is None and len(inputs) > 4 and inputs[4] is not None):
            return None
        return starts, ends, axes, steps

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        params = self._params(inputs)
        if self.runtime(params is None):
            return [list(self.unknown_dims(len(dims)))]
        assert params is not None
        return [list(shapes.slice_dims(dims, *params))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        params = self._params(inputs)
        return None if params is None else shapes.slice_values(inputs[0], *params)

    def compute(self, x: Array, starts: Array, ends: Array, axes: Array | None = None,
                steps: Array | None = None, *, out: Array | None = None) -> Any:
        sl = shapes.slice_index(x.ndim, as_ints(starts), as_ints(ends),
                                None if axes is None else as_ints(axes),
                                None if steps is None else as_ints(steps))
        return emit(x[sl], out)
