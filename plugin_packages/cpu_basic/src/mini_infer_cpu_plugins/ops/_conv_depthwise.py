"""Depthwise 2-D convolution (one input channel per group) as a sum over kernel taps.

The padded input is split into its stride phases (one for stride 1: the padded input
itself): phase (a, b) holds the rows a, a+sh, ... and columns b, b+sw, ... of every channel,
each channel a ``hq * wq`` plane, the planes one after the other. Tap (i, j) reads phase
((i*dh) % sh, (j*dw) % sw) shifted by ((i*dh) // sh, (j*dw) // sw), and shifting a phase's
whole buffer shifts every plane at once: each tap is one multiply over one contiguous run of
all channels and one flat add. Reads that cross a plane's edge land only in the rows and
columns past the output, which are dropped. ShuffleNet's 16 depthwise layers: 18 -> 13 ms
for the whole model.

NumPy would copy each (shifted, so unaligned) row through its ufunc buffer to broadcast the
per-channel weight; a buffer smaller than a row makes it run in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import Window

from ._util import Scratch

__all__ = ["depthwise_conv"]

Array = NDArray[Any]


def depthwise_conv(x: Array, packed: Array, dst: Array, window: Window, begin: Sequence[int],
                   ext: Sequence[int], out_dims: Sequence[int], scratch: Scratch,
                   b: Array | None) -> None:
    """``dst`` (N, C*mult, oh, ow) = depthwise conv of ``x`` (N, C, H, W) + ``b``.

    ``packed``: the weights tap-major, ``(kh*kw, C, mult, 1)``-reshapeable (``pack_taps``);
    ``begin``/``ext``: the padding before and the padded extent; buffers come from
    ``scratch`` (the padded phases are zero-bordered once: the same cells every run)."""
    n, c = x.shape[:2]
    kh, kw = (int(k) for k in window.kernel)
    mult = packed.size // (kh * kw * c)
    (dh, dw), (oh, ow) = window.dilations, out_dims
    (sh, sw), (top, left) = window.strides, begin
    hq, wq = -(-ext[0] // sh), -(-ext[1] // sw)
    plane = hq * wq
    tail = ((kh - 1) * dh // sh) * wq + (kw - 1) * dw // sw
    flat = scratch.buffer("dwpad", (n, sh, sw, c * plane + tail), x.dtype, fill=0)
    for pa in range(sh):
        r0 = -(-(top - pa) // sh)  # first phase row holding an input row
        for pb in range(sw):
            c0 = -(-(left - pb) // sw)
            grid = flat[:, pa, pb, : c * plane].reshape(n, c, hq, wq)
            src = x[:, :, r0 * sh + pa - top:: sh, c0 * sw + pb - left:: sw]
            grid[:, :, r0: r0 + src.shape[2], c0: c0 + src.shape[3]] = src
    acc = scratch.buffer("dwacc", (c, mult, plane), x.dtype)
    tmp = scratch.buffer("dwtmp", (c, mult, plane), x.dtype)
    taps = packed.reshape(kh * kw, c, mult, 1)
    out = dst.reshape(n, c, mult, oh, ow)
    old = np.setbufsize(256) if plane >= 128 else None
    try:
        for img in range(n):
            for t in range(kh * kw):
                i, j = divmod(t, kw)
                start = (i * dh // sh) * wq + j * dw // sw
                phase = flat[img, i * dh % sh, j * dw % sw]
                xs = phase[start: start + c * plane].reshape(c, 1, plane)
                if t == 0:
                    np.multiply(xs, taps[t], out=acc)
                else:
                    np.multiply(xs, taps[t], out=tmp)
                    np.add(acc.reshape(-1), tmp.reshape(-1), out=acc.reshape(-1))
            real = acc.reshape(c, mult, hq, wq)[:, :, :oh, :ow]
            if b is None:
                np.copyto(out[img], real)
            else:  # the bias rides on the copy out
                np.add(real, b.reshape(c, mult, 1, 1), out=out[img])
    finally:
        if old is not None:
            np.setbufsize(old)
