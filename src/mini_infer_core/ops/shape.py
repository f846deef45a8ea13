"""Data movement: Reshape, Flatten, Transpose, Concat, Unsqueeze, Squeeze, Identity.

Each passes the build-time values of small integer tensors through (``output_values``), so
shape computations (``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``) stay known when
the engine is built. Targets and axes given as inputs (Reshape-5, Unsqueeze-13, Squeeze-13)
are value inputs: computed at run time, they make the node data-dependent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..errors import PluginInterfaceError
from ..plugin import REQUIRED, TENSOR, DimExpr, DimsExprs, ValueKind, ValueSpec, shapes
from ..plugin.shapes import Shapes, Values
from ._schema import Op, UnaryOp, ValueOp

__all__ = ["Reshape_1", "Reshape_5", "Flatten", "Transpose", "Concat", "Unsqueeze_1",
           "Unsqueeze_13", "Squeeze_1", "Squeeze_13", "Identity"]


def value_count(dims: DimsExprs, op: str, what: str) -> int:
    """The number of elements of a 1-D value input (its length must be a build-time
    constant even where its values are not)."""
    n = dims[0] if len(dims) else DimExpr.const(1)
    return shapes.const_ints([n], op, what)[0]


class CopyBase(UnaryOp):
    """An operator whose output holds the input's elements in order, in another shape."""

    float_values = True  # exact on whole numbers

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.same_values(inputs)


class Reshape_1(CopyBase):  # noqa: N801
    """Reshape before opset 5: the target shape is the ``shape`` attribute."""

    plugin_version = "1"
    max_opset = 4
    # onnx marks ``shape`` optional, but without it there is no target
    attributes: ClassVar[dict[str, Any]] = {"shape": REQUIRED, "consumed_inputs": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(shapes.reshape_dims(list(inputs[0]), self.attrs["shape"], 0))]


class Reshape_5(CopyBase, ValueOp):  # noqa: N801
    """Reshape from opset 5: the target shape is input 1; ``allowzero`` from opset 14."""

    plugin_version = "5"
    min_opset = 5
    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        target = self.values(inputs, 1)
        if self.runtime(target is None):
            return [self.unknown_dims(value_count(inputs[1], "Reshape", "the target rank"))]
        assert target is not None
        return [list(shapes.reshape_dims(list(inputs[0]), target, self.attrs["allowzero"]))]


class Flatten(CopyBase):
    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [shapes.flatten_dims(list(inputs[0]), self.attrs["axis"])]


class Transpose(UnaryOp):
    float_values = True  # exact on whole numbers
    def perm(self, rank: int) -> tuple[int, ...]:
        """The permutation for an input of ``rank`` (default: the axes reversed)."""
        return shapes.transpose_perm(self.attrs["perm"], rank)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        return [[dims[p] for p in self.perm(len(dims))]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr = shapes.value_array(inputs[0])
        return None if arr is None else [shapes.flat(arr.transpose(self.perm(arr.ndim)))]


class Concat(Op):
    """Concatenation along ``axis`` (negative allowed)."""

    float_values = True  # exact on whole numbers

    # onnx requires ``axis`` from opset 4; opset 1 defaulted it to 1
    attributes: ClassVar[dict[str, Any]] = {"axis": 1}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [shapes.concat_dims(inputs, self.attrs["axis"])]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return shapes.concat_values(inputs, self.attrs["axis"])


class AxesBase(CopyBase, ValueOp):
    """Unsqueeze and Squeeze: ``axes`` from the attribute before opset 13, from input 1
    (optional for Squeeze: every 1 dim) from opset 13."""

    #: Unsqueeze: the axes are inserted (Squeeze: removed)
    inserts: ClassVar[bool] = False

    def new_dims(self, dims: list[DimExpr], axes: Sequence[int] | None) -> list[DimExpr]:
        if not self.inserts:
            return shapes.squeeze_dims(dims, axes)
        if axes is None:
            raise PluginInterfaceError("Unsqueeze: no axes (attribute or input 1)")
        return shapes.unsqueeze_dims(dims, axes)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        if shapes.absent(inputs, 1):
            self.runtime(False)
            return [self.new_dims(dims, self.attrs.get("axes"))]
        vals = self.values(inputs, 1)
        if self.runtime(vals is None):
            n = value_count(inputs[1], self.op_type, "the number of axes")
            return [self.unknown_dims(len(dims) + (n if self.inserts else -n))]
        assert vals is not None
        return [self.new_dims(dims, shapes.const_ints(vals, self.op_type, "axes"))]


class Unsqueeze_1(AxesBase):  # noqa: N801
    """Unsqueeze before opset 13: ``axes`` attribute."""

    plugin_version = "1"
    max_opset = 12
    inserts = True


class Unsqueeze_13(AxesBase):  # noqa: N801
    """Unsqueeze from opset 13: ``axes`` is input 1 (a run-time one makes the node
    data-dependent)."""

    plugin_version = "13"
    min_opset = 13
    value_inputs = (1,)
    inserts = True


class Squeeze_1(AxesBase):  # noqa: N801
    """Squeeze before opset 13: optional ``axes`` attribute."""

    plugin_version = "1"
    max_opset = 12


class Squeeze_13(AxesBase):  # noqa: N801
    """Squeeze from opset 13: optional ``axes`` input 1."""

    plugin_version = "13"
    min_opset = 13
    value_inputs = (1,)


class Identity(CopyBase):
    """Its input. A kernel that takes sequences and optionals too (``input_kinds``) gives
    them back as they are, running data-dependently (they have no place in an arena)."""

    def output_kinds(self, inputs: Sequence[ValueSpec | None]) -> list[ValueKind]:
        kind = inputs[0][0] if inputs and inputs[0] is not None else TENSOR
        if not kind.is_tensor:
            self.mark_data_dependent()
        return [kind]
