"""Pooling: MaxPool (with its Indices output), AveragePool, GlobalAveragePool, GlobalMaxPool
(LpPool and GlobalLpPool: :mod:`.lp_pool`).

The window geometry every device's kernel needs is here: :meth:`PoolBase.geometry` (pads and
output sizes for concrete input sizes), :meth:`PoolBase.taps` (the strided slice of a padded
input that each kernel tap reads), :meth:`PoolBase.divisor` (how many taps of each
AveragePool window count) and :meth:`PoolBase.pad_value`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs, shapes
from ..plugin.shapes import Shapes
from ._schema import FLOATS, UnaryOp

__all__ = ["MaxPool_1", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"]

#: one kernel tap: an index of the padded input (N, C, *padded) giving what the tap reads
#: for every output, ``(..., slice, slice, ...)``
Tap = tuple[Any, ...]


def _counts(size: int, k: int, s: int, d: int, pb: int, pe: int, o: int, include_pad: bool
            ) -> np.ndarray[Any, Any]:
    """Per output index along one axis: how many of its taps fall inside the input (or
    input + explicit pads)."""
    lo, hi = (-pb, size + pe) if include_pad else (0, size)
    pos = (np.arange(o)[:, None] * s - pb) + np.arange(k)[None, :] * d
    counts: np.ndarray[Any, Any] = ((pos >= lo) & (pos < hi)).sum(axis=1)
    return counts


class PoolBase(UnaryOp):
    """A sliding-window pooling of ``X`` (N, C, *spatial)."""

    #: "max", "avg" (sums divided by :meth:`divisor`) or "lp" (``p``-norms)
    kind: ClassVar[str] = "max"

    def window(self, nd: int) -> shapes.Window:
        return shapes.window_from_attrs(self.op_type, nd, self.attrs)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x = list(inputs[0])
        if len(x) < 3:
            raise PluginInterfaceError(f"{self.op_type}: input rank {len(x)} < 3")
        return [[x[0], x[1], *shapes.symbolic_out_dims(x[2:], self.window(len(x) - 2))]
                ] * self.num_outputs

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], DataType.INT64][:self.num_outputs]

    def geometry(self, spatial: Sequence[int]) -> tuple[shapes.Window, shapes.Geometry]:
        """The window, and its pads and output sizes for input sizes ``spatial``."""
        win = self.window(len(spatial))
        return win, shapes.resolve(spatial, win)

    @staticmethod
    def taps(win: shapes.Window, geo: shapes.Geometry) -> tuple[Tap, ...]:
        """For each kernel tap (row-major), the strided slice of the input padded by
        ``geo.begin`` (and out to :func:`~mini_infer_core.plugin.shapes.padded_extent`)
        that it reads for every output."""
        return tuple(
            (Ellipsis, *(slice(t * d, t * d + s * (o - 1) + 1, s) for t, d, s, o in
                         zip(tap, win.dilations, win.strides, geo.out, strict=True)))
            for tap in itertools.product(*(range(int(k)) for k in win.kernel)))

    def pad_value(self, dtype: Any) -> Any:
        """What the padding holds: the lowest value for max (-inf for floats), else 0."""
        if self.kind != "max":
            return 0
        dt = np.dtype(dtype)
        return -np.inf if dt.kind == "f" else np.iinfo(dt).min

    def divisor(self, spatial: Sequence[int], win: shapes.Window, geo: shapes.Geometry
                ) -> np.ndarray[Any, Any] | None:
        """AveragePool: per output (shaped as the output's spatial axes), how many taps are
        inside the input (``count_include_pad``: inside input + explicit pads; windows that
        ``ceil_mode`` lets overhang the end padding do not count the overhang), as
        onnxruntime and the ONNX reference do. None where every window counts all its taps
        (or the pooling is not an average)."""
        if self.kind != "avg":
            return None
        include = bool(self.attrs["count_include_pad"])
        full = np.ones((), np.int64)
        for i, size in enumerate(spatial):
            full = np.multiply.outer(full, _counts(
                size, int(win.kernel[i]), win.strides[i], win.dilations[i], geo.begin[i],
                geo.end[i], geo.out[i], include))
        taps = int(np.prod([int(k) for k in win.kernel]))
        return full if np.any(full != taps) else None


class MaxPool_1(PoolBase):  # noqa: N801
    """Max pooling before opset 8: the values only."""

    plugin_version = "1"
    max_opset = 7


class MaxPool(PoolBase):
    """Max pooling from opset 8 (ceil_mode and dilations from 10), with the optional Indices
    output (flat positions in the input, row-major or, with ``storage_order=1``, column-major
    spatially).

    Indices make MaxPool much slower, and the engine does not tell a plugin whether a node's
    optional output is used: the plugin declares the second output only when the importer
    passes the node's output count (hidden field ``__num_outputs__``) and it is 2.
    """

    plugin_version = "8"
    min_opset = 8
    hidden_fields = ("__num_outputs__",)

    @property
    def num_outputs(self) -> int:
        return 2 if int(self.hidden.get("__num_outputs__", 1)) >= 2 else 1


class AveragePool(PoolBase):
    dtypes = FLOATS
    kind = "avg"


class GlobalPoolBase(UnaryOp):
    """A pooling over all spatial axes: N x C x 1 x ... x 1."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x = list(inputs[0])
        if len(x) < 3:
            raise PluginInterfaceError(f"{self.op_type}: input rank {len(x)} < 3")
        return [x[:2] + [1] * (len(x) - 2)]


class GlobalAveragePool(GlobalPoolBase):
    dtypes = FLOATS


class GlobalMaxPool(GlobalPoolBase):
    pass
