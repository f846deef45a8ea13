"""Sliding windows of Conv and the pools on NumPy arrays: strided window views and padded
copies. The geometry itself (``Window``, ``window_params``, ``resolve``, output sizes) is in
:mod:`mini_infer_core.plugin.shapes`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import Window

__all__ = ["pad_into", "windows_view"]


def windows_view(xp: NDArray[Any], lead: int, w: Window, out_dims: Sequence[int],
                 kernel_first: bool = True) -> NDArray[Any]:
    """A read-only strided view of every window of ``xp`` (its first ``lead`` dims kept).

    ``kernel_first``: shape ``lead + kernel + out_dims`` (im2col order), else
    ``lead + out_dims + kernel``.
    """
    nd = len(out_dims)
    sp = xp.strides[lead:]
    k_shape = tuple(int(k) for k in w.kernel)
    k_strides = tuple(sp[i] * w.dilations[i] for i in range(nd))
    o_strides = tuple(sp[i] * w.strides[i] for i in range(nd))
    if kernel_first:
        shape = xp.shape[:lead] + k_shape + tuple(out_dims)
        strides = xp.strides[:lead] + k_strides + o_strides
    else:
        shape = xp.shape[:lead] + tuple(out_dims) + k_shape
        strides = xp.strides[:lead] + o_strides + k_strides
    return as_strided(xp, shape=shape, strides=strides, writeable=False)


def pad_into(buf: NDArray[Any], x: NDArray[Any], begin: Sequence[int]) -> NDArray[Any]:
    """Copy ``x`` into the interior of ``buf`` (its border was filled once, when made)."""
    lead = x.ndim - len(begin)
    idx = (slice(None),) * lead + tuple(
        slice(b, b + n) for b, n in zip(begin, x.shape[lead:], strict=True))
    np.copyto(buf[idx], x)
    return buf
