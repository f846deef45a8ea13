"""Convolutions whose taps mostly read padding (DeepLabV3's ASPP: 3x3 kernels dilated 12 and
24 over a 32x32 map, 960 -> 256 channels) as one GEMM per tap over the outputs where that
tap reads the input, and nothing where it reads only zeros.

im2col + one GEMM multiplies every tap by every output, padding included: for the ASPP's
dilation 24 three quarters of the multiply-adds are by zeros (dilation 12: 44%). Here tap
(ky, kx) covers the rectangle of outputs ``o`` whose input ``o * s + k * d - begin`` is inside
the map on both axes (:func:`tap_rects`); its product is W[:, :, ky, kx] (M x C, packed once
per tap: as much memory as the whole W) by that rectangle of the input:

* the tap covering every output (the centre tap of a "same" convolution) goes first and
  writes the output with the bias and residual in its GEMM's epilogue (none covers all: the
  output is zeroed first, bias and residual added at the end);
* a tap whose rows are whole rows of a stride-1 map reads its B in place (rows of the input
  planes, one row stride), any other gathers its rectangle with the compiled im2col (a 1x1
  window at the rectangle's first input, no padding to test), then its GEMM writes a scratch
  block that is added onto the output rectangle (the compiled epilogue pass, no clamp);
* the clamp (fused Relu/Clip) and the fused activation run once over the output at the end.

Used where at most :data:`MAX_LIVE` of the tap-output pairs read the input and each tap's
GEMM has :data:`MIN_CHANNELS` input channels or more (shorter K runs the GEMM below its
speed; the tap-by-tap passes over the output then cost more than they save).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

from . import _abi
from ._act import act_call
from ._conv_extra import ACTS
from ._native import Call, _call, _k, bias_act, gemm_call, pack_a

__all__ = ["MAX_LIVE", "MIN_CHANNELS", "PAD", "applies", "tap_calls", "tap_rects", "tap_weights",
           "work_floats"]

Array = NDArray[Any]

#: the largest share of (tap, output) pairs reading the input where the path is taken
#: (ASPP dilation 12: 0.56, 24: 0.25; an ordinary 3x3 "same" convolution of a 32x32 map 0.88)
MAX_LIVE = 0.7
#: the fewest input channels (each tap's K) and output channels (M) the path takes
MIN_CHANNELS = 64

#: (ky, kx, (oy0, oy1), (ox0, ox1)): a tap and the outputs where it reads the input
Rect = tuple[int, int, tuple[int, int], tuple[int, int]]
#: floats added to a gathered row of B whose length is a multiple of 2 KiB
PAD = 16


def _span(n: int, out: int, s: int, off: int) -> tuple[int, int]:
    """The outputs o in [0, out) with 0 <= o * s + off < n (empty: o0 == o1)."""
    o0 = max(0, (-off + s - 1) // s)
    o1 = min(out, (n - 1 - off) // s + 1)
    return o0, max(o0, o1)


def tap_rects(in_dims: Sequence[int], out_dims: Sequence[int], kernel: Sequence[int],
              strides: Sequence[int], dilations: Sequence[int], begin: Sequence[int]
              ) -> list[Rect]:
    """Every tap that reads the input for some output, with the rectangle of those outputs;
    the one covering the most outputs first (ties: the kernel's order)."""
    rects: list[Rect] = []
    for ky in range(int(kernel[0])):
        ys = _span(int(in_dims[0]), int(out_dims[0]), int(strides[0]),
                   ky * int(dilations[0]) - int(begin[0]))
        for kx in range(int(kernel[1])):
            xs = _span(int(in_dims[1]), int(out_dims[1]), int(strides[1]),
                       kx * int(dilations[1]) - int(begin[1]))
            if ys[1] > ys[0] and xs[1] > xs[0]:
                rects.append((ky, kx, ys, xs))
    rects.sort(key=lambda t: -(t[2][1] - t[2][0]) * (t[3][1] - t[3][0]))
    return rects


def _area(rect: Rect) -> int:
    return (rect[2][1] - rect[2][0]) * (rect[3][1] - rect[3][0])


def applies(xshape: Sequence[int], wshape: Sequence[int], group: int, plan: Any) -> bool:
    """Whether this 2-D convolution runs tap by tap: one group, >= :data:`MIN_CHANNELS`
    input and output channels, at most :data:`MAX_LIVE` of its tap-output pairs reading
    the input."""
    if (len(xshape) != 4 or len(wshape) != 4 or group != 1
            or min(int(xshape[1]), int(wshape[0])) < MIN_CHANNELS):
        return False
    win = plan.window
    rects = tap_rects(xshape[2:], plan.out_dims, wshape[2:], win.strides, win.dilations,
                      plan.begin)
    total = math.prod(int(k) for k in wshape[2:]) * math.prod(plan.out_dims)
    return bool(rects) and sum(_area(r) for r in rects) <= MAX_LIVE * total


def work_floats(xshape: Sequence[int], wshape: Sequence[int], plan: Any) -> int:
    """Scratch floats of :func:`tap_calls`: one tap's gathered input (C rows of its outputs,
    :data:`PAD` more where :func:`_ldb` pads them) and its product (M x its outputs)."""
    win = plan.window
    rects = tap_rects(xshape[2:], plan.out_dims, wshape[2:], win.strides, win.dilations,
                      plan.begin)
    most = max((_area(r) for r in rects), default=0)
    return max(1, int(xshape[1]) * (most + PAD) + int(wshape[0]) * most)


def _ldb(npx: int) -> int:
    """The row stride of a tap's gathered input: its outputs, :data:`PAD` floats more where
    that is a multiple of 2 KiB (every row of B in the same cache sets: 256 x 960 x 1024 ran
    at 27 GFLOP/s with rows 4 KiB apart, 49 with 4160 bytes, one thread)."""
    return npx + PAD if npx % 512 == 0 else npx


def tap_weights(w: Array) -> Array:
    """W (M, C, KH, KW) as each tap's (M, C) packed for the compiled GEMM, taps in the
    kernel's order: (KH * KW, M * C)."""
    m, c, kh, kw = w.shape
    return np.stack([pack_a(np.ascontiguousarray(w[:, :, ky, kx], dtype=np.float32))
                     for ky in range(kh) for kx in range(kw)]).reshape(kh * kw, m * c)


def _add_calls(out: Array, n: int, rect: tuple[int, int, int, int], prod: Array
               ) -> list[Call]:
    """``out[n, :, oy0:oy1, ox0:ox1] += prod`` (M, rows * width) with the compiled epilogue
    pass (``mi_bias_act_f32``, on the pool, no clamp): one call where the rectangle is whole
    rows or whole columns of the map (each (channel, row) or each channel one run of y), else
    one per output row. Every address is checked here to be inside ``out`` and ``prod``."""
    _, m, oh, ow = out.shape
    oy0, oy1, ox0, ox1 = rect
    rows, width = oy1 - oy0, ox1 - ox0
    if not (0 <= oy0 < oy1 <= oh and 0 <= ox0 < ox1 <= ow and 0 <= n < out.shape[0]
            and prod.flags.c_contiguous and prod.size >= m * rows * width):
        raise ValueError(f"tap rectangle {rect} outside the output {out.shape}")
    base, src, plane = out.ctypes.data + 4 * n * m * oh * ow, prod.ctypes.data, oh * ow

    def call(y: int, r: int, count: int, cols: int, ldy: int, ldr: int) -> Call:
        return _call(_k.bias_act, _abi.BiasActArgs(base + 4 * y, None, src + 4 * r, count, cols,
                                                   ldy, 1, ldr, -np.inf, np.inf), out, prod)

    if width == ow:  # whole rows: each channel one run
        return [call(oy0 * ow, 0, m, rows * ow, plane, rows * ow)]
    if rows == oh:  # whole columns: each (channel, row) one run of `width`
        return [call(ox0, 0, m * oh, width, ow, width)]
    return [call((oy0 + i) * ow + ox0, i * width, m, width, plane, rows * width)
            for i in range(rows)]


def _copy(dst: Array, src: Array) -> None:
    np.copyto(dst, src)


def _gather_call(x: Array, n: int, cols: Array, first: tuple[int, int],
                 count: tuple[int, int], strides: tuple[int, int]) -> Call:
    """``cols`` (C, rows * width) = x[n, :, y0 + i * sh, x0 + j * sw] for i < rows, j < width:
    the compiled im2col with a 1x1 window started at the rectangle's first input (every read
    checked here to be inside x)."""
    _, c, h, wd = x.shape
    (y0, x0), (rows, width), (sh, sw) = first, count, strides
    last = (y0 + (rows - 1) * sh, x0 + (width - 1) * sw)
    if not (0 <= y0 <= last[0] < h and 0 <= x0 <= last[1] < wd and 0 <= n < x.shape[0]):
        raise ValueError(f"tap rectangle {first}+{count} outside the input {x.shape}")
    if cols.size < c * rows * width or not cols.flags.c_contiguous:
        raise ValueError(f"tap columns: {cols.size} floats for {c * rows * width}")
    base = x.ctypes.data + 4 * ((n * c * h + y0) * wd + x0)
    # the planes keep their size (h * wd apart); the window's bounds are counted from the
    # first read: i * sh < h and j * sw < wd hold for every read above, so none is zeroed
    return _call(_k.im2col, _abi.Im2colArgs(base, cols.ctypes.data, 1, c, h, wd, 1, 1, sh, sw,
                                     1, 1, 0, 0, 0, rows, width), x, cols)


def tap_calls(x: Array, packed: Array, b: Array | None, r: Array | None, out: Array,
              plan: Any, lo: float, hi: float, hidden: dict[str, Any], work: Array
              ) -> list[Call]:
    """The calls computing ``out`` = act(clamp(conv(x) + b + r, lo, hi)) tap by tap, with
    ``packed`` from :func:`tap_weights` and ``work`` of :func:`work_floats` floats."""
    n_img, c, h, wd = x.shape
    m = out.shape[1]
    win = plan.window
    kh, kw = (int(k) for k in win.kernel)
    oh, ow = (int(v) for v in plan.out_dims)
    sh, sw = (int(s) for s in win.strides)
    dh, dw = (int(d) for d in win.dilations)
    bt, bl = (int(v) for v in plan.begin)
    rects = tap_rects((h, wd), (oh, ow), (kh, kw), (sh, sw), (dh, dw), (bt, bl))
    whole = _area(rects[0]) == oh * ow
    calls: list[Call] = []
    for i in range(n_img):
        y = out[i].reshape(m, oh * ow)
        res = None if r is None else r[i].reshape(m, oh * ow)
        xi = x[i].reshape(c, h * wd)
        if not whole:
            calls.append((y.fill, (0.0,)))
        for t, (ky, kx, (oy0, oy1), (ox0, ox1)) in enumerate(rects):
            rows, width = oy1 - oy0, ox1 - ox0
            npx = rows * width
            a = packed[ky * kw + kx]
            iy0, ix0 = oy0 * sh + ky * dh - bt, ox0 * sw + kx * dw - bl
            ldb = _ldb(npx)
            if ldb != npx:  # padded rows: a NumPy copy (the compiled gather writes them whole)
                src = work[: c * ldb].reshape(c, ldb)[:, :npx]
                calls.append((_copy, (src.reshape(c, rows, width), x[
                    i, :, iy0: iy0 + (rows - 1) * sh + 1: sh, ix0: ix0 + (width - 1) * sw + 1:
                    sw])))
            elif sh == sw == 1 and width == ow == wd and ix0 == 0 and (h * wd) % 512:
                src = xi[:, iy0 * wd: iy0 * wd + npx]  # whole rows: B in place
            else:
                src = work[: c * npx].reshape(c, npx)
                calls.append(_gather_call(x, i, src, (iy0, ix0), (rows, width), (sh, sw)))
            if t == 0 and whole:
                calls.append(gemm_call(a, m, c, src, y, b, res))
                continue
            dst = work[c * ldb: c * ldb + m * npx].reshape(m, npx)
            calls.append(gemm_call(a, m, c, src, dst))
            calls += _add_calls(out, i, (oy0, oy1, ox0, ox1), dst)
        last_b, last_r = (None, None) if whole else (b, res)
        if last_b is not None or last_r is not None or lo != -np.inf or hi != np.inf:
            calls.append((bias_act, (y.reshape(1, m, oh * ow), last_b,
                                     None if last_r is None else last_r.reshape(1, m, -1),
                                     lo, hi)))
        name = hidden.get("__act__")
        if name:
            alpha, beta = (float(v) for v in hidden.get("__act_args__", (0.0, 0.0)))
            calls.append(act_call(ACTS[name], y, y, alpha, beta))
    return calls

