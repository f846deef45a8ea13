"""Normalizations along axes: Hardmax, LpNormalization, MeanVarianceNormalization."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import UnaryPlugin
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CpuPlugin
from ._util import FLOATS

__all__ = ["Hardmax_1", "Hardmax", "LpNormalization", "MeanVarianceNormalization"]

Array = NDArray[Any]


def hardmax(x: Array, axis: int) -> Array:
    """1 at the first maximum along ``axis``, 0 elsewhere."""
    y = np.zeros_like(x)
    if x.size:
        first = np.expand_dims(np.argmax(x, axis=axis), axis)
        np.put_along_axis(y, first, 1, axis=axis)
    return y


class Hardmax_1(CpuPlugin, UnaryPlugin):  # noqa: N801
    """Hardmax before opset 13: over the input coerced to 2-D at ``axis`` (default 1)."""

    op_type = "Hardmax"
    plugin_version = "1"
    max_opset = 12
    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {"axis": 1}

    def compute(self, x: Array, *, out: Array, axis: int) -> None:
        a = axis + x.ndim if axis < 0 else axis
        if not 0 <= a <= x.ndim:
            raise PluginInterfaceError(f"Hardmax: axis {axis} out of range for rank {x.ndim}")
        rows = math.prod(x.shape[:a])
        flat = x.reshape(rows, -1) if x.size else x.reshape(rows, 0)
        np.copyto(out, hardmax(flat, 1).reshape(x.shape))


class Hardmax(CpuPlugin, UnaryPlugin):
    """Hardmax from opset 13: along ``axis`` (default -1)."""

    plugin_version = "13"
    min_opset = 13
    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {"axis": -1}

    def compute(self, x: Array, *, out: Array, axis: int) -> None:
        np.copyto(out, hardmax(x, norm_axis(axis, x.ndim)))


class LpNormalization(CpuPlugin, UnaryPlugin):
    """x / ||x||_p along ``axis`` (p is 1 or 2); a zero norm gives 0."""

    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {"axis": -1, "p": 2}

    def compute(self, x: Array, *, out: Array, axis: int, p: int) -> None:
        a = norm_axis(axis, x.ndim)
        if p == 1:
            norm = np.sum(np.abs(x), axis=a, keepdims=True)
        elif p == 2:
            norm = np.sqrt(np.sum(np.square(x), axis=a, keepdims=True))
        else:
            raise PluginInterfaceError(f"LpNormalization: p must be 1 or 2, got {p}")
        with np.errstate(divide="ignore", invalid="ignore"):
            np.copyto(out, np.where(norm == 0, 0, x / norm), casting="unsafe")


class MeanVarianceNormalization(CpuPlugin, UnaryPlugin):
    """(x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over ``axes`` (default N, H, W)."""

    min_opset = 9
    dtypes = FLOATS
    attributes: ClassVar[dict[str, Any]] = {"axes": [0, 2, 3]}

    def compute(self, x: Array, *, out: Array, axes: Sequence[int]) -> None:
        ax = tuple(norm_axis(a, x.ndim, "axis") for a in axes)
        mean = np.mean(x, axis=ax, keepdims=True)
        var = np.mean(np.square(x), axis=ax, keepdims=True) - np.square(mean)
        with np.errstate(invalid="ignore"):
            np.copyto(out, (x - mean) / (np.sqrt(var) + x.dtype.type(1e-9)), casting="unsafe")
