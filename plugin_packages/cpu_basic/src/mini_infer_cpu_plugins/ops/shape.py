"""Data-movement operators: Reshape, Flatten, Transpose, Concat, Unsqueeze, Squeeze, Identity.

All of them are dtype-agnostic and copy into the pre-allocated output. Each also passes the
build-time values of small integer tensors through (``output_values``), so shape computations
(``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``) stay known when the engine is built.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.plugin import REQUIRED, DimExpr, DimsExprs, UnaryPlugin, shapes
from mini_infer_core.plugin.shapes import Shapes, Values

from ..serialization import CpuPlugin
from ._dynamic import ValuePlugin, as_ints
from ._util import SameBytes, copy_into, in_place

__all__ = [
    "Reshape_1",
    "Reshape_5",
    "Flatten",
    "Transpose",
    "Concat",
    "Unsqueeze_1",
    "Unsqueeze_13",
    "Squeeze_1",
    "Squeeze_13",
    "Identity",
]

Array = NDArray[Any]


class Reshape_1(SameBytes, CpuPlugin, UnaryPlugin):  # noqa: N801
    """Reshape before opset 5: the target shape is the ``shape`` attribute."""

    op_type = "Reshape"
    plugin_version = "1"
    max_opset = 4
    attributes: ClassVar[dict[str, Any]] = {"shape": REQUIRED, "consumed_inputs": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(shapes.reshape_dims(list(inputs[0]), self.attrs["shape"], 0))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.same_values(inputs)

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        copy_into(out, x)


class Reshape_5(SameBytes, ValuePlugin, UnaryPlugin):  # noqa: N801
    """Reshape from opset 5: the target shape is input 1; ``allowzero`` from opset 14.

    A target known when the engine is built gives exact shapes; a run-time target makes the
    node data-dependent."""

    op_type = "Reshape"
    plugin_version = "5"
    min_opset = 5
    value_inputs = (1,)
    attributes: ClassVar[dict[str, Any]] = {"allowzero": 0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        target = self.values(inputs, 1)
        if self.runtime(target is None):
            n = inputs[1][0] if len(inputs[1]) else DimExpr.const(1)
            rank = shapes.const_ints([n], "Reshape", "the target rank")[0]
            return [list(self.unknown_dims(rank))]
        assert target is not None
        return [list(shapes.reshape_dims(list(inputs[0]), target, self.attrs["allowzero"]))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.same_values(inputs)

    def compute(self, x: Array, shape: Array, *, out: Array | None = None,
                allowzero: int = 0) -> Any:
        if out is None:
            return x.reshape(shapes.reshape_target(x.shape, as_ints(shape), allowzero)).copy()
        copy_into(out, x)
        return None


class Flatten(SameBytes, CpuPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"axis": 1}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [shapes.flatten_dims(list(inputs[0]), self.attrs["axis"])]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.same_values(inputs)

    def compute(self, x: Array, *, out: Array, axis: int) -> None:
        copy_into(out, x)


class Transpose(CpuPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"perm": None}

    def _perm(self, rank: int) -> tuple[int, ...]:
        return shapes.transpose_perm(self.attrs["perm"], rank)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        return [[dims[p] for p in self._perm(len(dims))]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr = shapes.value_array(inputs[0])
        return None if arr is None else [shapes.flat(arr.transpose(self._perm(arr.ndim)))]

    def compute(self, x: Array, *, out: Array, perm: tuple[int, ...] | None) -> None:
        np.copyto(out, x.transpose(self._perm(x.ndim)))


class Concat(CpuPlugin):
    """Concatenation along ``axis`` (negative allowed; opset 1 defaulted it to 1)."""

    attributes: ClassVar[dict[str, Any]] = {"axis": 1}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [shapes.concat_dims(inputs, self.attrs["axis"])]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.concat_values(inputs, self.attrs["axis"])

    def in_place_inputs(self, inputs: Sequence[Any], outputs: Sequence[Any]
                        ) -> dict[int, tuple[int, int]]:
        """Where every dimension before ``axis`` is 1, each input is a contiguous run of the
        output: the engine may place it there (its producer then writes it in place)."""
        shape = outputs[0][0]
        ax = shapes.norm_axis(self.attrs["axis"], len(shape))
        if any(d != 1 for d in shape[:ax]):
            return {}
        inner = math.prod(shape[ax + 1:])
        places, pos = {}, 0
        for i, desc in enumerate(inputs):
            places[i] = (0, pos * inner)
            pos += desc[0][ax]
        return places

    def compute(self, *xs: Array, out: Array, axis: int) -> None:
        ax = shapes.norm_axis(axis, out.ndim)
        if len(xs) == 1 or not out.flags.c_contiguous:
            np.concatenate(xs, axis=ax, out=out)
            return
        lead, pos = (slice(None),) * ax, 0
        for x in xs:
            part = out[(*lead, slice(pos, pos + x.shape[ax]))]
            pos += x.shape[ax]
            if not in_place(x, part):  # the engine may have put it there already
                np.copyto(part, x)


class Unsqueeze_1(SameBytes, CpuPlugin, UnaryPlugin):  # noqa: N801
    """Unsqueeze before opset 13: ``axes`` attribute."""

    op_type = "Unsqueeze"
    plugin_version = "1"
    max_opset = 12
    attributes: ClassVar[dict[str, Any]] = {"axes": REQUIRED}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(shapes.unsqueeze_dims(list(inputs[0]), self.attrs["axes"]))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.same_values(inputs)

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        copy_into(out, x)


class Unsqueeze_13(SameBytes, ValuePlugin, UnaryPlugin):  # noqa: N801
    """Unsqueeze from opset 13: ``axes`` is input 1 (a run-time one makes the node
    data-dependent)."""

    op_type = "Unsqueeze"
    plugin_version = "13"
    min_opset = 13
    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        vals = self.values(inputs, 1)
        if self.runtime(vals is None):
            n = shapes.const_ints([inputs[1][0] if len(inputs[1]) else DimExpr.const(1)],
                                  "Unsqueeze", "the number of axes")[0]
            return [list(self.unknown_dims(len(inputs[0]) + n))]
        assert vals is not None
        axes = shapes.const_ints(vals, "Unsqueeze", "axes")
        return [list(shapes.unsqueeze_dims(list(inputs[0]), axes))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.same_values(inputs)

    def compute(self, x: Array, axes: Array, *, out: Array | None = None) -> Any:
        if out is None:
            return np.expand_dims(x, tuple(as_ints(axes))).copy()
        copy_into(out, x)
        return None


class Squeeze_1(SameBytes, CpuPlugin, UnaryPlugin):  # noqa: N801
    """Squeeze before opset 13: optional ``axes`` attribute (absent: every 1 dim)."""

    op_type = "Squeeze"
    plugin_version = "1"
    max_opset = 12
    attributes: ClassVar[dict[str, Any]] = {"axes": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(shapes.squeeze_dims(list(inputs[0]), self.attrs["axes"]))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.same_values(inputs)

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        copy_into(out, x)


class Squeeze_13(SameBytes, ValuePlugin, UnaryPlugin):  # noqa: N801
    """Squeeze from opset 13: optional ``axes`` input 1 (a run-time one makes the
    node data-dependent)."""

    op_type = "Squeeze"
    plugin_version = "13"
    min_opset = 13
    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        axes: list[int] | None = None
        if not shapes.absent(inputs, 1):
            vals = self.values(inputs, 1)
            if self.runtime(vals is None):
                n = shapes.const_ints([inputs[1][0] if len(inputs[1]) else DimExpr.const(1)],
                                      "Squeeze", "the number of axes")[0]
                return [list(self.unknown_dims(len(inputs[0]) - n))]
            assert vals is not None
            axes = shapes.const_ints(vals, "Squeeze", "axes")
        else:
            self.runtime(False)
        return [list(shapes.squeeze_dims(list(inputs[0]), axes))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.same_values(inputs)

    def compute(self, x: Array, axes: Array | None = None, *, out: Array | None = None) -> Any:
        if out is None:
            ax = tuple(as_ints(axes)) if axes is not None else None
            return np.squeeze(x, ax).copy()
        copy_into(out, x)
        return None


class Identity(SameBytes, CpuPlugin, UnaryPlugin):
    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.same_values(inputs)

    def compute(self, x: Array, *, out: Array) -> None:
        copy_into(out, x)
