"""Matrix products of any rank on the compiled GEMM (``mi_matmul_f32``), for the MatMul and
Gemm plugins: NumPy's ``matmul`` semantics (1-D operands promoted, batch dimensions
broadcast), each operand read through its own strides where the GEMM can read it that way.

* A (the left operand) is read in place through any strides: transposed, sliced, broadcast
  along the batch (stride 0). B is read in place where its rows are contiguous (its last
  stride one float); otherwise it is packed (one matrix: :func:`._native.pack_b`) or copied
  (a batch) into scratch on every run. A constant B comes packed from the build.
* A product whose B is the same for every batch entry (a weight) and whose rows of A, of the
  output and of the residual each follow one another at one stride (activations of any
  rank, contiguous) is one GEMM of all the rows; up to :data:`._vec.MAX_ROWS` rows (a
  classifier at batch 1, a decoder's step), one pass of ``_vec.c``'s matrix-vector kernel
  over B. Other batches are products of one shape:
  the last two batch dimensions in one call, a call per index of the ones before.
* The epilogue: ``y = clamp(alpha * A @ B + cbias + res, lo, hi)``, ``cbias`` one value per
  column (a bias along the last axis), ``res`` a tensor of the output's shape.

:func:`product_calls` returns the calls, which the plugins keep while their arrays stay the
same objects (an engine's arena views and constants).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mini_infer_core.plugin.arrays import NDArray

from . import _native, _vec
from ._native import Call, matmul_call, pack_b_call

__all__ = ["product_calls", "product_shapes"]

Array = NDArray[Any]


def product_shapes(ashape: tuple[int, ...], bshape: tuple[int, ...]
                   ) -> tuple[tuple[int, ...], int, int, int]:
    """(batch shape, M, K, N) of ``matmul`` on operands of these shapes (1-D promoted)."""
    a2 = (1, *ashape) if len(ashape) == 1 else ashape
    b2 = (*bshape, 1) if len(bshape) == 1 else bshape
    batch = tuple(int(d) for d in np.broadcast_shapes(a2[:-2], b2[:-2]))
    return batch, int(a2[-2]), int(a2[-1]), int(b2[-1])


def _row_stride(x: Array) -> int | None:
    """The stride (in elements) at which the rows of ``x`` (..., R, C) follow one another when
    its leading dimensions are merged into R, or None where they do not."""
    dims = [(int(d), int(s) // x.itemsize) for d, s in zip(x.shape[:-1], x.strides[:-1],
                                                             strict=True) if d != 1]
    if not dims:
        return int(x.shape[-1])
    for (_, outer), (d, inner) in zip(dims, dims[1:], strict=False):
        if outer != inner * d:
            return None
    return dims[-1][1]


def _as_rows(x: Array, stride: int) -> Array:
    """``x`` (..., R, C) as (1, 1, rows, C): the same elements, rows ``stride`` apart."""
    rows = int(np.prod(x.shape[:-1], dtype=np.int64))
    return as_strided(x, (1, 1, rows, x.shape[-1]),
                      (0, 0, stride * x.itemsize, x.strides[-1]), writeable=False)


def _four(x: Array, lead: tuple[int, ...]) -> Array:
    """``x`` (*batch, R, C) at the leading index ``lead`` as (P, Q, R, C)."""
    y: Array = x[lead]
    while y.ndim < 4:
        y = y[None]
    return y


def product_calls(a: Array, b: Array, out: Array, *, packed_b: Array | None = None,
                  panels: int = 1,
                  cbias: Array | None = None, res: Array | None = None,
                  rbias: Array | None = None, alpha: float = 1.0, lo: float = -np.inf,
                  hi: float = np.inf, scratch: Any = None) -> list[Call]:
    """The calls computing ``out = clamp(alpha * matmul(a, b) + rbias[:, None] + cbias + res,
    lo, hi)``.

    ``out`` C-contiguous float32 of matmul's shape; ``a``, ``b`` float32 of any strides;
    ``packed_b``: a 2-D B's :func:`._native.pack_b` panels (``b`` then gives only its shape),
    ``panels`` saying which (:func:`._native.matmul_call`'s ``b_packed``: 1 or 2);
    ``cbias`` (N,) contiguous; ``res`` of ``out``'s shape, C-contiguous; ``rbias`` (M,)
    contiguous, 2-D products only (Gemm's C of one column); ``scratch`` (cpu_basic's
    ``Scratch``) holds what a B whose rows are not contiguous becomes."""
    batch, m, k, n = product_shapes(a.shape, b.shape)
    full = (*batch, m, n)
    o = out.reshape(full)
    r = None if res is None else res.reshape(full)
    a4 = np.broadcast_to(a[None, :] if a.ndim == 1 else a, (*batch, m, k))
    calls: list[Call] = []
    b4: Array | None = None
    copied = None  # a B packed here on each run (panels of 48)
    if packed_b is None:
        b2 = b[:, None] if b.ndim == 1 else b
        b4 = np.broadcast_to(b2, (*batch, k, n))
        if n > 1 and b4.strides[-1] != b4.itemsize:  # rows not contiguous: a copy each run
            if b2.ndim == 2:
                packed_b = copied = _buffer(scratch, "packed_b", (k * n,))
                calls.append(pack_b_call(b2, packed_b))
                b4 = None
            else:
                copy = _buffer(scratch, "b_rows", b4.shape)
                calls.append((np.copyto, (copy, b4)))
                b4 = copy
    if rbias is not None and batch:
        raise ValueError("a bias per row is for 2-D products only")
    kw: dict[str, Any] = {"b_packed": 0 if b4 is not None else panels if copied is None
                          else 1, "cbias": cbias, "bias": rbias,
                          "alpha": alpha, "lo": lo, "hi": hi}
    shared = b4 is None or all(s == 0 or d == 1 for s, d in zip(
        b4.strides[:-2], batch, strict=True))
    a_rows = _row_stride(a4)
    if shared and a_rows is not None:  # one GEMM of every row
        rows = m * int(np.prod(batch, dtype=np.int64))
        bv = packed_b if b4 is None else b4[(0,) * len(batch)][None, None]
        assert bv is not None
        if rows <= _vec.MAX_ROWS:  # a few rows: B streamed once, at the memory's pace
            panel = 0 if b4 is not None else _native.B_PANEL if kw["b_packed"] == 1 \
                else _native.B_PANEL_AVX2
            calls.append(_vec.gemv_call(
                _as_rows(a4, a_rows)[0, 0], bv if b4 is None else bv[0, 0],
                o.reshape(rows, n), k, panel=panel,
                bias=rbias, cbias=cbias, res=None if r is None else r.reshape(rows, n),
                alpha=alpha, lo=lo, hi=hi))
            return calls
        calls.append(matmul_call(
            _as_rows(a4, a_rows), bv, o.reshape(1, 1, rows, n), k,
            res=None if r is None else r.reshape(1, 1, rows, n), **kw))
        return calls
    lead = batch[:-2]
    for index in np.ndindex(*lead) if lead else [()]:
        bv = packed_b if b4 is None else _four(b4, index)
        assert bv is not None
        calls.append(matmul_call(_four(a4, index), bv, _four(o, index), k,
                                 res=None if r is None else _four(r, index), **kw))
    return calls


def _buffer(scratch: Any, tag: str, shape: tuple[int, ...]) -> Array:
    if scratch is None:
        return np.empty(shape, np.float32)
    buf: Array = scratch.buffer(tag, shape, np.float32)
    return buf
