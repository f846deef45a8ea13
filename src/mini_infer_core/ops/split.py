"""Split: into parts given by ``split`` (attribute before opset 13, input from 13), or equal
parts (opset 18: ``num_outputs`` parts, the last one smaller when they do not divide).

The number of outputs must be known when the node is created: from ``num_outputs``, from the
``split`` attribute, or from the ``__num_outputs__`` field (the node's output count, which the
builder adds for creators that declare it in ``hidden_fields``). Split sizes computed at run
time make the node data-dependent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from ..errors import PluginInterfaceError
from ..plugin import DimExpr, DimsExprs
from ..plugin.shapes import Shapes, Values, flat, norm_axis, value_array
from ._schema import ValueOp

__all__ = ["Split_1", "Split_2", "Split_13", "Split"]


def equal_parts(dim: DimExpr, n: int) -> list[DimExpr]:
    """``n`` parts of ``dim``: ceil(dim / n) each, the last one what remains."""
    if n <= 0:
        raise PluginInterfaceError(f"Split: cannot split into {n} parts")
    if dim.is_constant():
        d = dim.get_constant_value()
        chunk = -(-d // n)
        return [DimExpr.const(max(min(chunk, d - k * chunk), 0)) for k in range(n)]
    part = dim.ceil_div(n)
    return [part] * (n - 1) + [dim - part * (n - 1)]


class SplitBase(ValueOp):
    """Split, every opset."""

    float_values = True  # exact on whole numbers

    hidden_fields = ("__num_outputs__",)
    #: where the split sizes come from: "attr", "input" or "either" (opset 1)
    split_from: ClassVar[str] = "attr"

    @property
    def num_outputs(self) -> int:
        split = self.attrs.get("split")
        if split is not None:
            return len(split)
        if self.attrs.get("num_outputs") is not None:
            return int(self.attrs["num_outputs"])
        if "__num_outputs__" in self.hidden:
            return int(self.hidden["__num_outputs__"])
        raise PluginInterfaceError(
            "Split: the number of outputs is not known from the node's attributes (no "
            "'num_outputs', no 'split' attribute) and no '__num_outputs__' field gives the "
            "node's output count")

    def axis(self, rank: int) -> int:
        """The split axis of an input of ``rank``."""
        axis = self.attrs.get("axis")
        return norm_axis(0 if axis is None else axis, rank, "Split axis")

    def sizes(self, inputs: Sequence[DimsExprs | None], dim: DimExpr
              ) -> list[DimExpr] | None:
        """The sizes of the parts of an axis of length ``dim`` (None: known at run time)."""
        if self.attrs.get("split") is not None:
            return [DimExpr.const(v) for v in self.attrs["split"]]
        if self.split_from != "attr" and not (len(inputs) < 2 or inputs[1] is None):
            vals = self.values(inputs, 1)
            return None if vals is None else list(vals)
        return equal_parts(dim, self.num_outputs)

    def part_sizes(self, dim: int, split: Sequence[int] | None) -> list[int]:
        """The sizes of the parts of an axis of length ``dim`` at run time, given the values
        of input 1 (``split``, None when absent)."""
        if self.attrs.get("split") is not None:
            return list(self.attrs["split"])
        if split is not None and self.split_from != "attr":
            return list(split)
        return [d.get_constant_value() for d in equal_parts(DimExpr.const(dim),
                                                            self.num_outputs)]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        a = self.axis(len(dims))
        sizes = self.sizes(inputs, dims[a])
        if self.runtime(sizes is None):
            sizes = [self.dynamic_dim(f"split{k}") for k in range(self.num_outputs)]
        assert sizes is not None
        if len(sizes) != self.num_outputs:
            raise PluginInterfaceError(
                f"Split: {len(sizes)} split sizes for {self.num_outputs} outputs")
        return [dims[:a] + [s] + dims[a + 1:] for s in sizes]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr = value_array(inputs[0])
        if arr is None:
            return None
        sizes = self.sizes(inputs, DimExpr.const(arr.shape[self.axis(arr.ndim)]))
        if sizes is None or not all(s.is_constant() for s in sizes):
            return None
        cuts = np.cumsum([s.get_constant_value() for s in sizes])[:-1]
        return [flat(p) for p in np.split(arr, cuts, axis=self.axis(arr.ndim))]


class Split_1(SplitBase):  # noqa: N801
    """Split of opset 1: sizes from the ``split`` attribute or input 1."""

    plugin_version = "1"
    max_opset = 1
    split_from = "either"
    value_inputs = (1,)


class Split_2(SplitBase):  # noqa: N801
    """Split of opsets 2-12: sizes from the ``split`` attribute."""

    plugin_version = "2"
    min_opset = 2
    max_opset = 12


class Split_13(SplitBase):  # noqa: N801
    """Split of opsets 13-17: sizes from the optional input 1."""

    plugin_version = "13"
    min_opset = 13
    max_opset = 17
    split_from = "input"
    value_inputs = (1,)


class Split(SplitBase):
    """Split from opset 18: sizes from input 1, or ``num_outputs`` (nearly) equal parts."""

    plugin_version = "18"
    min_opset = 18
    split_from = "input"
    value_inputs = (1,)
