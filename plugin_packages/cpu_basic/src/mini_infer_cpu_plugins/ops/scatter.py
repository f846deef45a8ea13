"""Scattering: ScatterElements (and the deprecated Scatter), ScatterND.

The output is a copy of ``data`` with ``updates`` written (``reduction`` none) or combined
(add, mul, max, min; opset 16/18) at the given indices. Negative indices count from the end.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import UnaryPlugin
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CpuPlugin

__all__ = ["ScatterElements", "Scatter", "ScatterND"]

Array = NDArray[Any]

_UFUNCS: dict[str, Any] = {"add": np.add, "mul": np.multiply, "max": np.maximum,
                           "min": np.minimum}


def _apply(out: Array, where: tuple[Any, ...], updates: Array, reduction: str) -> None:
    if reduction == "none":
        out[where] = updates
        return
    ufunc = _UFUNCS.get(reduction)
    if ufunc is None:
        raise PluginInterfaceError(f"unknown reduction {reduction!r}")
    ufunc.at(out, where, updates)


def scatter_elements(out: Array, indices: Array, updates: Array, axis: int,
                     reduction: str) -> None:
    a = norm_axis(axis, out.ndim)
    idx = np.asarray(indices).astype(np.int64)
    idx = np.where(idx < 0, idx + out.shape[a], idx)
    grid: list[Any] = list(np.indices(idx.shape, sparse=True))
    grid[a] = idx
    _apply(out, tuple(grid), updates, reduction)


class ScatterElements(CpuPlugin, UnaryPlugin):
    """ScatterElements; ``reduction`` from opset 16 (max/min from 18)."""

    min_opset = 11
    attributes: ClassVar[dict[str, Any]] = {"axis": 0, "reduction": "none"}

    def compute(self, data: Array, indices: Array, updates: Array, *, out: Array, axis: int,
                reduction: str) -> None:
        np.copyto(out, data)
        scatter_elements(out, indices, updates, axis, reduction)


class Scatter(CpuPlugin, UnaryPlugin):
    """The deprecated Scatter (opsets 9-10): ScatterElements without reduction."""

    min_opset = 9
    attributes: ClassVar[dict[str, Any]] = {"axis": 0}

    def compute(self, data: Array, indices: Array, updates: Array, *, out: Array,
                axis: int) -> None:
        np.copyto(out, data)
        scatter_elements(out, indices, updates, axis, "none")


class ScatterND(CpuPlugin, UnaryPlugin):
    """ScatterND: ``indices[..., :k]`` address slices of data; ``reduction`` from opset 16."""

    min_opset = 11
    attributes: ClassVar[dict[str, Any]] = {"reduction": "none"}

    def compute(self, data: Array, indices: Array, updates: Array, *, out: Array,
                reduction: str) -> None:
        np.copyto(out, data)
        k = indices.shape[-1]
        idx = np.asarray(indices).astype(np.int64).reshape(-1, k)
        idx = np.where(idx < 0, idx + np.array(data.shape[:k], np.int64), idx)
        upd = np.asarray(updates).reshape((idx.shape[0],) + data.shape[k:])
        _apply(out, tuple(idx[:, j] for j in range(k)), upd, reduction)
