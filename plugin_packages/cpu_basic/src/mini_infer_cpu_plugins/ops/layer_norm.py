"""Normalisation over trailing axes or channel groups: LayerNormalization,
GroupNormalization (opset 18: per-group scale/bias; opset 21: per-channel), RMSNormalization.

Statistics are computed in float32 (float64 for float64 inputs), as ``stash_type`` asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DataType, DimsExprs, IntLike
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CpuPlugin
from ._nn_util import NN_FLOATS, put

__all__ = ["LayerNormalization", "GroupNormalization_18", "GroupNormalization",
           "RMSNormalization"]

Array = NDArray[Any]


def _stash(stash_type: int, x: Array) -> np.dtype[Any]:
    if x.dtype == np.float64 or stash_type == 11:
        return np.dtype(np.float64)
    return np.dtype(np.float32)


class LayerNormalization(CpuPlugin):
    """Y = (X - mean) / sqrt(var + epsilon) * Scale + B over axes [axis, rank); optional
    outputs Mean and InvStdDev (type ``stash_type``) shaped as X with 1s from ``axis`` on."""

    dtypes = NN_FLOATS
    min_opset = 17
    n_outputs = 3
    attributes: ClassVar[dict[str, Any]] = {"axis": -1, "epsilon": 1e-5, "stash_type": 1}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        x: list[IntLike] = list(inputs[0])
        a = norm_axis(self.attrs["axis"], len(x))
        stat: list[IntLike] = [*x[:a], *([1] * (len(x) - a))]
        return [x, stat, stat]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        u = DataType(self.attrs["stash_type"])
        return [input_types[0], u, u]

    def compute(self, x: Array, scale: Array, b: Array | None = None, *, out: Any,
                axis: int, epsilon: float, stash_type: int) -> None:
        a = norm_axis(axis, x.ndim)
        rows = int(np.prod(x.shape[:a], dtype=np.int64))
        dt = _stash(stash_type, x)
        xm = x.reshape(rows, -1).astype(dt)
        mean = xm.mean(axis=1, keepdims=True)
        d = xm - mean
        var = np.mean(d * d, axis=1, keepdims=True)
        inv = 1.0 / np.sqrt(var + dt.type(epsilon))
        d *= inv
        y = d.reshape(x.shape) * scale.astype(dt)
        if b is not None:
            y += b.astype(dt)
        put(out, 0, y)
        put(out, 1, mean)
        put(out, 2, inv)


class _GroupNorm(CpuPlugin):
    dtypes = NN_FLOATS
    per_channel: ClassVar[bool] = True

    def compute(self, x: Array, scale: Array, bias: Array, *, out: Array, epsilon: float,
                num_groups: int, **attrs: Any) -> None:
        n, c = x.shape[:2]
        if num_groups < 1 or c % num_groups:
            raise PluginInterfaceError(
                f"GroupNormalization: {c} channels are not divisible by {num_groups} groups")
        dt = _stash(attrs.get("stash_type", 1), x)
        xg = x.reshape(n, num_groups, -1).astype(dt)
        mean = xg.mean(axis=2, keepdims=True)
        d = xg - mean
        var = np.mean(d * d, axis=2, keepdims=True)
        d /= np.sqrt(var + dt.type(epsilon))
        pshape = (1, c) + (1,) * (x.ndim - 2)
        if self.per_channel:
            s, b = scale.astype(dt).reshape(pshape), bias.astype(dt).reshape(pshape)
        else:
            rep = c // num_groups
            s = np.repeat(scale.astype(dt), rep).reshape(pshape)
            b = np.repeat(bias.astype(dt), rep).reshape(pshape)
        y = d.reshape(x.shape) * s + b
        np.copyto(out, y, casting="unsafe")


class GroupNormalization_18(_GroupNorm):  # noqa: N801
    """Opset 18: ``scale`` and ``bias`` hold one value per group."""

    op_type = "GroupNormalization"
    plugin_version = "18"
    min_opset = 18
    max_opset = 20
    per_channel = False
    attributes: ClassVar[dict[str, Any]] = {"epsilon": 1e-5, "num_groups": REQUIRED}


class GroupNormalization(_GroupNorm):
    """Opset 21: ``scale`` and ``bias`` hold one value per channel."""

    plugin_version = "21"
    min_opset = 21
    attributes: ClassVar[dict[str, Any]] = {
        "epsilon": 1e-5, "num_groups": REQUIRED, "stash_type": 1}


class RMSNormalization(CpuPlugin):
    """Y = X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) * scale."""

    dtypes = NN_FLOATS
    plugin_version = "23"
    min_opset = 23
    attributes: ClassVar[dict[str, Any]] = {"axis": -1, "epsilon": 1e-5, "stash_type": 1}

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[1]]

    def compute(self, x: Array, scale: Array, *, out: Array, axis: int, epsilon: float,
                stash_type: int) -> None:
        a = norm_axis(axis, x.ndim)
        dt = _stash(stash_type, x)
        xm = x.astype(dt)
        ms = np.mean(xm * xm, axis=tuple(range(a, x.ndim)), keepdims=True)
        y = xm / np.sqrt(ms + dt.type(epsilon)) * scale.astype(dt)
        np.copyto(out, y, casting="unsafe")
