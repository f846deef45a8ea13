"""Gathering: Gather, GatherElements, GatherND, and OneHot.

Indices may be negative (counted from the end of the axis). Gather also gathers build-time
values (``Shape -> Gather`` picks a dimension while the engine is built).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, DimExpr, DimsExprs
from mini_infer_core.plugin.shapes import Shapes, Values, gather_dims, gather_values, norm_axis

from ..serialization import CpuPlugin
from ._dynamic import ValuePlugin, emit

__all__ = ["Gather", "GatherElements", "GatherND", "OneHot"]

Array = NDArray[Any]


def _wrap(indices: Array, n: int) -> Array:
    idx = np.asarray(indices).astype(np.int64, copy=False)
    return np.where(idx < 0, idx + n, idx)


class Gather(CpuPlugin):
    """``np.take`` along ``axis``: out = data.shape[:axis] + indices.shape + data.shape[axis+1:]."""

    attributes: ClassVar[dict[str, Any]] = {"axis": 0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [gather_dims(inputs[0], inputs[1], self.attrs["axis"])]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return gather_values(inputs[0], inputs[1], self.attrs["axis"])

    def compute(self, data: Array, indices: Array, *, out: Array, axis: int) -> None:
        a = norm_axis(axis, data.ndim)
        np.copyto(out, np.take(data, _wrap(indices, data.shape[a]), axis=a))


class GatherElements(CpuPlugin):
    """``np.take_along_axis``: the output has the indices' shape."""

    min_opset = 11
    attributes: ClassVar[dict[str, Any]] = {"axis": 0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        norm_axis(self.attrs["axis"], len(inputs[0]), "GatherElements axis")
        return [list(inputs[1])]

    def compute(self, data: Array, indices: Array, *, out: Array, axis: int) -> None:
        a = norm_axis(axis, data.ndim)
        np.copyto(out, np.take_along_axis(data, _wrap(indices, data.shape[a]), axis=a))


def gather_nd(data: Array, indices: Array, batch_dims: int) -> Array:
    """ONNX GatherND: the last axis of ``indices`` indexes data after ``batch_dims`` axes."""
    b, k = batch_dims, indices.shape[-1]
    batch = data.shape[:b]
    nb = int(np.prod(batch, dtype=np.int64))
    d = data.reshape((nb,) + data.shape[b:])
    idx = indices.reshape(nb, -1, k).astype(np.int64)
    dims = np.array(data.shape[b:b + k], np.int64)
    idx = np.where(idx < 0, idx + dims, idx)
    rows = np.arange(nb)[:, None]
    picked = d[(rows,) + tuple(idx[..., j] for j in range(k))]
    return picked.reshape(indices.shape[:-1] + data.shape[b + k:])


class GatherND(CpuPlugin):
    """GatherND; ``batch_dims`` from opset 12."""

    min_opset = 11
    attributes: ClassVar[dict[str, Any]] = {"batch_dims": 0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        data, idx = list(inputs[0]), list(inputs[1])
        k = idx[-1]
        if not k.is_constant():
            raise PluginInterfaceError("GatherND: the last dimension of indices must be static")
        b = self.attrs["batch_dims"]
        return [idx[:-1] + data[b + k.get_constant_value():]]

    def compute(self, data: Array, indices: Array, *, out: Array, batch_dims: int) -> None:
        np.copyto(out, gather_nd(data, indices, batch_dims))


class OneHot(ValuePlugin):
    """A ``depth``-long axis inserted at ``axis``: values[1] where the index is, values[0]
    elsewhere (negative indices count from depth; out-of-range ones give all values[0]).

    The output has the type of ``values``. A depth computed at run time (or a float one, whose
    value the engine does not carry) makes the node data-dependent."""

    min_opset = 9
    value_inputs = (1,)
    attributes: ClassVar[dict[str, Any]] = {"axis": -1}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        a = norm_axis(self.attrs["axis"], len(dims) + 1, "OneHot axis")
        depth = self.ints(inputs, 1)
        d: DimExpr
        if self.runtime(depth is None):
            d = self.dynamic_dim("depth")
        else:
            assert depth is not None
            d = DimExpr.const(depth[0])
        return [dims[:a] + [d] + dims[a:]]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[2]]

    def compute(self, indices: Array, depth: Array, values: Array, *, out: Array | None = None,
                axis: int) -> Any:
        n = int(np.asarray(depth).reshape(-1)[0])
        a = norm_axis(axis, indices.ndim + 1)
        idx = np.asarray(indices).astype(np.int64)
        idx = np.where(idx < 0, idx + n, idx)
        hot = np.expand_dims(idx, a) == np.arange(n).reshape((-1,) + (1,) * (indices.ndim - a))
        vals = np.asarray(values).reshape(-1)
        return emit(np.where(hot, vals[1], vals[0]).astype(vals.dtype), out)
