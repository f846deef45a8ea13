"""The compiled kernels (``_kernels.c``), loaded with ctypes, and their Python signatures.

Every array handed over is float32 and C-contiguous (the callers check, and fall back to the
NumPy kernels otherwise); sizes are passed as C longs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from . import _kernels

__all__ = ["Call", "bias_act", "dwconv2d", "dwconv2d_work", "fail_pool_scratch", "gemm",
           "gemm_available", "gemm_batch", "gemm_batch_call", "gemm_call", "im2col",
           "im2col_call", "lrn",
           "library_path", "pack_a", "pool2d", "pool2d_work", "pool_threads", "ptr", "run_calls",
           "scale_shift", "set_pool_threads", "unpack_a", "usable", "use_plain_gemm", "wino_in",
           "wino_in_call", "wino_out", "wino_out_call", "wino_weights"]

Array = NDArray[Any]
#: a compiled function and its arguments (addresses as ints), ready to run
Call = tuple[Callable[..., Any], tuple[Any, ...]]

_lib = ctypes.CDLL(_kernels.__file__)
_P, _L, _F, _I = ctypes.c_void_p, ctypes.c_long, ctypes.c_float, ctypes.c_int

_dwconv = _lib.mi_dwconv2d_f32
_dwconv.restype = None
_dwconv.argtypes = [_P] * 6 + [_L] * 16 + [_F, _F]

_pool = _lib.mi_pool2d_f32
_pool.restype = None
_pool.argtypes = [_P] * 3 + [_L] * 15 + [_I, _I]


_bias_act = _lib.mi_bias_act_f32
_bias_act.restype = None
_bias_act.argtypes = [_P, _L, _L, _L, _P, _L, _P, _L, _F, _F]


#: Winograd transforms by output tile size: F(2x2, 3x3) and F(4x4, 3x3) (_winograd.c)
_wino_in = {2: _lib.mi_wino_in_f32, 4: _lib.mi_wino4_in_f32}
_wino_out = {2: _lib.mi_wino_out_f32, 4: _lib.mi_wino4_out_f32}
_wino_weights = {2: _lib.mi_wino_weights_f32, 4: _lib.mi_wino4_weights_f32}
for _f in _wino_in.values():
    _f.restype = None
    _f.argtypes = [_P] * 3 + [_L] * 8
for _f in _wino_out.values():
    _f.restype = None
    _f.argtypes = [_P] * 5 + [_L] * 6 + [_F, _F]
for _f in _wino_weights.values():
    _f.restype = None
    _f.argtypes = [_P, _P, _L, _L]


_im2col = _lib.mi_im2col_f32
_im2col.restype = None
_im2col.argtypes = [_P] * 2 + [_L] * 15


_lrn = _lib.mi_lrn_f32
_lrn.restype = None
_lrn.argtypes = [_P] * 3 + [_L] * 4 + [_F] * 3


_scale_shift = _lib.mi_scale_shift_f32
_scale_shift.restype = None
_scale_shift.argtypes = [_P] * 4 + [_L] * 3 + [_F] * 2


_gemm = _lib.mi_gemm_f32
_gemm.restype = None
_gemm.argtypes = [_P, _L, _L, _L, _P, _L, _P, _L, _P, _P, _L, _F, _F]

_gemm_batch = _lib.mi_gemm_batch_f32
_gemm_batch.restype = None
_gemm_batch.argtypes = [_L, _P, _L, _P, _L, _L, _P, _L, _L, _L, _L, _L]

_pack = _lib.mi_gemm_pack_f32
_pack.restype = None
_pack.argtypes = [_P, _L, _L, _L, _P]

_lib.mi_gemm_available.restype = _I
_lib.mi_pool_get_threads.restype = _I
_lib.mi_pool_set_threads.argtypes = [_I]
_lib.mi_pool_set_threads.restype = None
_lib.mi_gemm_set_plain.argtypes = [_I]
_lib.mi_gemm_set_plain.restype = None
_lib.mi_pool_fail_scratch.argtypes = [_I]
_lib.mi_pool_fail_scratch.restype = None


def library_path() -> str:
    return str(_kernels.__file__)


def ptr(a: Array | None) -> int | None:
    """The address of an array's first element (None for None)."""
    return None if a is None else int(a.__array_interface__["data"][0])


def dwconv2d(x: Array, w: Array, bias: Array | None, res: Array | None, y: Array,
             work: Array, kernel: tuple[int, int], strides: tuple[int, int],
             dilations: tuple[int, int], begin: tuple[int, int], ext: tuple[int, int],
             lo: float, hi: float) -> None:
    """``y = clamp(depthwise_conv(x, w) + bias + res, lo, hi)``; ``work`` holds at least
    :func:`dwconv2d_work` floats."""
    n, c, h, wd = x.shape
    oh, ow = y.shape[2:]
    _dwconv(ptr(x), ptr(w), ptr(bias), ptr(res), ptr(y), ptr(work), n, c, h, wd, *kernel,
            *strides, *dilations, *begin, oh, ow, *ext, lo, hi)


def dwconv2d_work(ext: tuple[int, int], oh: int) -> int:
    return ext[0] * ext[1] + oh * ext[1]


def pool2d(x: Array, y: Array, work: Array, kernel: tuple[int, int], strides: tuple[int, int],
           dilations: tuple[int, int], begin: tuple[int, int], end: tuple[int, int],
           average: bool, include_pad: bool) -> None:
    """Max (or average) pooling of every (N, C) plane of ``x`` into ``y``; ``work`` holds at
    least :func:`pool2d_work` floats."""
    n, c, h, wd = x.shape
    oh, ow = y.shape[2:]
    _pool(ptr(x), ptr(y), ptr(work), n * c, h, wd, *kernel, *strides, *dilations, begin[0],
          begin[1], end[0], end[1], oh, ow, int(average), int(include_pad))


def pool2d_work(h: int, wd: int, oh: int, ow: int) -> int:
    return 2 * max(oh, h) * wd + oh + ow


def bias_act(y: Array, bias: Array | None, res: Array | None, lo: float, hi: float) -> None:
    """In place: ``y (N, M, ...) = clamp(y + bias[m] + res, lo, hi)`` in one pass."""
    m = y.shape[1]
    rows = y.shape[0] * m
    cols = y.size // max(rows, 1)
    _bias_act(ptr(y), rows, cols, cols, ptr(bias), m, ptr(res), cols, lo, hi)


def wino_in(x: Array, v: Array, rows: Array, begin: tuple[int, int], tw: int, ty0: int,
            ty1: int, tile: int = 2) -> None:
    """:func:`wino_in_call`, run."""
    run_calls([wino_in_call(x, v, rows, begin, tw, ty0, ty1, tile)])


def wino_in_call(x: Array, v: Array, rows: Array, begin: tuple[int, int], tw: int, ty0: int,
                 ty1: int, tile: int = 2) -> Call:
    """Winograd F(tile x tile, 3x3) input tiles of tile rows [ty0, ty1) of ``x`` (C, H, W) into
    ``v`` ((tile + 2)^2, C, T); ``rows`` holds ``2 * (tile + 2) * (tile * tw + 2)`` floats."""
    c, h, wd = x.shape
    return _wino_in[tile], (ptr(x), ptr(v), ptr(rows), c, h, wd, begin[0], begin[1], tw, ty0,
                            ty1)


def wino_out(mm: Array, y: Array, bias: Array | None, res: Array | None, rows: Array,
             tw: int, ty0: int, ty1: int, lo: float, hi: float, tile: int = 2) -> None:
    """:func:`wino_out_call`, run."""
    run_calls([wino_out_call(mm, y, bias, res, rows, tw, ty0, ty1, lo, hi, tile)])


def wino_out_call(mm: Array, y: Array, bias: Array | None, res: Array | None, rows: Array,
                  tw: int, ty0: int, ty1: int, lo: float, hi: float, tile: int = 2) -> Call:
    """Output tiles of tile rows [ty0, ty1) from ``mm`` ((tile + 2)^2, M, T) into ``y``
    (M, OH, OW), plus bias and residual (M, OH, OW), clamped; ``rows`` holds
    ``tile * tile * tw`` floats."""
    m, oh, ow = y.shape
    return _wino_out[tile], (ptr(mm), ptr(y), ptr(bias), ptr(res), ptr(rows), m, oh, ow, tw,
                             ty0, ty1, lo, hi)


def im2col_call(x: Array, cols: Array, kernel: tuple[int, int], strides: tuple[int, int],
                dilations: tuple[int, int], begin: tuple[int, int], rows: tuple[int, int],
                ow: int) -> Call:
    """``cols`` (N, C, KH, KW, r1 - r0, OW) = the windows of output rows ``rows`` = (r0, r1)
    of ``x`` (N, C, H, W), zero-padded; ``cols`` is C-contiguous, any shape of that size."""
    n, c, h, wd = x.shape
    return _im2col, (ptr(x), ptr(cols), n, c, h, wd, *kernel, *strides, *dilations, *begin,
                     *rows, ow)


def im2col(x: Array, cols: Array, kernel: tuple[int, int], strides: tuple[int, int],
           dilations: tuple[int, int], begin: tuple[int, int], rows: tuple[int, int],
           ow: int) -> None:
    """:func:`im2col_call`, run."""
    run_calls([im2col_call(x, cols, kernel, strides, dilations, begin, rows, ow)])


def wino_weights(w: Array, tile: int = 2) -> Array:
    """Winograd F(tile x tile, 3x3)'s U ((tile + 2)^2, M, C) = G g G^T for every 3x3 filter g
    of ``w`` (M, C, 3, 3), k = (tile + 2) * row + col (compiled: ResNet-50's 3x3 weights take a
    few ms, not the 200 ms of a NumPy version)."""
    w = np.ascontiguousarray(w, dtype=np.float32)
    u = np.empty(((tile + 2) ** 2, w.shape[0], w.shape[1]), np.float32)
    _wino_weights[tile](ptr(w), ptr(u), w.shape[0], w.shape[1])
    return u


def lrn(x: Array, y: Array, acc: Array, size: int, alpha: float, beta: float,
        bias: float) -> None:
    """ONNX LRN of ``x`` (N, C, ...) into ``y``; ``acc`` holds one plane (H*W...) of floats."""
    n, c = x.shape[:2]
    _lrn(ptr(x), ptr(y), ptr(acc), n, c, x.size // max(n * c, 1), size, alpha, beta, bias)


def scale_shift(x: Array, y: Array, a: Array, b: Array, lo: float, hi: float) -> None:
    """``y (N, C, ...) = clamp(x * a[c] + b[c], lo, hi)`` in one pass."""
    n, c = x.shape[:2]
    _scale_shift(ptr(x), ptr(y), ptr(a), ptr(b), n, c, x.size // max(n * c, 1), lo, hi)


def use_plain_gemm(plain: bool) -> None:
    """Tests: run the GEMM's plain C loops even where AVX-512 is present (the CPUs without
    it run them)."""
    _lib.mi_gemm_set_plain(int(plain))


def fail_pool_scratch(on: bool) -> None:
    """Tests: the pool's workers get no scratch (as when memory runs out), so every kernel
    that needs one runs its whole job on the calling thread instead."""
    _lib.mi_pool_fail_scratch(int(on))


def gemm_available() -> bool:
    """Whether the compiled GEMM runs its AVX-512 kernels here (otherwise the callers keep
    BLAS: the plain C fallback is only for correctness)."""
    return bool(_lib.mi_gemm_available())


def pack_a(a: Array) -> Array:
    """``a`` (M, K) packed for :func:`gemm`: panels of 8 rows, k-major (M * K floats)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    m, k = a.shape
    out = np.empty(m * k, np.float32)
    _pack(ptr(a), m, k, k, ptr(out))
    return out


def unpack_a(packed: Array, m: int, k: int) -> Array:
    """:func:`pack_a` undone: the (M, K) matrix."""
    full = m // 8 * 8
    out = np.empty((m, k), np.float32)
    flat = packed.reshape(-1)
    out[:full] = flat[: full * k].reshape(full // 8, k, 8).transpose(0, 2, 1).reshape(full, k)
    if m > full:
        out[full:] = flat[full * k: m * k].reshape(k, m - full).T
    return out


def gemm_call(ap: Array, m: int, k: int, b: Array, c: Array, bias: Array | None = None,
              res: Array | None = None, lo: float = -np.inf, hi: float = np.inf) -> Call:
    """``c (M, N) = clamp(A @ b + bias[:, None] + res, lo, hi)`` on the library's pool, with
    ``ap`` from :func:`pack_a`. ``b`` (K, N), ``c`` and ``res`` (M, N) may have any row
    stride (rows of floats, each row contiguous); ``bias`` (M,) contiguous."""
    n = c.shape[1]
    return _gemm, (ptr(ap), m, n, k, ptr(b), b.strides[0] // 4, ptr(c), c.strides[0] // 4,
                   ptr(bias), ptr(res), 0 if res is None else res.strides[0] // 4, lo, hi)


def gemm(ap: Array, m: int, k: int, b: Array, c: Array, bias: Array | None = None,
         res: Array | None = None, lo: float = -np.inf, hi: float = np.inf) -> None:
    """:func:`gemm_call`, run."""
    run_calls([gemm_call(ap, m, k, b, c, bias, res, lo, hi)])


def gemm_batch_call(ap: Array, m: int, k: int, b: Array, c: Array) -> Call:
    """``c[q] (M, N) = A_q @ b[q]`` for every q, with ``ap`` the concatenated :func:`pack_a`
    of each ``A_q`` (M, K); ``b`` (Q, K, N) and ``c`` (Q, M, N) contiguous."""
    q, _, n = b.shape
    return _gemm_batch, (q, ptr(ap), m * k, ptr(b), k * n, n, ptr(c), m * n, n, m, n, k)


def gemm_batch(ap: Array, m: int, k: int, b: Array, c: Array) -> None:
    """:func:`gemm_batch_call`, run."""
    run_calls([gemm_batch_call(ap, m, k, b, c)])


def run_calls(calls: Sequence[Call]) -> None:
    """Run compiled calls made by the ``*_call`` builders, in order. A node whose arrays are
    the same objects from run to run (an engine's arena views) keeps its list and runs it
    again: the addresses, sizes and strides in it stay valid while those objects live."""
    for fn, args in calls:
        fn(*args)


def pool_threads() -> int:
    """Threads the compiled GEMM's pool runs (default: the cores this process may use)."""
    return int(_lib.mi_pool_get_threads())


def set_pool_threads(n: int) -> None:
    """Set the pool's thread count (0: back to the default)."""
    _lib.mi_pool_set_threads(int(n))


def usable(*arrays: Array | None) -> bool:
    """Whether every array given is float32 and C-contiguous (None is fine)."""
    return all(a is None or (a.dtype == np.float32 and a.flags.c_contiguous) for a in arrays)


from . import _threads  # noqa: E402 - after the library: the controller reads its symbols

_threads.register()
