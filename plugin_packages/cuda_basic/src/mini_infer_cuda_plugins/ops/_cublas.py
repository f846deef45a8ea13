"""Matrix products on cuBLAS called through ctypes, so that they can be captured in CUDA graphs.

CuPy refuses every cuBLAS call while a stream is capturing ("calling cuBLAS API during stream
capture is currently unsupported"), and Conv, Gemm and MatMul are matrix products: without
this module no CNN could run as a graph. cuBLAS itself supports capture when the handle has
a workspace of its own (``cublasSetWorkspace``), which is what this module gives it.

* :func:`plan_matmul` turns a NumPy-semantics ``out = a @ b`` (batch dimensions broadcast, any
  operand row- or column-major) into ``cublasGemmStridedBatchedEx`` calls, from shapes and
  strides alone: it needs no GPU and is tested against ``np.matmul`` through a NumPy model of
  the cuBLAS call. Layouts it cannot express return None (the caller falls back to CuPy).
* :func:`matmul` runs the plan on the current CuPy stream with a per-thread handle.

Row-major ``C = A @ B`` is column-major ``C^T = B^T @ A^T``: the first cuBLAS operand is ``b``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import itertools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["GemmCall", "available", "bind", "matmul", "plan_matmul"]

OP_N, OP_T = 0, 1
#: cudaDataType and cublasComputeType_t per element type (CuPy's defaults: float16 products
#: accumulate in float32, float32 stays exact float32 — no TF32)
_TYPES = {np.dtype(np.float32): (0, 68), np.dtype(np.float16): (2, 68),
          np.dtype(np.float64): (1, 70)}
_GEMM_DEFAULT = -1
#: alpha = 1 and beta = 0, per compute type (float64's scalars are doubles, the rest floats)
_SCALARS = {68: (ctypes.c_float(1.0), ctypes.c_float(0.0)),
            70: (ctypes.c_double(1.0), ctypes.c_double(0.0))}
#: the handle's own workspace (cuBLAS's advice for Hopper), so nothing is allocated in a capture
WORKSPACE_BYTES = 32 << 20
#: most separate cuBLAS calls one product may take (batch dimensions that do not collapse)
MAX_CALLS = 64
_INT_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class GemmCall:
    """One ``cublasGemmStridedBatchedEx`` in column-major terms; offsets, leading dimensions
    and strides in elements. ``x`` is the first cuBLAS operand (our ``b``), ``y`` the second
    (our ``a``), ``c`` the output."""

    op_x: int
    op_y: int
    m: int
    n: int
    k: int
    x_off: int
    ldx: int
    stride_x: int
    y_off: int
    ldy: int
    stride_y: int
    c_off: int
    ldc: int
    stride_c: int
    batch: int


def _operand(rows: int, cols: int, s0: int, s1: int) -> tuple[int, int] | None:
    """(op, ld) of a rows x cols row-major-semantics matrix with element strides (s0, s1)
    such that op(the stored column-major matrix) is its transpose; None if neither a row-
    nor a column-major layout."""
    if s1 == 1 or cols == 1:  # row-major: stored column-major cols x rows
        ld = s0 if rows > 1 else cols
        return (OP_N, ld) if ld >= max(1, cols) else None
    if s0 == 1 or rows == 1:  # column-major: stored rows x cols, op T
        ld = s1 if cols > 1 else rows
        return (OP_T, ld) if ld >= max(1, rows) else None
    return None


def plan_matmul(a_shape: Sequence[int], a_strides: Sequence[int], b_shape: Sequence[int],
                b_strides: Sequence[int], out_shape: Sequence[int],
                out_strides: Sequence[int]) -> list[GemmCall] | None:
    """The cuBLAS calls computing ``out = a @ b`` (strides in elements), or None where the
    layout has no such form (1-D operands, an empty inner dimension, negative strides, an output
    whose rows are not contiguous, more than :data:`MAX_CALLS` calls)."""
    if len(a_shape) < 2 or len(b_shape) < 2 or len(out_shape) < 2:
        return None
    if min(*a_strides, *b_strides, *out_strides) < 0:
        return None
    m, k = a_shape[-2:]
    k2, n = b_shape[-2:]
    if k != k2 or tuple(out_shape[-2:]) != (m, n):
        return None
    if m * n == 0:
        return []
    if k == 0 or len(a_shape) - 2 > len(out_shape) - 2 or len(b_shape) - 2 > len(out_shape) - 2:
        return None
    if out_strides[-1] != 1 and n > 1:
        return None
    ldc = out_strides[-2] if m > 1 else n
    if ldc < max(1, n):
        return None
    ya = _operand(m, k, a_strides[-2], a_strides[-1])
    xb = _operand(k, n, b_strides[-2], b_strides[-1])
    if ya is None or xb is None or max(m, n, k, ya[1], xb[1], ldc) > _INT_MAX:
        return None
    # batch dimensions, right-aligned; a broadcast operand has stride 0 there
    batch = list(out_shape[:-2])
    dims: list[tuple[int, int, int, int]] = []  # (size, stride_a, stride_b, stride_out)
    for i, size in enumerate(batch):
        strides = []
        for shape, st in ((a_shape, a_strides), (b_shape, b_strides)):
            j = i - (len(batch) - (len(shape) - 2))
            if j < 0 or shape[j] == 1:
                strides.append(0)
            elif shape[j] == size:
                strides.append(st[j])
            else:
                return None
        if size != 1:
            dims.append((size, strides[0], strides[1], out_strides[i]))
    # merge neighbours whose strides nest; the innermost run is one strided-batched call
    groups: list[list[int]] = []  # [size, sa, sb, so], outermost first
    for size, sa, sb, so in dims:
        if groups and all(prev == cur * size for prev, cur in
                          zip(groups[-1][1:], (sa, sb, so), strict=True)):
            groups[-1] = [groups[-1][0] * size, sa, sb, so]
        else:
            groups.append([size, sa, sb, so])
    inner = groups.pop() if groups else [1, 0, 0, 0]
    outer = groups
    count = int(np.prod([g[0] for g in outer], dtype=np.int64))
    if count > MAX_CALLS or inner[0] > _INT_MAX:
        return None
    calls = []
    for index in itertools.product(*(range(g[0]) for g in outer)):
        oa = sum(i * g[1] for i, g in zip(index, outer, strict=True))
        ob = sum(i * g[2] for i, g in zip(index, outer, strict=True))
        oc = sum(i * g[3] for i, g in zip(index, outer, strict=True))
        calls.append(GemmCall(xb[0], ya[0], n, m, k, ob, xb[1], inner[2], oa, ya[1], inner[1],
                              oc, ldc, inner[3], inner[0]))
    return calls


#: the plans of the layouts met so far (each run of an engine meets the same ones)
_cached_plan = functools.lru_cache(maxsize=1024)(plan_matmul)


# -- the library -------------------------------------------------------------------------------

@functools.cache
def _library() -> Any:
    """The libcublas CuPy already loaded (found in the process's mappings), else one by its
    usual names; None where there is none."""
    try:
        from cupy_backends.cuda.libs import cublas  # noqa: F401 - makes CuPy load libcublas
    except Exception:  # noqa: BLE001 - no CuPy cuBLAS: the caller falls back
        pass
    paths: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                path = line.rsplit(" ", 1)[-1].strip()
                name = path.rsplit("/", 1)[-1]
                if name.startswith("libcublas.so") and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    for candidate in (*paths, "libcublas.so.13", "libcublas.so.12", "libcublas.so.11",
                      "libcublas.so"):
        try:
            return bind(ctypes.CDLL(candidate))
        except (OSError, AttributeError):
            continue
    return None


def bind(lib: Any) -> Any:
    """``lib`` with the signatures of the four cuBLAS functions used here declared (the tests
    bind a host library with the same symbols)."""
    vp, i, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
    fn = lib.cublasGemmStridedBatchedEx
    fn.argtypes = [vp, i, i, i, i, i, vp, vp, i, i, ll, vp, i, i, ll, vp, vp, i, i, ll, i, i, i]
    fn.restype = i
    for name, args in (("cublasCreate_v2", [ctypes.POINTER(vp)]),
                       ("cublasSetStream_v2", [vp, vp]),
                       ("cublasSetWorkspace_v2", [vp, vp, ctypes.c_size_t])):
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = i
    return lib


def available() -> bool:
    """Whether cuBLAS can be called directly here."""
    return _library() is not None


class _Handle:
    """A cuBLAS handle of one thread and device, with its own workspace. Handles live as long
    as the process: a graph captured on one thread may be replayed after that thread ended,
    and its kernels still use the workspace. A new thread with a dead one's id reuses its
    handle, which is safe because the two never run at the same time."""

    def __init__(self, lib: Any, cupy: Any) -> None:
        self.lib = lib
        self.ptr = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(self.ptr)), "cublasCreate")
        self.workspace = cupy.empty(WORKSPACE_BYTES, np.uint8)
        self.stream: int | None = None

    def on(self, stream: int) -> None:
        if stream != self.stream:  # setting the stream resets the workspace: set both
            _check(self.lib.cublasSetStream_v2(self.ptr, ctypes.c_void_p(stream)),
                   "cublasSetStream")
            _check(self.lib.cublasSetWorkspace_v2(self.ptr,
                                                  ctypes.c_void_p(self.workspace.data.ptr),
                                                  WORKSPACE_BYTES), "cublasSetWorkspace")
            self.stream = stream


_handles: dict[tuple[int, int], _Handle] = {}
_handles_lock = threading.Lock()


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"{what} failed with cuBLAS status {status}")


def matmul(a: Any, b: Any, out: Any) -> bool:
    """``out[...] = a @ b`` for CuPy arrays on the current stream; False (nothing done) where
    the types or layout are not covered or cuBLAS cannot be loaded."""
    dtype = out.dtype
    if a.dtype != dtype or b.dtype != dtype or dtype not in _TYPES:
        return False
    lib = _library()
    if lib is None:
        return False
    item = dtype.itemsize
    calls = _cached_plan(a.shape, tuple(s // item for s in a.strides), b.shape,
                         tuple(s // item for s in b.strides), out.shape,
                         tuple(s // item for s in out.strides))
    if calls is None:
        return False
    import cupy

    key = (threading.get_ident(), cupy.cuda.Device().id)
    handle = _handles.get(key)
    if handle is None:
        with _handles_lock:
            handle = _handles[key] = _Handle(lib, cupy)
    handle.on(cupy.cuda.get_current_stream().ptr)
    data_type, compute = _TYPES[dtype]
    one, zero = _SCALARS[compute]
    pa, pb, pc = a.data.ptr, b.data.ptr, out.data.ptr
    for c in calls:
        _check(lib.cublasGemmStridedBatchedEx(
            handle.ptr, c.op_x, c.op_y, c.m, c.n, c.k, ctypes.byref(one),
            ctypes.c_void_p(pb + c.x_off * item), data_type, c.ldx, c.stride_x,
            ctypes.c_void_p(pa + c.y_off * item), data_type, c.ldy, c.stride_y,
            ctypes.byref(zero), ctypes.c_void_p(pc + c.c_off * item), data_type, c.ldc,
            c.stride_c, c.batch, compute, _GEMM_DEFAULT), "cublasGemmStridedBatchedEx")
    return True
