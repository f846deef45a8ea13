"""Scattering: ScatterElements (and the deprecated Scatter), ScatterND -- NumPy kernels
(schemas in :mod:`mini_infer_core.ops.scatter`): a copy of ``data``, then ``updates`` written
or combined with a ufunc's ``at``."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import scatter as schema
from mini_infer_core.plugin.arrays import NDArray
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


class ScatterElements(CpuPlugin, schema.ScatterElements):
    def compute(self, data: Array, indices: Array, updates: Array, *, out: Array, axis: int,
                reduction: str) -> None:
        np.copyto(out, data)
        scatter_elements(out, indices, updates, axis, reduction)


class Scatter(CpuPlugin, schema.Scatter):
    def compute(self, data: Array, indices: Array, updates: Array, *, out: Array,
                axis: int) -> None:
        np.copyto(out, data)
        scatter_elements(out, indices, updates, axis, "none")


class ScatterND(CpuPlugin, schema.ScatterND):
    def compute(self, data: Array, indices: Array, updates: Array, *, out: Array,
                reduction: str) -> None:
        np.copyto(out, data)
        k = indices.shape[-1]
        idx = np.asarray(indices).astype(np.int64).reshape(-1, k)
        idx = np.where(idx < 0, idx + np.array(data.shape[:k], np.int64), idx)
        upd = np.asarray(updates).reshape((idx.shape[0],) + data.shape[k:])
        _apply(out, tuple(idx[:, j] for j in range(k)), upd, reduction)
