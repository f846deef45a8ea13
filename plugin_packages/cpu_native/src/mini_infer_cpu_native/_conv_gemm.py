"""2-D float32 convolution on the compiled GEMM (``_gemm.c``): bias, residual and Relu/Clip
applied in registers, no epilogue pass, and no BLAS call (whose idle threads would spin on
the cores the GEMM's own pool uses).

* 1x1, stride 1, unpadded: the input planes are the GEMM's right-hand side, read in place.
* anything else: the compiled im2col (reading the input in place, padding included) writes
  the columns of a band of output rows, and one GEMM writes that band of every output
  channel. Bands keep the columns under :data:`BAND_BYTES`, so they are still in cache when
  the GEMM reads them.

Groups are one GEMM each on their rows of the weights, columns and output.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

from ._native import NO_ACT, Act, Call, gemm_call, im2col_call, pack_a, run_calls, unpack_a

__all__ = ["BAND_BYTES", "buffers", "gemm_conv", "gemm_conv_calls", "pack_weights",
           "unpack_weights"]

Array = NDArray[Any]

#: im2col columns per band at most, unless the weights are larger: the band's columns are
#: written and read back while in L2 (stems over 224-640 pixel images, 3 input channels:
#: 11 MiB of columns in one band went to memory and back, 8-13 ms; in 1 MiB bands 4-6 ms),
#: and each band, a GEMM of its own, reads all the weights again: bands as large as them keep
#: that re-read under the columns' own traffic (ResNet-50's deeper layers: one or two bands)
BAND_BYTES = 1024 * 1024


def pack_weights(w: Array, group: int) -> Array:
    """``w`` (M, C/group, *kernel) as each group's (M/group, C/group * prod(kernel)) matrix
    packed for the GEMM, the groups one after the other."""
    m = w.shape[0]
    mg = m // group
    w2 = np.ascontiguousarray(w, dtype=np.float32).reshape(m, -1)
    out = np.empty(w2.size, np.float32)
    step = mg * w2.shape[1]
    for g in range(group):  # each group packed in place (no concatenating copy)
        pack_a(w2[g * mg:(g + 1) * mg], out[g * step:(g + 1) * step])
    return out


def unpack_weights(packed: Array, group: int) -> Array:
    """:func:`pack_weights` undone: ``packed`` (any shape, W's size) back in W's order, with
    ``packed``'s shape (W's)."""
    m = packed.shape[0]
    mg, k = m // group, packed.size // m
    flat = packed.reshape(-1)
    step = mg * k
    return np.concatenate([unpack_a(flat[g * step:(g + 1) * step], mg, k)
                           for g in range(group)]).reshape(packed.shape)


#: a pointwise convolution whose input planes are a multiple of this many floats (2 KiB),
#: with :data:`PAD_FROM_K` input channels or more, has its planes copied ROW_PAD floats
#: apart first: read in place, the GEMM's B rows all fall in the same cache sets (DeepLabV3's
#: 1x1 convolutions over 32x32 maps, rows 4 KiB apart: 256x960x1024 at 27 GFLOP/s in place,
#: 49 copied; 256x1280x1024 53 -> 31 ms, 160x960x1024 26 -> 8 ms with the copy, 1 thread)
PAD_PLANES, PAD_FROM_K, ROW_PAD = 512, 256, 16


def _padded(c: int, p: int, group: int) -> bool:
    return group == 1 and c >= PAD_FROM_K and p % PAD_PLANES == 0


def _copy(dst: Array, src: Array) -> None:
    np.copyto(dst, src)


def _band_rows(ck_total: int, weights: int, out_dims: Any) -> int:
    """Output rows per band: columns of :data:`BAND_BYTES` or of the weights' size
    (``weights`` floats), whichever is larger."""
    limit = max(BAND_BYTES, weights * 4)
    return max(1, min(int(out_dims[0]), limit // max(ck_total * int(out_dims[1]) * 4, 1)))


def buffers(xshape: tuple[int, ...], wshape: tuple[int, ...], plan: Any
            ) -> list[tuple[str, tuple[int, ...]]]:
    """The float32 workspace :func:`gemm_conv` needs: one band of im2col columns (none for
    a pointwise convolution)."""
    if plan.pointwise:
        c, p = xshape[1], math.prod(plan.out_dims)
        return ([("gemm_cols", (c * (p + ROW_PAD),))]
                if _padded(c, p, c // max(wshape[1], 1)) else [])
    ck_total = xshape[1] * math.prod(wshape[2:])
    band = _band_rows(ck_total, math.prod(wshape), plan.out_dims)
    return [("gemm_cols", (ck_total * band * plan.out_dims[1],))]


def gemm_conv(x: Array, packed: Array, b: Array | None, r: Array | None, out: Array, plan: Any,
              group: int, lo: float, hi: float, bufs: dict[str, Array]) -> None:
    """``out`` = clamp(conv(x) + b + r, lo, hi) with ``packed`` from :func:`pack_weights` and
    ``plan`` cpu_basic's geometry of this convolution."""
    run_calls(gemm_conv_calls(x, packed, b, r, out, plan, group, lo, hi, bufs))


def gemm_conv_calls(x: Array, packed: Array, b: Array | None, r: Array | None, out: Array,
                    plan: Any, group: int, lo: float, hi: float, bufs: dict[str, Array],
                    act: Act = NO_ACT) -> list[Call]:
    """The compiled calls that compute :func:`gemm_conv`, in order (the plugin keeps them
    while its arrays stay the same objects: ~20-50 us of Python per node saved); ``act``
    (:data:`._native.Act`) after the clamp, in the GEMM's epilogue."""
    n, c = x.shape[:2]
    m = out.shape[1]
    cg, mg = c // group, m // group
    win = plan.window
    kernel = (int(win.kernel[0]), int(win.kernel[1]))
    ck = cg * kernel[0] * kernel[1]
    oh, ow = plan.out_dims
    p = oh * ow
    step = mg * ck
    calls: list[Call] = []
    for i in range(n):
        y = out[i].reshape(m, p)
        res = None if r is None else r[i].reshape(m, p)
        if plan.pointwise:
            rhs = x[i].reshape(c, p)
            if _padded(c, p, group):
                pad = bufs["gemm_cols"][: c * (p + ROW_PAD)].reshape(c, p + ROW_PAD)[:, :p]
                calls.append((_copy, (pad, rhs)))
                rhs = pad
            for g in range(group):
                rows = slice(g * mg, (g + 1) * mg)
                calls.append(gemm_call(
                    packed[g * step:(g + 1) * step], mg, ck, rhs[g * cg:(g + 1) * cg], y[rows],
                    None if b is None else b[rows], None if res is None else res[rows], lo, hi,
                    act))
            continue
        band = _band_rows(c * kernel[0] * kernel[1], packed.size, plan.out_dims)
        flat = bufs["gemm_cols"]
        for r0 in range(0, oh, band):
            r1 = min(oh, r0 + band)
            width = (r1 - r0) * ow
            cols = flat[: group * ck * width].reshape(group * ck, width)
            calls.append(_im2col(x[i:i + 1], cols, kernel, win, plan, (r0, r1), ow))
            span = slice(r0 * ow, r1 * ow)
            for g in range(group):
                rows = slice(g * mg, (g + 1) * mg)
                calls.append(gemm_call(
                    packed[g * step:(g + 1) * step], mg, ck, cols[g * ck:(g + 1) * ck],
                    y[rows, span], None if b is None else b[rows],
                    None if res is None else res[rows, span], lo, hi, act))
    return calls


def _im2col(x: Array, cols: Array, kernel: tuple[int, int], win: Any, plan: Any,
            rows: tuple[int, int], ow: int) -> Call:
    """The im2col call of output rows ``rows``. A column convolution (input and kernel one
    wide, no padding across: Magika's (5, 1) over (512, 1)) is gathered as the row one it
    is in memory, (1, H) by (1, KH): the same columns in the same order, copied a row at a
    time rather than a value at a time (4.4 -> 0.14 ms for Magika's)."""
    h, wd = x.shape[2:]
    if (wd == 1 and kernel[1] == 1 and ow == 1 and plan.begin[1] == 0
            and rows == (0, plan.out_dims[0])):
        return im2col_call(x.reshape(x.shape[0], x.shape[1], 1, h), cols, (1, kernel[0]),
                           (1, win.strides[0]), (1, win.dilations[0]), (0, plan.begin[0]),
                           (0, 1), rows[1])
    return im2col_call(x, cols, kernel, (win.strides[0], win.strides[1]),
                       (win.dilations[0], win.dilations[1]), (plan.begin[0], plan.begin[1]),
                       rows, ow)
