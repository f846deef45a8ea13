"""Selection: TopK, NonZero, Unique, Compress.

NonZero and Unique are always data-dependent (their output sizes are counts of the data);
TopK is when K is computed at run time, Compress when its condition is not known at build
time.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..plugin import DataType, DimExpr, DimsExprs
from ..plugin.shapes import Shapes, dim_prod, norm_axis
from ._schema import Op, ValueOp

__all__ = ["TopK_1", "TopK_10", "TopK", "NonZero", "Unique", "Compress"]


def _along(dims: list[DimExpr], axis: int | None, n: DimExpr, op: str) -> list[DimExpr]:
    """``dims`` with ``n`` elements along ``axis``; with no axis, ``[n]`` (flattened)."""
    if axis is None:
        return [n]
    a = norm_axis(axis, len(dims), f"{op} axis")
    return dims[:a] + [n] + dims[a + 1:]


class TopKBase(ValueOp):
    """TopK, every opset: the values and their INT64 indices."""

    n_outputs = 2

    def k_of(self, inputs: Sequence[DimsExprs | None]) -> DimExpr | None:
        """K as known at build time (None: computed at run time)."""
        vals = self.ints(inputs, 1)
        return None if vals is None else DimExpr.const(vals[0])

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        k = self.k_of(inputs)
        if self.runtime(k is None):
            k = self.dynamic_dim("k")
        assert k is not None
        shape = _along(list(inputs[0]), self.attrs["axis"], k, "TopK")
        return [shape, list(shape)]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], DataType.INT64]


class TopK_1(TopKBase):  # noqa: N801
    """TopK before opset 10: ``k`` attribute."""

    plugin_version = "1"
    max_opset = 9

    def k_of(self, inputs: Sequence[DimsExprs | None]) -> DimExpr | None:
        return DimExpr.const(self.attrs["k"])


class TopK_10(TopKBase):  # noqa: N801
    """TopK of opset 10: ``K`` input, largest first."""

    plugin_version = "10"
    min_opset = max_opset = 10
    value_inputs = (1,)


class TopK(TopKBase):
    """TopK from opset 11: ``K`` input, ``largest`` and ``sorted`` (always sorted here)."""

    plugin_version = "11"
    min_opset = 11
    value_inputs = (1,)


class NonZero(Op):
    """Indices of the non-zero elements, INT64 of shape (rank, count)."""

    data_dependent = True

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [[len(inputs[0]), self.dynamic_dim("count")]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]


class Unique(Op):
    """Unique elements (or slices along ``axis``): Y, first indices, inverse indices, counts.

    ``sorted=0`` keeps the order of first occurrence."""

    data_dependent = True
    n_outputs = 4

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        n = self.dynamic_dim("unique")
        axis = self.attrs["axis"]
        along = _along(dims, axis, n, "Unique")
        if axis is None:
            return [along, [n], [dim_prod(dims)], [n]]
        return [along, [n], [dims[norm_axis(axis, len(dims))]], [n]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0]] + [DataType.INT64] * 3


class Compress(ValueOp):
    """The slices along ``axis`` (of the flattened input without axis) where ``condition``
    is true; a condition shorter than the axis selects among its first elements."""

    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        cond = self.ints(inputs, 1)
        self.runtime(cond is None)
        n = self.dynamic_dim("count") if cond is None else DimExpr.const(sum(map(bool, cond)))
        return [_along(list(inputs[0]), self.attrs["axis"], n, "Compress")]
