"""The channel-blocked kernels' calls (``_blocked.c``; the plugins' side is :mod:`.blocked`):
the ctypes mirrors of the argument structs (checked against ``mi_blocked_sizes`` at import),
the weight packing, and one function per kernel that checks its arrays and makes the call."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

from ._native import Act, Call, _call, _kernel, _lib

__all__ = ["ISA", "STEM_CHANNELS", "binary_call", "concat_call", "conv_call", "group_ranges",
           "pack_dense", "pack_depthwise", "pack_grouped", "padzero_call", "pool_call",
           "reformat_call", "resize_call", "split_call"]

Array = NDArray[Any]
_P = ctypes.c_void_p
_L = ctypes.c_long
_F = ctypes.c_float


class BConvArgs(ctypes.Structure):
    _fields_ = [("x", _P), ("w", _P), ("bias", _P), ("res", _P), ("y", _P),
                *((f, _L) for f in ("n", "c_in", "cb_in", "h", "wd", "c_out", "cb_out", "oh",
                                    "ow", "kh", "kw", "sh", "sw", "dh", "dw", "pt", "pl", "k",
                                    "depthwise")),
                ("lo", _F), ("hi", _F), ("act", _L), ("alpha", _F), ("beta", _F),
                ("group", _L), ("c_w", _L), ("x_linear", _L)]


class BPoolArgs(ctypes.Structure):
    _fields_ = [("x", _P), ("y", _P),
                *((f, _L) for f in ("n", "cb", "h", "wd", "oh", "ow", "kh", "kw", "sh", "sw",
                                    "dh", "dw", "pt", "pl", "pb", "pr", "k", "average",
                                    "include_pad"))]


class BBinaryArgs(ctypes.Structure):
    _fields_ = [("a", _P), ("b", _P), ("y", _P),
                *((f, _L) for f in ("n", "cb", "hw", "k", "bmode", "nbi", "op")),
                ("lo", _F), ("hi", _F), ("shift", _P)]


class BPadArgs(ctypes.Structure):
    _fields_ = [("y", _P), *((f, _L) for f in ("n", "cb", "hw", "k", "c"))]


class BConcatArgs(ctypes.Structure):
    _fields_ = [("xs", _P), ("cs", _P), ("y", _P),
                *((f, _L) for f in ("count", "n", "hw", "k"))]


class BSplitArgs(ctypes.Structure):
    _fields_ = [("x", _P), ("ys", _P), ("cs", _P),
                *((f, _L) for f in ("count", "n", "hw", "k"))]


class BResizeArgs(ctypes.Structure):
    _fields_ = [("x", _P), ("y", _P), ("rows", _P), ("cols", _P), ("ry", _P), ("rx", _P),
                *((f, _L) for f in ("n", "cb", "h", "wd", "oh", "ow", "k"))]


class BReformatArgs(ctypes.Structure):
    _fields_ = [("x", _P), ("y", _P), *((f, _L) for f in ("n", "c", "hw", "k", "to_blocked"))]


_STRUCTS = (BConvArgs, BPoolArgs, BBinaryArgs, BPadArgs, BConcatArgs, BSplitArgs, BResizeArgs,
            BReformatArgs)
_lib.mi_blocked_isa.restype, _lib.mi_blocked_isa.argtypes = ctypes.c_int, []
_lib.mi_blocked_sizes.restype, _lib.mi_blocked_sizes.argtypes = None, [ctypes.POINTER(_L)]
_sizes = (_L * len(_STRUCTS))()
_lib.mi_blocked_sizes(_sizes)
if [ctypes.sizeof(s) for s in _STRUCTS] != list(_sizes):  # pragma: no cover - a build bug
    raise ImportError(f"mini_infer_cpu_native._blocked: the structs' sizes {list(_sizes)} "
                      "differ from blocked.py's mirrors; reinstall mini-infer-cpu-native")

_conv = _kernel("mi_bconv2d_f32", BConvArgs)
_reformat = _kernel("mi_breformat_f32", BReformatArgs)
_pool = _kernel("mi_bpool2d_f32", BPoolArgs)
_binary = _kernel("mi_bbinary_f32", BBinaryArgs)
_padzero = _kernel("mi_bpadzero_f32", BPadArgs)
_concat = _kernel("mi_bconcat_f32", BConcatArgs)
_split = _kernel("mi_bsplit_f32", BSplitArgs)
_resize = _kernel("mi_bresize_f32", BResizeArgs)

#: the block sizes this CPU's kernels run (bit 0: 8, bit 1: 16)
ISA = int(_lib.mi_blocked_isa())


def _ptr(a: Array | None) -> int | None:
    return None if a is None else a.ctypes.data


def _ready(*arrays: Array | None) -> bool:
    return all(a is None or (a.dtype == np.float32 and a.flags.c_contiguous
                             and a.flags.aligned) for a in arrays)


def _check(kernel: str, ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"{kernel}: {what}")


# -- the kernels' calls -------------------------------------------------------------------


#: the output blocks a dense tile of _blocked.c sums (OBMAX): 4 of 16 lanes, 2 of 8
TILE_BLOCKS = {16: 4, 8: 2}
#: the most input channels a convolution reads from a LINEAR x into a blocked y (a stem:
#: its 3 channels in place, not reformatted into blocks of 16 lanes, 13 of them zeros)
STEM_CHANNELS = 4


def _aligned(v: Array) -> Array:
    """A C-contiguous float32 copy of ``v`` starting on a 64-byte boundary: the kernels load
    whole vectors of packed weights, and a vector across two cache lines costs two loads
    (NumPy gives 16-byte alignment: a 3x3 convolution ran 10% slower in such copies)."""
    raw = np.empty(v.size * 4 + 64, np.uint8)
    at = -raw.ctypes.data % 64
    out = raw[at:at + v.size * 4].view(np.float32).reshape(v.shape)
    out[...] = v
    return out


def pack_dense(w: Array, k: int) -> Array:
    """ONNX weights (M, C, kh, kw) as the dense kernel reads them: (ceil(M/k/t), ceil(C/k),
    kh, kw, k, t, k) with t = :data:`TILE_BLOCKS` output blocks of k lanes: the t weight
    vectors a tile multiplies by one input value adjacent (one pointer, immediate offsets),
    a group's taps over one input block contiguous (with the taps C channels apart, a
    power-of-two C put every tap in the same 16 L1 sets); the missing channels zeros."""
    m, c, kh, kw = w.shape
    t = TILE_BLOCKS[k]
    mp, cp = -(-m // (k * t)) * k * t, -(-c // k) * k
    # no padded copy where M and C fill whole tiles: the transpose below copies once (at a
    # model's first run, into fresh memory: ResNet-50's 100 MB of weights were written twice)
    full = w
    if (mp, cp) != (m, c) or w.dtype != np.float32:
        full = np.zeros((mp, cp, kh, kw), np.float32)
        full[:m, :c] = w
    return _aligned(
        full.reshape(mp // (k * t), t, k, cp // k, k, kh, kw).transpose(0, 3, 5, 6, 4, 1, 2))


def group_ranges(m: int, c_in: int, group: int, k: int) -> list[tuple[int, int]]:
    """The input channels each output block of a grouped convolution reads (``ob_range`` in
    _blocked.c): those of the groups its k lanes belong to."""
    cg, mg = c_in // group, m // group
    return [((ob * k // mg) * cg, ((min(m, ob * k + k) - 1) // mg + 1) * cg)
            for ob in range(-(-m // k))]


def pack_grouped(w: Array, k: int, group: int) -> Array:
    """Grouped ONNX weights (M, C/group, kh, kw) as (ceil(M/k), kh, kw, c_w, k): output block
    ob's weights over its input channel range (:func:`group_ranges`, c_w the widest), zeros
    where a lane's group does not read the channel."""
    m, cg, kh, kw = w.shape
    ranges = group_ranges(m, cg * group, group, k)
    cw = max(hi - lo for lo, hi in ranges)
    out = np.zeros((len(ranges), kh, kw, cw, k), np.float32)
    mg = m // group
    for o in range(m):
        ob, lane = divmod(o, k)
        at = (o // mg) * cg - ranges[ob][0]
        out[ob, :, :, at:at + cg, lane] = w[o].transpose(1, 2, 0)
    return _aligned(out)


def pack_depthwise(w: Array, k: int) -> Array:
    """Depthwise ONNX weights (C, 1, kh, kw) as (ceil(C/k), kh, kw, k)."""
    kh, kw = w.shape[2], w.shape[3]
    return _aligned(_padded_channels(w[:, 0], k).reshape(-1, k, kh, kw).transpose(0, 2, 3, 1))


def _padded_channels(v: Array, k: int) -> Array:
    """``v`` (C, ...) with zero rows up to a multiple of k."""
    c = v.shape[0]
    out = np.zeros((-(-c // k) * k, *v.shape[1:]), np.float32)
    out[:c] = v
    return out


def conv_call(x: Array, wp: Array, bias: Array | None, res: Array | None, y: Array, *,
              c_in: int, c_out: int, kernel: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int], begin: Sequence[int], depthwise: bool, lo: float,
              hi: float, act: Act = (0, 0.0, 0.0), group: int = 1) -> Call:
    """The call writing the blocked ``y`` (N, ceil(M/k), OH, OW, k) = act(clamp(conv(x) +
    bias + res, lo, hi)) from the blocked ``x``, the packed weights ``wp``
    (:func:`pack_dense`, :func:`pack_grouped` for ``group`` > 1 not depthwise,
    :func:`pack_depthwise`) and ``bias`` (ceil(M/k) * k floats). ``x`` may be LINEAR
    (N, C, H, W) where the convolution is dense with C <= k (a stem: :data:`STEM_CHANNELS`):
    its planes are read in place."""
    name = "mi_bconv2d_f32"
    linear = x.ndim == 4
    if linear:
        _check(name, y.ndim == 5 and y.shape[4] in (8, 16) and not depthwise and group == 1
               and 0 < x.shape[1] <= y.shape[4], f"a LINEAR x {x.shape} into y {y.shape}: "
               f"one group of at most {y.shape[4]} channels")
        x = x[:, :, :, :, None]  # (N, C, H, W, 1): the same memory, its planes as "blocks"
    _check(name, x.ndim == 5 and y.ndim == 5 and (linear or x.shape[4] == y.shape[4])
           and y.shape[4] in (8, 16),
           f"x {x.shape} and y {y.shape} must be blocked 2-D tensors of one block size")
    k = y.shape[4]
    _check(name, _ready(x, wp, bias, res, y), "arrays must be float32, C-contiguous, aligned")
    _check(name, x.shape[1] == (c_in if linear else -(-c_in // k))
           and y.shape[1] == -(-c_out // k) and x.shape[0] == y.shape[0],
           f"x {x.shape} / y {y.shape} against {c_in} -> {c_out}")
    kh, kw = (int(v) for v in kernel)
    grouped = group > 1 and not depthwise
    _check(name, not grouped or (c_in % group == 0 and c_out % group == 0),
           f"{group} groups of {c_in} -> {c_out} channels")
    c_w = max((hi_ - lo_ for lo_, hi_ in group_ranges(c_out, c_in, group, k)), default=0) \
        if grouped else c_in
    want = (y.shape[1], kh, kw, k) if depthwise else (y.shape[1], kh, kw, c_w, k) \
        if grouped else (-(-y.shape[1] // TILE_BLOCKS[k]), 1 if linear else x.shape[1], kh, kw,
                         k, TILE_BLOCKS[k], k)
    _check(name, wp.shape == want, f"packed weights {wp.shape}, expected {want}")
    _check(name, bias is None or bias.shape == (y.shape[1] * k,),
           f"bias of shape {getattr(bias, 'shape', None)}, expected ({y.shape[1] * k},)")
    _check(name, res is None or res.shape == y.shape,
           f"residual of shape {getattr(res, 'shape', None)}, expected y's {y.shape}")
    args = BConvArgs(_ptr(x), _ptr(wp), _ptr(bias), _ptr(res), _ptr(y), x.shape[0], c_in,
                     1 if linear else x.shape[1], x.shape[2], x.shape[3], c_out, y.shape[1],
                     y.shape[2], y.shape[3], kh, kw, int(strides[0]), int(strides[1]),
                     int(dilations[0]), int(dilations[1]), int(begin[0]), int(begin[1]), k,
                     int(depthwise), float(lo), float(hi), int(act[0]), float(act[1]),
                     float(act[2]), group if grouped else 1, c_w if grouped else 0, int(linear))
    return _call(_conv, args, x, wp, bias, res, y)


def pool_call(x: Array, y: Array, *, kernel: Sequence[int], strides: Sequence[int],
              dilations: Sequence[int], begin: Sequence[int], end: Sequence[int],
              average: bool, include_pad: bool) -> Call:
    """The call pooling the blocked ``x`` into the blocked ``y`` (``end``: the padding after)."""
    name = "mi_bpool2d_f32"
    _check(name, x.ndim == 5 and y.ndim == 5 and x.shape[4] == y.shape[4] in (8, 16)
           and x.shape[:2] == y.shape[:2], f"x {x.shape} and y {y.shape}")
    _check(name, _ready(x, y), "arrays must be float32, C-contiguous, aligned")
    args = BPoolArgs(_ptr(x), _ptr(y), x.shape[0], x.shape[1], x.shape[2], x.shape[3],
                     y.shape[2], y.shape[3], int(kernel[0]), int(kernel[1]), int(strides[0]),
                     int(strides[1]), int(dilations[0]), int(dilations[1]), int(begin[0]),
                     int(begin[1]), int(end[0]), int(end[1]), x.shape[4], int(average),
                     int(include_pad))
    return _call(_pool, args, x, y)


_OPS = {"add": 0, "mul": 1, "sub": 2, "rsub": 3, "scale_shift": 4}


def binary_call(a: Array, b: Array, y: Array, op: str, lo: float = -np.inf,
                hi: float = np.inf, shift: Array | None = None) -> Call:
    """``y = a OP b`` (op: add, mul, sub, rsub: b - a; scale_shift: a * b + ``shift``, both
    vectors, in one pass), clamped to [lo, hi]: ``a`` and ``y`` blocked of one shape, ``b``
    too, or one vector per (image, block): (1 or N, CB, 1, ..., 1, k)."""
    name = "mi_bbinary_f32"
    _check(name, a.shape == y.shape and a.ndim >= 4 and a.shape[-1] in (8, 16),
           f"a {a.shape} and y {y.shape}")
    _check(name, _ready(a, b, y), "arrays must be float32, C-contiguous, aligned")
    k, n, cb = a.shape[-1], a.shape[0], a.shape[1]
    hw = math.prod(a.shape[2:-1])
    if b.shape == a.shape:
        mode, nbi = 0, n
    else:
        _check(name, b.ndim == a.ndim and b.shape[1] == cb and b.shape[-1] == k
               and b.shape[0] in (1, n) and math.prod(b.shape[2:-1]) == 1, f"b {b.shape}")
        mode, nbi = 1, b.shape[0]
    _check(name, (op == "scale_shift") == (shift is not None) and (
        shift is None or (mode == 1 and shift.shape == b.shape and _ready(shift))),
        f"scale_shift takes a shift of b's shape {b.shape} (b one vector per block)")
    args = BBinaryArgs(_ptr(a), _ptr(b), _ptr(y), n, cb, hw, k, mode, nbi, _OPS[op], float(lo),
                       float(hi), _ptr(shift))
    return _call(_binary, args, a, b, y, shift)


def padzero_call(y: Array, c: int) -> Call:
    """The call writing 0 into the lanes of ``y``'s last block past channel ``c``."""
    _check("mi_bpadzero_f32", _ready(y) and y.ndim >= 4, f"y {y.shape}")
    args = BPadArgs(_ptr(y), y.shape[0], y.shape[1], math.prod(y.shape[2:-1]), y.shape[-1], c)
    return _call(_padzero, args, y)


def concat_call(xs: Sequence[Array], cs: Sequence[int], y: Array) -> Call:
    """The call concatenating the blocked ``xs`` (``cs`` channels each) on channels into
    ``y``."""
    name = "mi_bconcat_f32"
    k = y.shape[-1]
    _check(name, _ready(y, *xs) and all(
        x.shape[0] == y.shape[0] and x.shape[2:] == y.shape[2:] and x.shape[1] == -(-c // k)
        for x, c in zip(xs, cs, strict=True)), f"inputs {[x.shape for x in xs]} into {y.shape}")
    ptrs = (_P * len(xs))(*(_ptr(x) for x in xs))
    counts = (_L * len(cs))(*cs)
    args = BConcatArgs(ctypes.cast(ptrs, _P), ctypes.cast(counts, _P), _ptr(y), len(xs),
                       y.shape[0], math.prod(y.shape[2:-1]), k)
    return _call(_concat, args, *xs, y, ptrs, counts)


def split_call(x: Array, ys: Sequence[Array], cs: Sequence[int]) -> Call:
    """The call splitting the blocked ``x`` on channels into the blocked ``ys`` (``cs``
    channels each), their padding lanes zeros."""
    name = "mi_bsplit_f32"
    k = x.shape[-1]
    _check(name, _ready(x, *ys) and x.ndim >= 4 and x.shape[1] == -(-sum(cs) // k) and all(
        y.shape[0] == x.shape[0] and y.shape[2:] == x.shape[2:] and y.shape[1] == -(-c // k)
        for y, c in zip(ys, cs, strict=True)), f"{x.shape} into {[y.shape for y in ys]}")
    ptrs = (_P * len(ys))(*(_ptr(y) for y in ys))
    counts = (_L * len(cs))(*cs)
    args = BSplitArgs(_ptr(x), ctypes.cast(ptrs, _P), ctypes.cast(counts, _P), len(ys),
                      x.shape[0], math.prod(x.shape[2:-1]), k)
    return _call(_split, args, x, *ys, ptrs, counts)


def resize_call(x: Array, y: Array, tab: tuple[Array, Array, Array, Array]) -> Call:
    """The call resizing the blocked ``x`` (N, CB, H, W, k) into the blocked ``y`` by
    ``_resize.tables``' rows, row weights, columns and column weights (two taps each)."""
    name = "mi_bresize_f32"
    rows, ry, cols, rx = tab
    _check(name, x.ndim == 5 and y.ndim == 5 and x.shape[:2] == y.shape[:2]
           and x.shape[4] == y.shape[4] in (8, 16), f"x {x.shape} and y {y.shape}")
    _check(name, _ready(x, y, ry, rx), "arrays must be float32, C-contiguous, aligned")
    oh, ow = y.shape[2], y.shape[3]
    _check(name, rows.shape == (oh, 2) and cols.shape == (ow, 2) and ry.shape == (oh,)
           and rx.shape == (ow,) and rows.dtype.itemsize == cols.dtype.itemsize
           == ctypes.sizeof(_L) and rows.flags.c_contiguous and cols.flags.c_contiguous,
           f"tables {rows.shape} {ry.shape} {cols.shape} {rx.shape} for {oh}x{ow}")
    args = BResizeArgs(_ptr(x), _ptr(y), _ptr(rows), _ptr(cols), _ptr(ry), _ptr(rx),
                       x.shape[0], x.shape[1], x.shape[2], x.shape[3], oh, ow, x.shape[4])
    return _call(_resize, args, x, y, rows, cols, ry, rx)


def reformat_call(x: Array, y: Array, c: int, to_blocked: bool) -> Call:
    """The call writing ``y`` = ``x`` in the other layout: LINEAR (N, C, *S) into blocked
    (N, ceil(C/k), *S, k) (``to_blocked``; the lanes past C zeros), or back."""
    name = "mi_breformat_f32"
    lin, blk = (x, y) if to_blocked else (y, x)
    k = blk.shape[-1] if blk.ndim else 0
    _check(name, _ready(x, y), "arrays must be float32, C-contiguous, aligned")
    _check(name, lin.ndim >= 2 and blk.ndim == lin.ndim + 1 and k >= 1 and lin.shape[1] == c
           and blk.shape[0] == lin.shape[0] and blk.shape[1] == -(-c // k)
           and blk.shape[2:-1] == lin.shape[2:], f"LINEAR {lin.shape} and blocked {blk.shape}")
    args = BReformatArgs(_ptr(x), _ptr(y), lin.shape[0], c, math.prod(lin.shape[2:]), k,
                         int(to_blocked))
    return _call(_reformat, args, x, y)
