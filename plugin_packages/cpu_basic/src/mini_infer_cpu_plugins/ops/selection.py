"""Selection: TopK, NonZero, Unique, Compress.

NonZero and Unique are always data-dependent (their output sizes are counts of the data);
TopK is when K is computed at run time, Compress when its condition is not known at build
time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DataType, DimExpr, DimsExprs
from mini_infer_core.plugin.shapes import Shapes, norm_axis

from ._dynamic import ValuePlugin, emit

__all__ = ["TopK_1", "TopK_10", "TopK", "NonZero", "Unique", "Compress"]

Array = NDArray[Any]


def top_k(x: Array, k: int, axis: int, largest: bool) -> tuple[Array, Array]:
    """The ``k`` largest (smallest) along ``axis``, sorted; ties keep the lower index first."""
    n = x.shape[axis]
    if not 0 <= k <= n:
        raise PluginInterfaceError(f"TopK: k={k} for an axis of length {n}")
    if largest:
        order = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
        order = n - 1 - order
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    return np.take_along_axis(x, idx, axis=axis), idx


class _TopK(ValuePlugin):
    n_outputs = 2

    def k_of(self, inputs: Sequence[DimsExprs | None]) -> DimExpr | None:
        vals = self.ints(inputs, 1)
        return None if vals is None else DimExpr.const(vals[0])

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        a = norm_axis(self.attrs["axis"], len(dims), "TopK axis")
        k = self.k_of(inputs)
        if self.runtime(k is None):
            k = self.dynamic_dim("k")
        assert k is not None
        shape = dims[:a] + [k] + dims[a + 1:]
        return [shape, list(shape)]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], DataType.INT64]

    def compute(self, x: Array, k_input: Array | None = None, *, out: Any = None, axis: int,
                largest: int = 1, **attrs: Any) -> Any:
        kk = int(attrs["k"]) if k_input is None else int(np.asarray(k_input).reshape(-1)[0])
        return emit(top_k(x, kk, norm_axis(axis, x.ndim), bool(largest)), out)


class TopK_1(_TopK):  # noqa: N801
    """TopK before opset 10: ``k`` attribute."""

    op_type = "TopK"
    plugin_version = "1"
    max_opset = 9
    attributes: ClassVar[dict[str, Any]] = {"k": REQUIRED, "axis": -1}

    def k_of(self, inputs: Sequence[DimsExprs | None]) -> DimExpr | None:
        return DimExpr.const(self.attrs["k"])


class TopK_10(_TopK):  # noqa: N801
    """TopK of opset 10: ``K`` input, largest first."""

    op_type = "TopK"
    plugin_version = "10"
    min_opset = 10
    max_opset = 10
    value_inputs = (1,)
    attributes: ClassVar[dict[str, Any]] = {"axis": -1}


class TopK(_TopK):
    """TopK from opset 11: ``K`` input, ``largest`` and ``sorted`` (always sorted here)."""

    plugin_version = "11"
    min_opset = 11
    value_inputs = (1,)
    attributes: ClassVar[dict[str, Any]] = {"axis": -1, "largest": 1, "sorted": 1}


class NonZero(ValuePlugin):
    """Indices of the non-zero elements, INT64 of shape (rank, count)."""

    min_opset = 9
    data_dependent = True

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [[len(inputs[0]), self.dynamic_dim("count")]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]

    def compute(self, x: Array, *, out: Array | None = None) -> Any:
        if x.ndim == 0:
            found = np.zeros((0, int(bool(x))), np.int64)
        else:
            found = np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)
        return emit(found, out)


class Unique(ValuePlugin):
    """Unique elements (or slices along ``axis``): Y, first indices, inverse indices, counts.

    ``sorted=0`` keeps the order of first occurrence."""

    min_opset = 11
    data_dependent = True
    n_outputs = 4
    attributes: ClassVar[dict[str, Any]] = {"axis": None, "sorted": 1}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        n = self.dynamic_dim("unique")
        axis = self.attrs["axis"]
        if axis is None:
            total = DimExpr.const(1)
            for d in dims:
                total = total * d
            return [[n], [n], [total], [n]]
        a = norm_axis(axis, len(dims), "Unique axis")
        return [dims[:a] + [n] + dims[a + 1:], [n], [dims[a]], [n]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0]] + [DataType.INT64] * 3

    def compute(self, x: Array, *, out: Any = None, axis: int | None,
                sorted: int) -> Any:  # noqa: A002
        if axis is None:
            data, a = x.reshape(-1), 0
        else:
            data, a = x, norm_axis(axis, x.ndim)
        _, first, inverse, counts = np.unique(data, return_index=True, return_inverse=True,
                                              return_counts=True, axis=a)
        inverse = inverse.reshape(-1)
        if not sorted:
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            first, counts, inverse = first[order], counts[order], rank[inverse]
        y = np.take(data, first, axis=a)
        return emit((y, first.astype(np.int64), inverse.astype(np.int64),
                     counts.astype(np.int64)), out)


class Compress(ValuePlugin):
    """The slices along ``axis`` (of the flattened input without axis) where ``condition``
    is true; a condition shorter than the axis selects among its first elements."""

    min_opset = 9
    value_inputs = (1,)
    attributes: ClassVar[dict[str, Any]] = {"axis": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        cond = self.ints(inputs, 1)
        n: DimExpr
        if self.runtime(cond is None):
            n = self.dynamic_dim("count")
        else:
            assert cond is not None
            n = DimExpr.const(sum(1 for c in cond if c))
        axis = self.attrs["axis"]
        if axis is None:
            return [[n]]
        a = norm_axis(axis, len(dims), "Compress axis")
        return [dims[:a] + [n] + dims[a + 1:]]

    def compute(self, x: Array, condition: Array, *, out: Array | None = None,
                axis: int | None) -> Any:
        cond = np.asarray(condition).astype(bool).reshape(-1)
        return emit(np.compress(cond, x, axis=axis), out)
