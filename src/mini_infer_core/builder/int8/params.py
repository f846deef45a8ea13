"""Quantization parameters: u8 asymmetric activations from a calibrated range, per-channel
symmetric s8 weights."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["act_params", "weight_params"]

Array = np.ndarray[Any, Any]


def act_params(lo: float, hi: float) -> tuple[float, int]:
    """The u8 scale (a float32 value) and zero point of the range [lo, hi] widened to hold 0."""
    rmin, rmax = min(lo, 0.0), max(hi, 0.0)
    scale = float(np.float32((rmax - rmin) / 255.0))
    if scale == 0.0 or not np.isfinite(scale):
        return 1.0, 0
    zp = int(np.clip(np.rint(-rmin / scale), 0, 255))
    return scale, zp


def weight_params(w: Array, axis: int) -> tuple[Array, Array]:
    """Per-channel symmetric s8 weights on ``axis``: (int8 values, float32 scales)."""
    others = tuple(k for k in range(w.ndim) if k != axis)
    amax = np.max(np.abs(w.astype(np.float64)), axis=others)
    scale = (amax / 127.0).astype(np.float32)
    scale[scale == 0] = 1.0
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w / scale.reshape(shape).astype(np.float64)), -127, 127)
    return q.astype(np.int8), scale
