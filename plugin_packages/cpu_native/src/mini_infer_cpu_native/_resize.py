"""The compiled two-tap Resize of the last two axes (``_resize.c``): its tables and its call.

:func:`tables` turns the schema's plan of an ONNX Resize (linear or nearest, any coordinate
transformation but tf_crop_and_resize) into the source rows and columns of every output row
and column and the weight of the second one, with cpu_basic's coordinate and rounding rules
(:func:`mini_infer_cpu_plugins.ops.resize.axis_taps`); :func:`resize2d_call` checks the arrays
and makes the call.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops.resize import axis_taps

from mini_infer_core.plugin.arrays import NDArray

from ._abi import Resize2dArgs
from ._kernels import address
from ._native import Call, _call, _lib

__all__ = ["INDEX", "Tables", "resize2d_call", "tables"]

Array = NDArray[Any]
#: the C ``long`` the kernel's index tables hold
INDEX = np.dtype(f"i{ctypes.sizeof(ctypes.c_long)}")
#: (rows (oh, 2), row weights (oh), columns (ow, 2), column weights (ow))
Tables = tuple[Array, Array, Array, Array]

_resize2d = _lib.mi_resize2d_f32
_resize2d.argtypes = [ctypes.POINTER(Resize2dArgs)]
_resize2d.restype = ctypes.c_int


def _axis(in_n: int, step: Any, opts: dict[str, Any]) -> tuple[Array, Array] | None:
    """One axis' (out, 2) sources and (out,) weights; None: not two taps (cubic,
    antialiased downscaling, tf_crop_and_resize's outside values)."""
    if step is None:
        idx = np.arange(in_n, dtype=INDEX)
        return np.stack([idx, idx], axis=1), np.zeros(in_n, np.float32)
    idx, w, outside = axis_taps(in_n, step.size, step.scale, step.roi, opts)
    if outside is not None and outside.any():
        return None
    if w is None:
        return (np.ascontiguousarray(np.repeat(idx, 2, axis=1), INDEX),
                np.zeros(step.size, np.float32))
    if w.shape[1] != 2:
        return None
    # a + w1 (b - a) is w0 a + w1 b where the weights sum to 1 (they do: linear, and
    # exclude_outside's renormalised ones; 0 and 0 only when both neighbours are outside)
    if not np.allclose(w.sum(axis=1), 1.0):
        return None
    return np.ascontiguousarray(idx, INDEX), np.ascontiguousarray(w[:, 1], np.float32)


def tables(shape: Sequence[int], steps: Sequence[Any], opts: dict[str, Any]) -> Tables | None:
    """The kernel's tables for resizing ``shape`` by ``steps`` (the schema's plan), or None
    where the kernel does not apply: a mode other than linear and nearest, an axis other
    than the last two resized, tf_crop_and_resize."""
    if len(shape) < 2 or opts["mode"] not in ("linear", "nearest") or \
            opts["ctm"] == "tf_crop_and_resize":
        return None
    rank = len(shape)
    by_axis = {s.axis: s for s in steps}
    if any(a not in (rank - 2, rank - 1) for a in by_axis):
        return None
    rows = _axis(shape[-2], by_axis.get(rank - 2), opts)
    cols = _axis(shape[-1], by_axis.get(rank - 1), opts)
    if rows is None or cols is None:
        return None
    return rows[0], rows[1], cols[0], cols[1]


def _index(kernel: str, name: str, a: Array, rows: int, bound: int) -> int:
    if a.dtype != INDEX or not a.flags.c_contiguous or a.shape != (rows, 2):
        raise ValueError(f"{kernel}: {name} must be a C-contiguous ({rows}, 2) array of "
                         f"{INDEX}, not {a.dtype} {a.shape}")
    if a.size and (int(a.min()) < 0 or int(a.max()) >= bound):
        raise ValueError(f"{kernel}: {name} holds an index outside [0, {bound})")
    return int(a.ctypes.data)


def resize2d_call(x: Array, y: Array, tab: Tables, work: Array) -> Call:
    """The call that writes ``y`` (x's leading axes, then (oh, ow)) from ``x`` with ``tab``
    (:func:`tables`); ``work``: 2 * ow floats."""
    k = "mi_resize2d_f32"
    if x.ndim < 2 or y.ndim != x.ndim or y.shape[:-2] != x.shape[:-2]:
        raise ValueError(f"{k}: x {x.shape} and y {y.shape} must differ in their last two "
                         "axes only")
    iy, wy, ix, wx = tab
    h, wd = x.shape[-2:]
    oh, ow = y.shape[-2:]
    planes = x.size // max(h * wd, 1) if h * wd else int(np.prod(x.shape[:-2]))
    args = Resize2dArgs(
        address(x, x.size, False, k, "x"), address(y, y.size, True, k, "y"),
        _index(k, "iy", iy, oh, h), address(wy, oh, False, k, "wy"),
        _index(k, "ix", ix, ow, wd), address(wx, ow, False, k, "wx"),
        address(work, 2 * ow, True, k, "work"), planes, h, wd, oh, ow)
    return _call(_resize2d, args, x, y, iy, wy, ix, wx, work)
