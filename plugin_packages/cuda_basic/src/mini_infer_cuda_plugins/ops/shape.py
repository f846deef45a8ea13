"""Data movement: Reshape, Flatten, Transpose, Concat, Unsqueeze, Squeeze, Identity.

Each copies into the pre-allocated output (one device copy; no host round trip) and passes
the build-time values of small integer tensors through (``output_values``). Targets and axes
given as inputs (Reshape-5, Unsqueeze-13, Squeeze-13) must be known when the engine is built
(``shape_inputs``): the kernels never read them back from the GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from mini_infer_core.plugin import REQUIRED, DimsExprs, UnaryPlugin, shapes
from mini_infer_core.plugin.shapes import Shapes, Values

from ..serialization import CudaPlugin
from ._common import array_module, copy_into, shape_values

__all__ = ["Reshape_1", "Reshape_5", "Flatten", "Transpose", "Concat", "Unsqueeze_1",
           "Unsqueeze_13", "Squeeze_1", "Squeeze_13", "Identity"]



class _Copy(CudaPlugin, UnaryPlugin):
    """An operator whose output holds the input's elements in order, in another shape."""

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.same_values(inputs)

    def compute(self, x: Any, *_inputs: Any, out: Any, **_: Any) -> None:
        copy_into(array_module(x, out), out, x)


class Reshape_1(_Copy):  # noqa: N801
    """Reshape before opset 5: the target is the ``shape`` attribute."""

    op_type = "Reshape"
    plugin_version = "1"
    max_opset = 4
    attributes: ClassVar[dict[str, Any]] = {"shape": REQUIRED, "consumed_inputs": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(shapes.reshape_dims(list(inputs[0]), self.attrs["shape"], 0))]


class Reshape_5(_Copy):  # noqa: N801
    """Reshape from opset 5: the target is input 1 (``allowzero`` from opset 14)."""

    op_type = "Reshape"
    plugin_version = "5"
    min_opset = 5
    shape_inputs = (1,)
    attributes: ClassVar[dict[str, Any]] = {"allowzero": 0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        target = shape_values(inputs, 1, "Reshape", "shape")
        return [list(shapes.reshape_dims(list(inputs[0]), target, self.attrs["allowzero"]))]


class Flatten(_Copy):
    attributes: ClassVar[dict[str, Any]] = {"axis": 1}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [shapes.flatten_dims(list(inputs[0]), self.attrs["axis"])]


class Unsqueeze_1(_Copy):  # noqa: N801
    op_type = "Unsqueeze"
    plugin_version = "1"
    max_opset = 12
    attributes: ClassVar[dict[str, Any]] = {"axes": REQUIRED}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [shapes.unsqueeze_dims(list(inputs[0]), self.attrs["axes"])]


class Unsqueeze_13(_Copy):  # noqa: N801
    """Unsqueeze from opset 13: ``axes`` is input 1."""

    op_type = "Unsqueeze"
    plugin_version = "13"
    min_opset = 13
    shape_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        axes = shapes.const_ints(shape_values(inputs, 1, "Unsqueeze", "axes"), "Unsqueeze", "axes")
        return [shapes.unsqueeze_dims(list(inputs[0]), axes)]


class Squeeze_1(_Copy):  # noqa: N801
    op_type = "Squeeze"
    plugin_version = "1"
    max_opset = 12
    attributes: ClassVar[dict[str, Any]] = {"axes": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [shapes.squeeze_dims(list(inputs[0]), self.attrs["axes"])]


class Squeeze_13(_Copy):  # noqa: N801
    """Squeeze from opset 13: optional ``axes`` input 1."""

    op_type = "Squeeze"
    plugin_version = "13"
    min_opset = 13
    shape_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        axes = None
        if not shapes.absent(inputs, 1):
            axes = shapes.const_ints(shape_values(inputs, 1, "Squeeze", "axes"), "Squeeze", "axes")
        return [shapes.squeeze_dims(list(inputs[0]), axes)]


class Identity(_Copy):
    pass


class Transpose(CudaPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"perm": None}

    def _perm(self, rank: int) -> tuple[int, ...]:
        return shapes.transpose_perm(self.attrs["perm"], rank)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        return [[dims[p] for p in self._perm(len(dims))]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr = shapes.value_array(inputs[0])
        return None if arr is None else [shapes.flat(arr.transpose(self._perm(arr.ndim)))]

    def compute(self, x: Any, *, out: Any, perm: Any) -> None:
        array_module(x, out).copyto(out, x.transpose(self._perm(x.ndim)))


class Concat(CudaPlugin):
    """Concatenation along ``axis`` (negative allowed)."""

    attributes: ClassVar[dict[str, Any]] = {"axis": 1}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [shapes.concat_dims(inputs, self.attrs["axis"])]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.concat_values(inputs, self.attrs["axis"])

    def compute(self, *xs: Any, out: Any, axis: int) -> None:
        array_module(*xs, out).concatenate(xs, axis=shapes.norm_axis(axis, out.ndim), out=out)
