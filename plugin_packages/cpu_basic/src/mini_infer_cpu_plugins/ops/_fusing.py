"""Helpers for plugins that absorb the elementwise nodes following them (``fuse``)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["per_channel"]


def per_channel(c: Any, channels: int, rank: int) -> np.ndarray[Any, Any] | None:
    """A constant that broadcasts per channel over an NC... tensor of ``rank``, as a
    ``(channels,)`` array; None when it varies along any other axis (or is not constant)."""
    if c is None:
        return None
    arr = np.asarray(c)
    if arr.size == 1:
        return np.full(channels, arr.reshape(-1)[0], dtype=arr.dtype)
    if arr.ndim > rank or rank < 2:
        return None
    shape = (1,) * (rank - arr.ndim) + arr.shape
    if shape[1] != channels or any(d != 1 for i, d in enumerate(shape) if i != 1):
        return None
    return arr.reshape(channels)
