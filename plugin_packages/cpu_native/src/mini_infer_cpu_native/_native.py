"""The compiled kernels, loaded with ctypes, and the Python wrappers that call them.

Each kernel takes one struct of arguments (``_args.h``, mirrored in :mod:`._abi`, which also
checks the library's ABI version and struct layout when it loads: a library that differs
makes this module's import fail with :class:`._abi.AbiError`). Each wrapper checks what it
hands over before the call: every array float32 (native byte order), aligned, C-contiguous
(or, for the GEMM's operands, rows of contiguous floats a whole number of floats apart),
writable where the kernel writes, shaped consistently, and large enough for every element
the kernel touches (counted from the sizes and strides it passes); a violation raises
``TypeError`` or ``ValueError`` naming the kernel and the argument, and nothing is called.
The kernels themselves refuse (``MI_EARGS``) sizes below 0 and strides, dilations or kernel
sizes below 1, which :func:`run_calls` reports as a ``ValueError``.

The ``*_call`` builders check and make the struct once and return a :data:`Call`, which
:func:`run_calls` runs again and again (an engine's Conv keeps its list while its arrays stay
the same objects): a replay is one ctypes call per kernel, with no check and no conversion.
A call keeps the arrays its struct points to alive.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

from . import _abi
from ._kernels import address, rows, strided

__all__ = ["NO_ACT", "Act", "Call", "bias_act", "dwconv2d", "dwconv2d_work", "fail_pool_scratch",
           "fail_pool_start", "gemm", "gemm_available", "gemm_batch", "gemm_batch_call",
           "gemm_call", "im2col", "im2col_call", "library_path", "lrn", "pack_a", "pool2d",
           "pool2d_call", "pool2d_work", "POOL_STATS", "pool_start_error", "pool_started",
           "pool_stats", "pool_threads",
           "run_calls", "scale_shift", "set_pool_adaptive", "set_pool_threads", "unpack_a",
           "usable", "use_plain_gemm",
           "wino_in", "wino_in_call", "wino_out", "wino_out_call", "wino_weights"]
__all__ += ["B_PANEL", "B_PANEL_AVX2", "gemm_isa", "matmul", "matmul_call", "pack_b", "pack_b_call",
            "unpack_b", "use_gemm_isa"]  # MatMul and Gemm on the compiled GEMM

Array = NDArray[Any]
#: a function and its arguments, ready to run: a compiled kernel and a pointer to its
#: argument struct, or a Python function returning None
Call = tuple[Callable[..., Any], tuple[Any, ...]]
#: the activation an epilogue applies after its clamp: (code, alpha, beta), code 0 (none) or
#: the ``MI_ACT_*`` of sigmoid, swish (alpha), hard_sigmoid (alpha, beta) or hard_swish
#: (:data:`._act.ACT_OPS`; ``_epi.h``)
Act = tuple[int, float, float]
NO_ACT: Act = (0, 0.0, 0.0)

_lib = _abi.load()


def _kernel(name: str, args: type[ctypes.Structure], restype: Any = ctypes.c_int) -> Any:
    fn = getattr(_lib, name)
    fn.argtypes = [ctypes.POINTER(args)]
    fn.restype = restype
    return fn


class Kernels:
    """A module's kernels, each bound to its struct (``_abi``'s, by name) on first use::

        _k = Kernels(gemm=("mi_gemm_f32", "GemmArgs"))
        _run(_k.gemm, _abi.GemmArgs(...))

    so that a process makes the ctypes Structures and pointer types of the kernels it calls
    only (about 50 us each; issue 30). The attribute stays bound after its first use."""

    def __init__(self, **kernels: tuple[str, str]) -> None:
        self._kernels = kernels

    def __getattr__(self, name: str) -> Any:
        try:
            symbol, struct = self._kernels[name]
        except KeyError:
            raise AttributeError(f"no kernel {name!r}") from None
        fn = _kernel(symbol, getattr(_abi, struct))
        setattr(self, name, fn)
        return fn


_k = Kernels(
    dwconv=("mi_dwconv2d_f32", "DwConv2dArgs"),
    pool=("mi_pool2d_f32", "Pool2dArgs"),
    bias_act=("mi_bias_act_f32", "BiasActArgs"),
    im2col=("mi_im2col_f32", "Im2colArgs"),
    scale_shift=("mi_scale_shift_f32", "ScaleShiftArgs"),
    lrn=("mi_lrn_f32", "LrnArgs"),
    wino_in=("mi_wino_in_f32", "WinoInArgs"),
    wino_out=("mi_wino_out_f32", "WinoOutArgs"),
    wino_weights=("mi_wino_weights_f32", "WinoWeightsArgs"),
    pack=("mi_gemm_pack_f32", "GemmPackArgs"),
    gemm=("mi_gemm_f32", "GemmArgs"),
    gemm_batch=("mi_gemm_batch_f32", "GemmBatchArgs"),
    pack_b=("mi_gemm_pack_b_f32", "GemmPackBArgs"),
    matmul=("mi_matmul_f32", "MatMulArgs"),
)

for _name, _restype, _argtypes in (
        ("mi_gemm_available", ctypes.c_int, []), ("mi_pool_get_threads", ctypes.c_int, []),
        ("mi_pool_set_threads", None, [ctypes.c_int]), ("mi_pool_started", ctypes.c_int, []),
        ("mi_pool_start_error", ctypes.c_int, []), ("mi_gemm_set_plain", None, [ctypes.c_int]),
        ("mi_pool_fail_scratch", None, [ctypes.c_int]),
        ("mi_pool_fail_start", None, [ctypes.c_int]),
        ("mi_pool_stats", ctypes.c_int, [ctypes.POINTER(ctypes.c_long), ctypes.c_int]),
        ("mi_pool_reset_stats", None, []),
        ("mi_gemm_isa", ctypes.c_int, []), ("mi_gemm_set_isa", ctypes.c_int, [ctypes.c_int])):
    getattr(_lib, _name).restype = _restype
    getattr(_lib, _name).argtypes = _argtypes


def library_path() -> str:
    return str(_lib._name)


def _refused(fn: Any, args: tuple[Any, ...]) -> ValueError:
    """The error for a kernel that returned MI_EARGS, with the values it was given."""
    struct = args[0].contents if args and hasattr(args[0], "contents") else None
    values = "" if struct is None else ", ".join(
        f"{f[0]}={getattr(struct, f[0])}" for f in struct._fields_
        if f[1] is not ctypes.c_void_p)
    return ValueError(f"{getattr(fn, '__name__', fn)} refused its arguments (a size below 0, "
                      f"a kernel size, stride or dilation below 1, or a tile other than 2 or "
                      f"4): {values}")


def _run(fn: Any, args: ctypes.Structure) -> None:
    """Call a kernel now (the arrays are the caller's arguments: alive during the call)."""
    if fn(args):
        raise _refused(fn, (ctypes.pointer(args),))


def _call(fn: Any, args: ctypes.Structure, *arrays: Any) -> Call:
    """A call to run later, which keeps ``arrays`` (those ``args`` points to) alive."""
    args._keep = arrays
    return fn, (ctypes.pointer(args),)


def run_calls(calls: Sequence[Call]) -> None:
    """Run calls made by the ``*_call`` builders, in order. A node whose arrays are the same
    objects from run to run (an engine's arena views) keeps its list and runs it again: the
    addresses, sizes and strides in it stay valid while those arrays live, and each call
    keeps its own alive."""
    for fn, args in calls:
        if fn(*args):
            raise _refused(fn, args)


def _dims(kernel: str, name: str, a: Array, ndim: int) -> tuple[int, ...]:
    if a.ndim != ndim:
        raise ValueError(f"{kernel}: {name} must have {ndim} dimensions, not shape {a.shape}")
    return tuple(a.shape)


def _same(kernel: str, what: str, got: Any, want: Any) -> None:
    if got != want:
        raise ValueError(f"{kernel}: {what} is {got}, and must be {want}")


def dwconv2d(x: Array, w: Array, bias: Array | None, res: Array | None, y: Array,
             work: Array, kernel: tuple[int, int], strides: tuple[int, int],
             dilations: tuple[int, int], begin: tuple[int, int], ext: tuple[int, int],
             lo: float, hi: float) -> None:
    """``y = clamp(depthwise_conv(x, w) + bias + res, lo, hi)``: x (N, C, H, W), w (C, 1,
    KH, KW) or any C-contiguous array of C * KH * KW floats, bias (C), res and y (N, C, OH,
    OW); ``ext`` the padded extent the windows read, ``begin`` the padding before it;
    ``work`` holds at least :func:`dwconv2d_work` floats."""
    k = "mi_dwconv2d_f32"
    n, c, h, wd = _dims(k, "x", x, 4)
    _same(k, "y's (N, C)", _dims(k, "y", y, 4)[:2], (n, c))
    oh, ow = y.shape[2:]
    kh, kw = kernel
    sh, sw = strides
    dh, dw = dilations
    hp, wp = ext
    reach = ((oh - 1) * sh + (kh - 1) * dh + 1 if oh else 0,
             (ow - 1) * sw + (kw - 1) * dw + 1 if ow else 0)
    if hp < reach[0] or wp < reach[1] or not 0 <= begin[0] <= hp or not 0 <= begin[1] <= wp:
        raise ValueError(f"{k}: the padded extent {ext} (padding before: {begin}) must cover "
                         f"the {reach} the windows of a {oh}x{ow} output read")
    out = n * c * oh * ow
    _run(_k.dwconv, _abi.DwConv2dArgs(
        address(x, n * c * h * wd, False, k, "x"), address(w, c * kh * kw, False, k, "w"),
        address(bias, c, False, k, "bias"), address(res, out, False, k, "res"),
        address(y, out, True, k, "y"),
        address(work, dwconv2d_work(ext, oh), True, k, "work"),
        n, c, h, wd, kh, kw, sh, sw, dh, dw, begin[0], begin[1], oh, ow, hp, wp, lo, hi))


def dwconv2d_work(ext: tuple[int, int], oh: int) -> int:
    return ext[0] * ext[1] + oh * ext[1]


def pool2d(x: Array, y: Array, work: Array, kernel: tuple[int, int], strides: tuple[int, int],
           dilations: tuple[int, int], begin: tuple[int, int], end: tuple[int, int],
           average: bool, include_pad: bool) -> None:
    """Max (or average) pooling of every (N, C) plane of ``x`` into ``y``; ``work`` holds at
    least :func:`pool2d_work` floats."""
    run_calls([pool2d_call(x, y, work, kernel, strides, dilations, begin, end, average,
                           include_pad)])


def pool2d_call(x: Array, y: Array, work: Array, kernel: tuple[int, int],
                strides: tuple[int, int], dilations: tuple[int, int], begin: tuple[int, int],
                end: tuple[int, int], average: bool, include_pad: bool) -> Call:
    """:func:`pool2d`'s call, to run (again) with :func:`run_calls`."""
    k = "mi_pool2d_f32"
    n, c, h, wd = _dims(k, "x", x, 4)
    _same(k, "y's (N, C)", _dims(k, "y", y, 4)[:2], (n, c))
    oh, ow = y.shape[2:]
    return _call(_k.pool, _abi.Pool2dArgs(
        address(x, n * c * h * wd, False, k, "x"), address(y, n * c * oh * ow, True, k, "y"),
        address(work, pool2d_work(h, wd, oh, ow), True, k, "work"), n * c, h, wd, *kernel,
        *strides, *dilations, begin[0], begin[1], end[0], end[1], oh, ow, int(average),
        int(include_pad)), x, y, work)


def pool2d_work(h: int, wd: int, oh: int, ow: int) -> int:
    return 2 * max(oh, h) * wd + oh + ow


def bias_act(y: Array, bias: Array | None, res: Array | None, lo: float, hi: float) -> None:
    """In place: ``y (N, M, ...) = clamp(y + bias[m] + res, lo, hi)`` in one pass; ``res``
    of y's size, in y's order."""
    k = "mi_bias_act_f32"
    if y.ndim < 2:
        raise ValueError(f"{k}: y must have (N, M, ...) dimensions, not shape {y.shape}")
    m = y.shape[1]
    rows_ = y.shape[0] * m
    cols = y.size // max(rows_, 1)
    _run(_k.bias_act, _abi.BiasActArgs(
        address(y, y.size, True, k, "y"), address(bias, m, False, k, "bias"),
        address(res, y.size, False, k, "res"), rows_, cols, cols, m, cols, lo, hi))


def _tile(kernel: str, tile: int) -> int:
    if tile not in (2, 4):
        raise ValueError(f"{kernel}: the output tile is {tile}x{tile}; Winograd runs 2x2 or "
                         "4x4")
    return (tile + 2) ** 2


def _tile_rows(kernel: str, ty0: int, ty1: int, tw: int) -> int:
    if not 0 <= ty0 <= ty1 or tw < 0:
        raise ValueError(f"{kernel}: tile rows [{ty0}, {ty1}) of {tw} tiles: not a range")
    return (ty1 - ty0) * tw


def wino_in(x: Array, v: Array, rows: Array, begin: tuple[int, int], tw: int, ty0: int,
            ty1: int, tile: int = 2) -> None:
    """:func:`wino_in_call`, run."""
    run_calls([wino_in_call(x, v, rows, begin, tw, ty0, ty1, tile)])


def wino_in_call(x: Array, v: Array, rows: Array, begin: tuple[int, int], tw: int, ty0: int,
                 ty1: int, tile: int = 2) -> Call:
    """Winograd F(tile x tile, 3x3) input tiles of tile rows [ty0, ty1) of ``x`` (C, H, W) into
    ``v`` ((tile + 2)^2, C, T); ``rows`` holds ``2 * (tile + 2) * (tile * tw + 2)`` floats."""
    k = "mi_wino_in_f32"
    nk = _tile(k, tile)
    c, h, wd = _dims(k, "x", x, 3)
    t = _tile_rows(k, ty0, ty1, tw)
    return _call(_k.wino_in, _abi.WinoInArgs(
        address(x, c * h * wd, False, k, "x"), address(v, nk * c * t, True, k, "v"),
        address(rows, 2 * (tile + 2) * (tile * tw + 2), True, k, "rows"), c, h, wd, begin[0],
        begin[1], tw, ty0, ty1, tile), x, v, rows)


def wino_out(mm: Array, y: Array, bias: Array | None, res: Array | None, rows: Array,
             tw: int, ty0: int, ty1: int, lo: float, hi: float, tile: int = 2,
             act: Act = NO_ACT) -> None:
    """:func:`wino_out_call`, run."""
    run_calls([wino_out_call(mm, y, bias, res, rows, tw, ty0, ty1, lo, hi, tile, act)])


def wino_out_call(mm: Array, y: Array, bias: Array | None, res: Array | None, rows: Array,
                  tw: int, ty0: int, ty1: int, lo: float, hi: float, tile: int = 2,
                  act: Act = NO_ACT) -> Call:
    """Output tiles of tile rows [ty0, ty1) from ``mm`` ((tile + 2)^2, M, T) into ``y``
    (M, OH, OW), plus bias and residual (M, OH, OW), clamped, then ``act`` (:data:`Act`);
    ``rows`` holds
    ``tile * tile * tw`` floats; ``tw`` tiles cover a row of ``y``, and the tile rows lie
    in ``y``."""
    k = "mi_wino_out_f32"
    nk = _tile(k, tile)
    m, oh, ow = _dims(k, "y", y, 3)
    t = _tile_rows(k, ty0, ty1, tw)
    if tile * tw < ow or (ty1 > ty0 and tile * (ty1 - 1) >= oh):
        raise ValueError(f"{k}: tile rows [{ty0}, {ty1}) of {tw} {tile}x{tile} tiles do not "
                         f"match y's {oh}x{ow} (each row of tiles must cover the width, and "
                         "each lie in the height)")
    out = m * oh * ow
    return _call(_k.wino_out, _abi.WinoOutArgs(
        address(mm, nk * m * t, False, k, "mm"), address(y, out, True, k, "y"),
        address(bias, m, False, k, "bias"), address(res, out, False, k, "res"),
        address(rows, tile * tile * tw, True, k, "rows"), m, oh, ow, tw, ty0, ty1, lo, hi,
        tile, *act), mm, y, bias, res, rows)


def im2col_call(x: Array, cols: Array, kernel: tuple[int, int], strides: tuple[int, int],
                dilations: tuple[int, int], begin: tuple[int, int], rows: tuple[int, int],
                ow: int) -> Call:
    """``cols`` (N, C, KH, KW, r1 - r0, OW) = the windows of output rows ``rows`` = (r0, r1)
    of ``x`` (N, C, H, W), zero-padded; ``cols`` is C-contiguous, any shape of that size
    or larger."""
    k = "mi_im2col_f32"
    n, c, h, wd = _dims(k, "x", x, 4)
    kh, kw = kernel
    if not 0 <= rows[0] <= rows[1] or ow < 0:
        raise ValueError(f"{k}: output rows {rows} of {ow} columns: not a range")
    return _call(_k.im2col, _abi.Im2colArgs(
        address(x, n * c * h * wd, False, k, "x"),
        address(cols, n * c * kh * kw * (rows[1] - rows[0]) * ow, True, k, "cols"), n, c, h,
        wd, kh, kw, *strides, *dilations, *begin, *rows, ow), x, cols)


def im2col(x: Array, cols: Array, kernel: tuple[int, int], strides: tuple[int, int],
           dilations: tuple[int, int], begin: tuple[int, int], rows: tuple[int, int],
           ow: int) -> None:
    """:func:`im2col_call`, run."""
    run_calls([im2col_call(x, cols, kernel, strides, dilations, begin, rows, ow)])


def wino_weights(w: Array, tile: int = 2) -> Array:
    """Winograd F(tile x tile, 3x3)'s U ((tile + 2)^2, M, C) = G g G^T for every 3x3 filter g
    of ``w`` (M, C, 3, 3), k = (tile + 2) * row + col (compiled: ResNet-50's 3x3 weights take a
    few ms, not the 200 ms of a NumPy version)."""
    k = "mi_wino_weights_f32"
    nk = _tile(k, tile)
    w = np.ascontiguousarray(w, dtype=np.float32)
    m, c, *taps = _dims(k, "w", w, 4)
    _same(k, "w's kernel", tuple(taps), (3, 3))
    u = np.empty((nk, m, c), np.float32)
    _run(_k.wino_weights, _abi.WinoWeightsArgs(address(w, w.size, False, k, "w"),
                                        address(u, u.size, True, k, "u"), m, c, tile))
    return u


def lrn(x: Array, y: Array, acc: Array, size: int, alpha: float, beta: float,
        bias: float) -> None:
    """ONNX LRN of ``x`` (N, C, ...) into ``y`` (x's size); ``acc`` holds one plane (H*W...)
    of floats."""
    k = "mi_lrn_f32"
    if x.ndim < 2:
        raise ValueError(f"{k}: x must have (N, C, ...) dimensions, not shape {x.shape}")
    n, c = x.shape[:2]
    plane = x.size // max(n * c, 1)
    _run(_k.lrn, _abi.LrnArgs(address(x, x.size, False, k, "x"), address(y, x.size, True, k, "y"),
                       address(acc, plane, True, k, "acc"), n, c, plane, size, alpha, beta,
                       bias))


def scale_shift(x: Array, y: Array, a: Array, b: Array, lo: float, hi: float) -> None:
    """``y (N, C, ...) = clamp(x * a[c] + b[c], lo, hi)`` in one pass (y: x's size)."""
    k = "mi_scale_shift_f32"
    if x.ndim < 2:
        raise ValueError(f"{k}: x must have (N, C, ...) dimensions, not shape {x.shape}")
    n, c = x.shape[:2]
    _run(_k.scale_shift, _abi.ScaleShiftArgs(
        address(x, x.size, False, k, "x"), address(a, c, False, k, "a"),
        address(b, c, False, k, "b"), address(y, x.size, True, k, "y"), n, c,
        x.size // max(n * c, 1), lo, hi))


def use_plain_gemm(plain: bool) -> None:
    """Tests: run the GEMM's plain C loops even where a vector kernel could run (the CPUs
    without AVX2 run them)."""
    _lib.mi_gemm_set_plain(int(plain))


def fail_pool_scratch(on: bool) -> None:
    """Tests: the pool's workers get no scratch (as when memory runs out), so every kernel
    that needs one runs its whole job on the calling thread instead."""
    _lib.mi_pool_fail_scratch(int(on))


def fail_pool_start(after: int | None) -> None:
    """Tests: only ``after`` more of the pool's workers start; starting the next ones fails
    as ``pthread_create`` does when the system has no thread to give (None: no limit)."""
    _lib.mi_pool_fail_start(-1 if after is None else int(after))


def gemm_available() -> bool:
    """Whether the compiled GEMM runs vector kernels here, AVX-512 or AVX2 + FMA (otherwise
    the callers keep BLAS: the plain C fallback is only for correctness)."""
    return bool(_lib.mi_gemm_available())


def pack_a(a: Array, out: Array | None = None) -> Array:
    """``a`` (M, K) packed for :func:`gemm`: panels of 8 rows, k-major (M * K floats), in
    ``out`` where given (a contiguous float32 vector of M * K: a part of a larger one, so
    that the packings of several matrices need no concatenating copy)."""
    k = "mi_gemm_pack_f32"
    a = np.ascontiguousarray(a, dtype=np.float32)
    m, kk = _dims(k, "a", a, 2)
    if out is None:
        out = np.empty(m * kk, np.float32)
    elif out.dtype != np.float32 or out.shape != (m * kk,):
        raise ValueError(f"{k}: out must be a float32 vector of {m * kk} elements, not "
                         f"{out.dtype} {out.shape}")
    _run(_k.pack, _abi.GemmPackArgs(address(a, m * kk, False, k, "a"),
                             address(out, m * kk, True, k, "out"), m, kk, kk))
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
              res: Array | None = None, lo: float = -np.inf, hi: float = np.inf,
              act: Act = NO_ACT) -> Call:
    """``c (M, N) = act(clamp(A @ b + bias[:, None] + res, lo, hi))`` (:data:`Act`) on the
    library's pool, with
    ``ap`` from :func:`pack_a`. ``b`` (K, N), ``c`` and ``res`` (M, N) may have any row
    stride (rows of contiguous floats; ``res``'s may be 0: one row for all); ``bias`` (M,)
    contiguous."""
    kn = "mi_gemm_f32"
    n = _dims(kn, "c", c, 2)[1]
    pb, ldb = rows(b, k, n, False, kn, "b")
    pc, ldc = rows(c, m, n, True, kn, "c")
    pr, ldr = rows(res, m, n, False, kn, "res")
    return _call(_k.gemm, _abi.GemmArgs(address(ap, m * k, False, kn, "ap"), pb, pc,
                                 address(bias, m, False, kn, "bias"), pr, m, n, k, ldb, ldc,
                                 ldr, lo, hi, *act), ap, b, c, bias, res)


def gemm(ap: Array, m: int, k: int, b: Array, c: Array, bias: Array | None = None,
         res: Array | None = None, lo: float = -np.inf, hi: float = np.inf) -> None:
    """:func:`gemm_call`, run."""
    run_calls([gemm_call(ap, m, k, b, c, bias, res, lo, hi)])


def gemm_batch_call(ap: Array, m: int, k: int, b: Array, c: Array) -> Call:
    """``c[q] (M, N) = A_q @ b[q]`` for every q, with ``ap`` the concatenated :func:`pack_a`
    of each ``A_q`` (M, K); ``b`` (Q, K, N) and ``c`` (Q, M, N) contiguous."""
    kn = "mi_gemm_batch_f32"
    q, kb, n = _dims(kn, "b", b, 3)
    _same(kn, "b's K", kb, k)
    _same(kn, "c's shape", _dims(kn, "c", c, 3), (q, m, n))
    return _call(_k.gemm_batch, _abi.GemmBatchArgs(
        address(ap, q * m * k, False, kn, "ap"), address(b, b.size, False, kn, "b"),
        address(c, c.size, True, kn, "c"), q, m * k, k * n, m * n, n, n, m, n, k), ap, b, c)


def gemm_batch(ap: Array, m: int, k: int, b: Array, c: Array) -> None:
    """:func:`gemm_batch_call`, run."""
    run_calls([gemm_batch_call(ap, m, k, b, c)])


# ---- MatMul and Gemm on the compiled GEMM ----

#: the GEMM kernels by the level mi_gemm_isa reports
_ISAS = ("plain", "avx2", "avx512")
#: columns per panel of :func:`pack_b`
B_PANEL = 48
#: the narrower panels of ``pack_b(b, B_PANEL_AVX2)``: one AVX2 tile's columns, K rows of 96
#: contiguous bytes (a tile reading half of a 48-column panel touched two lines of three per
#: k, 32 KiB of L1 for 256 k, and ran 15-30% slower on BERT's and ViT's linear layers)
B_PANEL_AVX2 = 24


def gemm_isa() -> str:
    """The compiled GEMM's kernels in use: ``"avx512"``, ``"avx2"`` (AVX2 + FMA) or
    ``"plain"`` (C loops)."""
    return _ISAS[int(_lib.mi_gemm_isa())]


def use_gemm_isa(isa: str | None) -> str:
    """Tests: run the kernels of ``isa`` (``"plain"``, ``"avx2"``, ``"avx512"``), or the best
    this CPU has where it lacks them or ``isa`` is None; returns the kernels now in use."""
    level = -1 if isa is None else _ISAS.index(isa)
    return _ISAS[int(_lib.mi_gemm_set_isa(level))]


def pack_b(b: Array, width: int = B_PANEL) -> Array:
    """``b`` (K, N), any strides, packed for :func:`matmul_call`'s ``b_packed``: panels of
    ``width`` columns (:data:`B_PANEL`, or :data:`B_PANEL_AVX2`), each K rows of its width
    (K * N floats)."""
    if width not in (B_PANEL, B_PANEL_AVX2):
        raise ValueError(f"pack_b: panels of {width} columns; the GEMM reads {B_PANEL} or "
                         f"{B_PANEL_AVX2}")
    out = np.empty(b.shape[0] * b.shape[1] if b.ndim == 2 else 0, np.float32)
    if width == B_PANEL or b.ndim != 2:
        run_calls([pack_b_call(b, out)])
        return out
    k = b.shape[0]  # each panel of 24 is one (narrow) panel of pack_b_call's
    run_calls([pack_b_call(b[:, j: j + width], out[j * k: min(j + width, b.shape[1]) * k])
               for j in range(0, b.shape[1], width)])
    return out


def pack_b_call(b: Array, out: Array) -> Call:
    """:func:`pack_b` of ``b`` into ``out`` (K * N floats, contiguous), to run later."""
    kn = "mi_gemm_pack_b_f32"
    kk, n = _dims(kn, "b", b, 2)
    pb, (rs, cs) = strided(b, (kk, n), False, kn, "b")
    return _call(_k.pack_b, _abi.GemmPackBArgs(pb, address(out, kk * n, True, kn, "out"), kk, n, rs,
                                        cs), b, out)


def unpack_b(packed: Array, k: int, n: int, width: int = B_PANEL) -> Array:
    """:func:`pack_b` (panels of ``width`` columns) undone: the (K, N) matrix."""
    full = n // width * width
    flat = packed.reshape(-1)
    out = np.empty((k, n), np.float32)
    out[:, :full] = flat[: full * k].reshape(full // width, k, width).transpose(
        1, 0, 2).reshape(k, full)
    if n > full:
        out[:, full:] = flat[full * k: n * k].reshape(k, n - full)
    return out


def _batched(kernel: str, name: str, x: Array | None, shape: tuple[int, int, int, int],
             writable: bool = False) -> tuple[int, tuple[int, ...]]:
    """(address, strides in floats) of a 4-D operand read through its strides; its rows
    (last axis) contiguous where it has more than one column."""
    p, st = strided(x, shape, writable, kernel, name)
    if x is not None and shape[3] > 1 and st[3] != 1:
        raise ValueError(f"{kernel}: {name}'s rows are not contiguous (strides "
                         f"{x.strides}); the kernel reads each row as one block")
    return p, st


def matmul_call(a: Array, b: Array, c: Array, k: int, *, a_packed: bool = False,
                b_packed: bool | int = False, bias: Array | None = None, cbias: Array | None = None,
                res: Array | None = None, alpha: float = 1.0, lo: float = -np.inf,
                hi: float = np.inf) -> Call:
    """``c[p, q] (M, N) = clamp(alpha * A[p, q] @ B[p, q] + bias[:, None] + cbias + res[p, q],
    lo, hi)`` for every (p, q) of ``c`` (P, Q, M, N), on the library's pool; each output one
    thread's sum in k order.

    ``a`` (P, Q, M, K): any strides (transposed, broadcast), or with ``a_packed`` the M * K
    floats of :func:`pack_a`, the same for every product. ``b`` (P, Q, K, N) with contiguous
    rows, any other strides, or with ``b_packed`` the K * N floats of :func:`pack_b`
    (``b_packed`` True or 1: panels of :data:`B_PANEL`, 2: of :data:`B_PANEL_AVX2`). ``c``
    rows contiguous, its elements apart; ``res`` (P, Q, M, N) rows contiguous (broadcast:
    stride 0); ``bias`` (M,), ``cbias`` (N,) contiguous."""
    kn = "mi_matmul_f32"
    bp, bq, m, n = _dims(kn, "c", c, 4)
    pc, sc = _batched(kn, "c", c, (bp, bq, m, n), True)
    sa: tuple[int, ...]
    sb: tuple[int, ...]
    if a_packed:
        pa, sa = address(a, m * k, False, kn, "a"), (0, 0, 0, 0)
    else:
        pa, sa = strided(a, (bp, bq, m, k), False, kn, "a")
    if b_packed:
        pb, sb = address(b, k * n, False, kn, "b"), (0, 0, 0, 0)
    else:
        pb, sb = _batched(kn, "b", b, (bp, bq, k, n))
    pr, sr = _batched(kn, "res", res, (bp, bq, m, n))
    return _call(_k.matmul, _abi.MatMulArgs(
        pa, pb, pc, address(bias, m, False, kn, "bias"), address(cbias, n, False, kn, "cbias"),
        pr, m, n, k, sa[2], sa[3], sb[2], sc[2], sr[2], bp, bq, sa[0], sa[1], sb[0], sb[1],
        sc[0], sc[1], sr[0], sr[1], int(a_packed), _b_packed(b_packed), alpha, lo, hi),
        a, b, c, bias, cbias, res)


def _b_packed(b_packed: bool | int) -> int:
    """mi_matmul_args.b_packed: 0 (read in place), 1 (panels of 48) or 2 (of 24)."""
    if int(b_packed) not in (0, 1, 2):
        raise ValueError(f"mi_matmul_f32: b_packed {b_packed!r}: 0 (in place), 1 (panels of "
                         f"{B_PANEL}) or 2 (panels of {B_PANEL_AVX2})")
    return int(b_packed)


def matmul(a: Array, b: Array, c: Array, k: int, **kw: Any) -> None:
    """:func:`matmul_call`, run."""
    run_calls([matmul_call(a, b, c, k, **kw)])


def pool_threads() -> int:
    """Threads a job of the compiled kernels' pool uses (default: the cores this process may
    use; fewer once a worker could not be started: see :func:`pool_started`)."""
    return int(_lib.mi_pool_get_threads())


def pool_started() -> int:
    """Threads the pool has started, the caller included (workers start at the first job
    that needs them)."""
    return int(_lib.mi_pool_started())


def pool_start_error() -> int:
    """The ``errno`` of the last worker that could not be started (0: none)."""
    return int(_lib.mi_pool_start_error())


#: the figures of :func:`pool_stats`, in ``mi_pool_stats``'s order (``_pool.h``)
POOL_STATS = ("parallel", "solo", "contended", "signs", "chunks", "caller_chunks", "own_ns",
              "wait_ns", "slept")


def pool_stats(reset: bool = False) -> dict[str, int]:
    """What the pool did since the last reset: jobs run in ``parallel``, on the caller alone
    (``solo``: :func:`set_pool_adaptive`) or because another thread's job held the pool
    (``contended``), ``signs`` of contention seen (a stall, or workers that ran no chunk:
    each starts a contended time, in which the workers sleep after every job, ``_pool.c``),
    ``chunks`` of the parallel jobs and how many of them the caller ran (``caller_chunks``),
    the ns callers spent on their own chunks (``own_ns``) and then waiting for the workers'
    (``wait_ns``), and waits that went to sleep (``slept``). ``reset``: start counting again
    after reading."""
    out = (ctypes.c_long * len(POOL_STATS))()
    _lib.mi_pool_stats(out, len(POOL_STATS))
    if reset:
        _lib.mi_pool_reset_stats()
    return dict(zip(POOL_STATS, (int(v) for v in out), strict=True))


def set_pool_adaptive(mode: str) -> None:
    """Tests and benchmarks: the pool's contention watch ``"on"`` (the default), ``"off"``
    (the workers spin after every job, as on a quiet machine), ``"solo"`` (every job runs on
    its caller alone), ``"short"`` (a contended time for good: the workers sleep after every
    job and every job wakes them) or ``"legacy"`` (as before the watch: spins that yield the
    core, jobs on the caller alone after a stall; for benchmarks' comparisons)."""
    _lib.mi_pool_set_adaptive({"off": 0, "on": 1, "solo": 2, "short": 3, "legacy": 4}[mode])


def set_pool_threads(n: int) -> None:
    """Set the pool's thread count (0: back to the default); the pool tries again to start
    workers it could not start before."""
    _lib.mi_pool_set_threads(int(n))


def usable(*arrays: Array | None) -> bool:
    """Whether every array given is float32, C-contiguous and aligned (None is fine): the
    arrays the compiled kernels take (the plugins hand others to cpu_basic's)."""
    return all(a is None or (a.dtype == np.float32 and a.flags.c_contiguous
                             and a.flags.aligned) for a in arrays)


from . import _threads  # noqa: E402 - after the library: the controller reads its symbols

_threads.register(_lib)
