"""Normalisation over trailing axes or channel groups: LayerNormalization,
GroupNormalization (opset 18: per-group scale/bias; opset 21: per-channel), RMSNormalization
(schemas in :mod:`mini_infer_core.ops.layer_norm`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import layer_norm as schema
from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CpuPlugin
from ._nn_util import put

__all__ = ["LayerNormalization", "GroupNormalization_18", "GroupNormalization",
           "RMSNormalization"]

Array = NDArray[Any]


class LayerNormalization(CpuPlugin, schema.LayerNormalization):
    def compute(self, x: Array, scale: Array, b: Array | None = None, *, out: Any,
                axis: int, epsilon: float, stash_type: int) -> None:
        a = norm_axis(axis, x.ndim)
        rows = int(np.prod(x.shape[:a], dtype=np.int64))
        dt = self.stash_dtype(x.dtype)
        xm = x.reshape(rows, int(np.prod(x.shape[a:], dtype=np.int64))).astype(dt)
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


class _GroupNorm(CpuPlugin, schema.GroupNormBase):
    def compute(self, x: Array, scale: Array, bias: Array, *, out: Array, epsilon: float,
                num_groups: int, **_: Any) -> None:
        n, c = x.shape[:2]
        self.check_groups(c)
        dt = self.stash_dtype(x.dtype)
        xg = x.reshape(n, num_groups, -1).astype(dt)
        mean = xg.mean(axis=2, keepdims=True)
        d = xg - mean
        var = np.mean(d * d, axis=2, keepdims=True)
        d /= np.sqrt(var + dt.type(epsilon))
        pshape = (1, c) + (1,) * (x.ndim - 2)
        s, b = (self.per_channel(p.astype(dt), c).reshape(pshape) for p in (scale, bias))
        y = d.reshape(x.shape) * s + b
        np.copyto(out, y, casting="unsafe")


GroupNormalization_18, GroupNormalization = (
    type(base.__name__, (_GroupNorm, base), {"__module__": __name__})
    for base in (schema.GroupNormalization_18, schema.GroupNormalization))


class RMSNormalization(CpuPlugin, schema.RMSNormalization):
    def compute(self, x: Array, scale: Array, *, out: Array, axis: int, epsilon: float,
                stash_type: int) -> None:
        a = norm_axis(axis, x.ndim)
        dt = self.stash_dtype(x.dtype)
        xm = x.astype(dt)
        ms = np.mean(xm * xm, axis=tuple(range(a, x.ndim)), keepdims=True)
        y = xm / np.sqrt(ms + dt.type(epsilon)) * scale.astype(dt)
        np.copyto(out, y, casting="unsafe")
