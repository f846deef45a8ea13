"""Calls of ``_vec.c``: products of a few rows (:func:`gemv_call`), the mean of each row
(:func:`row_mean_call`) and each row times its scale (:func:`row_scale_call`), checked once
and run again by :func:`._native.run_calls`."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

from ._abi import GemvArgs, RowsArgs
from ._kernels import address, strided
from ._native import Call, _batched, _call, _kernel

__all__ = ["MAX_ROWS", "PANEL", "gemv_call", "row_logsumexp_call", "row_mean_call",
           "row_scale_call"]

Array = NDArray[Any]
#: rows at most for which the MatMul and Gemm plugins take :func:`gemv_call` (it takes any
#: number, two at a time): 3 and 4 rows ran as fast or faster on the GEMM's tiles
MAX_ROWS = 2
#: the column tile of the kernel: a packed B's panels are a multiple of it wide
PANEL = 24


_gemv = _kernel("mi_gemv_f32", GemvArgs)
_row_mean = _kernel("mi_row_mean_f32", RowsArgs)
_row_scale = _kernel("mi_row_scale_f32", RowsArgs)
_row_logsumexp = _kernel("mi_row_logsumexp_f32", RowsArgs)


def gemv_call(a: Array, b: Array, c: Array, k: int, *, panel: int = 0,
              bias: Array | None = None, cbias: Array | None = None, res: Array | None = None,
              alpha: float = 1.0, lo: float = -np.inf, hi: float = np.inf) -> Call:
    """``c (M, N) = clamp(alpha * a @ B + bias[:, None] + cbias + res, lo, hi)``: ``a`` (M, K)
    any strides; ``b`` the K * N floats of :func:`._native.pack_b` in panels of ``panel``
    columns (24 or 48), or (panel 0) (K, N) with contiguous rows; ``c`` and ``res`` (M, N)
    rows contiguous (``res``'s stride may be 0); ``bias`` (M,), ``cbias`` (N,)
    contiguous."""
    kn = "mi_gemv_f32"
    if c.ndim != 2:
        raise ValueError(f"{kn}: c must have 2 dimensions, not shape {c.shape}")
    m, n = (int(d) for d in c.shape)
    pc, sc = _batched(kn, "c", c[None, None], (1, 1, m, n), True)
    pa, sa = strided(a[None, None], (1, 1, m, k), False, kn, "a")
    if panel:
        if panel % PANEL:
            raise ValueError(f"{kn}: panels of {panel} columns; the kernel reads multiples of "
                             f"{PANEL}")
        pb, ldb = address(b, k * n, False, kn, "b"), 0
    else:
        pb, sb = _batched(kn, "b", b[None, None], (1, 1, k, n))
        ldb = sb[2]
    pr, sr = _batched(kn, "res", None if res is None else res[None, None], (1, 1, m, n))
    return _call(_gemv, GemvArgs(
        pa, pb, pc, address(bias, m, False, kn, "bias"), address(cbias, n, False, kn, "cbias"),
        pr, m, n, k, sa[2], sa[3], ldb, sc[2], sr[2], panel, alpha, lo, hi),
        a, b, c, bias, cbias, res)


def _rows(kn: str, x: Array, rows: int, cols: int) -> int:
    p: int = address(x, rows * cols, False, kn, "x")
    return p


def row_mean_call(x: Array, y: Array, rows: int, cols: int) -> Call:
    """``y[r] = mean(x[r, :])`` of ``x`` viewed as (rows, cols); both C-contiguous."""
    kn = "mi_row_mean_f32"
    return _call(_row_mean, RowsArgs(_rows(kn, x, rows, cols), None,
                                     address(y, rows, True, kn, "y"), rows, cols), x, y)


def row_logsumexp_call(x: Array, y: Array, rows: int, cols: int) -> Call:
    """``y[r] = log(sum(exp(x[r, :])))`` of ``x`` viewed as (rows, cols), its largest finite
    value taken out; both C-contiguous."""
    kn = "mi_row_logsumexp_f32"
    return _call(_row_logsumexp, RowsArgs(_rows(kn, x, rows, cols), None,
                                          address(y, rows, True, kn, "y"), rows, cols), x, y)


def row_scale_call(x: Array, s: Array, y: Array, rows: int, cols: int) -> Call:
    """``y[r, :] = x[r, :] * s[r]`` of ``x`` and ``y`` viewed as (rows, cols), ``s`` (rows,);
    all C-contiguous."""
    kn = "mi_row_scale_f32"
    return _call(_row_scale, RowsArgs(_rows(kn, x, rows, cols), address(s, rows, False, kn, "s"),
                                      address(y, rows * cols, True, kn, "y"), rows, cols),
                 x, s, y)
