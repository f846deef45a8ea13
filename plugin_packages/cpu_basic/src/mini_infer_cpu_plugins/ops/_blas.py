"""General matrix products through the BLAS that NumPy itself runs on.

``np.matmul`` copies any operand whose rows are not contiguous and always overwrites its
output. The BLAS routine underneath (``?gemm``) does neither: it reads matrices whose rows are
spaced by a leading dimension (so a row-band of a padded image is a matrix, without a copy)
and computes ``C = alpha * A @ B + beta * C`` (so products accumulate in place). Convolution
by kernel taps (:mod:`.conv`) is built on exactly that.

The library is the one NumPy loaded (found in the process's memory map, else through
threadpoolctl, which also reports and limits its threads): OpenBLAS as NumPy's wheels ship
it, with its symbol prefix/suffix and 64-bit integers where it has them, or any BLAS exporting
plain ``cblas_?gemm``. Where none is found, or ``MINI_INFER_BLAS=numpy`` is set, :func:`gemm`
computes the same with NumPy.

Every operand is a NumPy array, never a pointer: a call whose operands are not views the BLAS
can read in place is computed by NumPy instead, so nothing outside an array is ever touched.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

__all__ = ["available", "gemm", "library"]

Array = NDArray[Any]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_DTYPES = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}


def _mapped_blas() -> list[str]:
    """Shared libraries with "blas" in their name mapped into this process (Linux:
    /proc/self/maps), a read of ~0.1 ms where threadpoolctl's full scan takes ~9 ms of the
    first run."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            fields = [line.split(None, 5) for line in fh if "blas" in line.lower()]
    except OSError:
        return []
    paths = {f[5].strip() for f in fields
             if len(f) == 6 and "blas" in f[5].rsplit("/", 1)[-1].lower()}
    return sorted((p for p in paths if p.startswith("/") and ".so" in p),
                  key=lambda p: "numpy" not in p)


def _candidates() -> list[str]:
    """Paths of the BLAS libraries loaded in this process, NumPy's first."""
    np.add(1, 1)  # NumPy's BLAS is loaded with numpy itself; make sure it is imported
    mapped = _mapped_blas()
    if mapped:
        return mapped
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - a core dependency
        return []
    libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    libs.sort(key=lambda i: "numpy" not in str(i.get("filepath", "")))
    return [str(i["filepath"]) for i in libs if i.get("filepath")]


@cache
def _routine(kind: str) -> tuple[Callable[..., None], str] | None:
    """``cblas_<kind>gemm`` of NumPy's BLAS and the library's path, or None."""
    if os.environ.get("MINI_INFER_BLAS", "").lower() == "numpy":
        return None
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_", ""):
            for suffix in ("64_", ""):
                fn = getattr(lib, f"{prefix}cblas_{kind}gemm{suffix}", None)
                if fn is None:
                    continue
                i = ctypes.c_int64 if suffix == "64_" else ctypes.c_int32
                real = ctypes.c_float if kind == "s" else ctypes.c_double
                ptr = ctypes.c_void_p
                fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, i, i, i, real, ptr, i,
                               ptr, i, real, ptr, i]
                fn.restype = None
                return fn, path
    return None


def library() -> str | None:
    """Path of the BLAS library :func:`gemm` calls directly (None: NumPy computes)."""
    found = _routine("s")
    return None if found is None else found[1]


def available(dtype: Any) -> bool:
    """Whether :func:`gemm` on ``dtype`` runs in the BLAS directly."""
    kind = _DTYPES.get(np.dtype(dtype))
    return kind is not None and _routine(kind) is not None


def _layout(m: Array) -> tuple[int, int] | None:
    """(transpose flag, leading dimension) of a 2-D view the BLAS reads in place, else None."""
    rows, cols = m.shape
    s0, s1 = m.strides
    size = m.itemsize
    if s0 % size or s1 % size:
        return None
    if s1 == size or cols == 1:
        ld = s0 // size if rows > 1 else max(cols, 1)
        return (_NO_TRANS, ld) if ld >= max(cols, 1) else None
    if s0 == size or rows == 1:
        ld = s1 // size
        return (_TRANS, ld) if ld >= max(rows, 1) else None
    return None


def gemm(a: Array, b: Array, c: Array, alpha: float = 1.0, beta: float = 0.0) -> None:
    """``c = alpha * a @ b + beta * c`` for 2-D float32/float64 arrays (views welcome).

    ``c`` must not overlap ``a`` or ``b``. With ``beta=0`` the old contents of ``c`` are
    ignored (NaN included), as BLAS specifies.
    """
    (m, k), (k2, n) = a.shape, b.shape
    if c.shape != (m, n) or k != k2:
        raise ValueError(f"gemm: shapes {a.shape} @ {b.shape} -> {c.shape} do not match")
    kind = _DTYPES.get(c.dtype)
    found = _routine(kind) if kind is not None and a.dtype == b.dtype == c.dtype else None
    la, lb, lc = (None, None, None) if found is None else (_layout(a), _layout(b), _layout(c))
    if found is None or la is None or lb is None or lc is None or lc[0] != _NO_TRANS or \
            not c.flags.writeable or min(m, n, k) == 0:
        _numpy_gemm(a, b, c, alpha, beta)
        return
    found[0](_ROW_MAJOR, la[0], lb[0], m, n, k, alpha, a.ctypes.data, la[1], b.ctypes.data,
             lb[1], beta, c.ctypes.data, lc[1])


def _numpy_gemm(a: Array, b: Array, c: Array, alpha: float, beta: float) -> None:
    if beta == 0.0:
        np.matmul(a, b, out=c)
        if alpha != 1.0:
            c *= alpha
        return
    product = np.matmul(a, b)
    if alpha != 1.0:
        product *= alpha
    if beta != 1.0:
        c *= beta
    c += product
