"""2-D stride-1 convolution as one accumulating GEMM per kernel tap, without im2col.

The input is copied once into a zero-bordered buffer whose rows are ``wp`` (the padded width)
long, each channel flattened. For the tap (i, j) of the kernel, the input every output needs
is then one contiguous run per channel, starting at ``i*dh*wp + j*dw``: a ``(C, oh*wp)``
matrix whose rows are a channel plane apart, which the BLAS reads in place. So

    acc (M, oh*wp) = sum over taps  W[:, :, i, j] (M, C) @ X[:, shift(i, j)] (C, oh*wp)

is ``kh*kw`` GEMMs with ``beta=1`` (:func:`._blas.gemm`) and no copy at all. Each output row
is ``wp`` wide, ``ow`` of them real: the ``(kw-1)*dw`` extra columns read across the row end
and are dropped by the epilogue, which copies the real columns out while it adds the bias.
im2col would write ``kh*kw`` copies of the input and the GEMM read them back; this reads the
padded input ``kh*kw`` times from cache instead (VGG-19's 64-channel 224x224 layer: 17 ms
against 41 ms).

The weights are packed tap-major, ``(kh*kw, group, M/group, C/group)`` contiguous, once per
weight array (a constant: the same array on every run).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.plugin import record
from mini_infer_core.plugin.arrays import NDArray

from ._blas import available, gemm
from ._util import relu

__all__ = ["MIN_CHANNELS", "TapGeometry", "pack_taps", "tap_conv", "tap_major", "usable"]

Array = NDArray[Any]

#: input channels per group below which a tap's GEMM is too thin; im2col is used instead
MIN_CHANNELS = 16
#: output columns (``oh * wp``) below which the per-tap GEMMs are too small to pay
MIN_COLUMNS = 200
#: more output than input channels per group than this: im2col's copy is the cheaper one
MAX_GROWTH = 2


@record(frozen=True)
class TapGeometry:
    begin: tuple[int, int]
    ext: tuple[int, int]  # padded height and width
    out: tuple[int, int]
    kernel: tuple[int, int]
    dilations: tuple[int, int]

    @property
    def tail(self) -> int:
        """Elements past the padded plane that the last tap's run reads (kept zero)."""
        return (self.kernel[1] - 1) * self.dilations[1]

    @property
    def plane(self) -> int:
        return self.ext[0] * self.ext[1] + self.tail

    def buffers(self, c: int, m: int) -> list[tuple[str, tuple[int, ...]]]:
        """Workspace of one image: the padded input and the accumulator."""
        return [("tapin", (c, self.plane)), ("tapacc", (m, self.out[0] * self.ext[1]))]


def usable(x_ndim: int, strides: tuple[int, ...], cg: int, mg: int, kernel: tuple[int, ...],
           columns: int, dtype: Any) -> bool:
    """Whether the tap path serves a Conv of this kind (``columns``: ``oh * wp``).

    It rewrites the (M, columns) accumulator once per tap where im2col writes the input once
    per tap: it wins when M is not much larger than C and the GEMMs are wide enough (measured
    on VGG, ResNet, DenseNet and Inception layers; elsewhere the two are within 10%)."""
    return (x_ndim == 4 and tuple(strides) == (1, 1) and cg >= MIN_CHANNELS
            and mg <= MAX_GROWTH * cg and columns >= MIN_COLUMNS
            and tuple(kernel) != (1, 1) and available(dtype))


def tap_major(w: Array) -> Array:
    """``W`` (M, C/group, kh, kw) with the same shape and values, stored tap-major (memory
    order kh, kw, M, C/group): what the builder keeps in the engine (``pack_constants``)."""
    return np.ascontiguousarray(w.transpose(2, 3, 0, 1)).transpose(2, 3, 0, 1)


def pack_taps(w: Array, group: int) -> Array:
    """``W`` as ``(kh*kw, group, M/group, C/group)``, contiguous: a view of a tap-major
    ``W``, a copy of any other."""
    m, cg, kh, kw = w.shape
    return np.ascontiguousarray(w.transpose(2, 3, 0, 1)).reshape(kh * kw, group, m // group, cg)


def tap_conv(x: Array, taps: Array, dst: Array, geo: TapGeometry, pad_buf: Array,
             acc: Array, b: Array | None, r: Array | None = None, with_relu: bool = False
             ) -> None:
    """``dst`` (N, M, oh, ow) = conv(x) + b (+ r) (then Relu); ``pad_buf``/``acc`` from
    :meth:`TapGeometry.buffers`.

    The bias is written into the accumulator first (the GEMMs add onto it), so the copy of
    the real columns out of it is the only pass over the output: it adds the residual or
    applies the Relu on the way."""
    n, c, h, w = x.shape
    ntaps, group, mg, cg = taps.shape
    (hp, wp), (oh, ow) = geo.ext, geo.out
    (top, left), kw, (dh, dw) = geo.begin, geo.kernel[1], geo.dilations
    run = oh * wp
    grid = pad_buf[:, : hp * wp].reshape(c, hp, wp)
    # the buffer is shared with other nodes: clear the border (only) every time
    grid[:, :top] = 0
    grid[:, top + h:] = 0
    grid[:, top: top + h, :left] = 0
    grid[:, top: top + h, left + w:] = 0
    pad_buf[:, hp * wp:] = 0
    m = group * mg
    for i in range(n):
        grid[:, top: top + h, left: left + w] = x[i]
        if b is not None:
            np.copyto(acc, b.reshape(m, 1))
        for g in range(group):
            rows = pad_buf[g * cg: (g + 1) * cg]
            out = acc[g * mg: (g + 1) * mg]
            for t in range(ntaps):
                ki, kj = divmod(t, kw)
                start = ki * dh * wp + kj * dw
                first = t == 0 and b is None
                gemm(taps[t, g], rows[:, start: start + run], out, beta=0.0 if first else 1.0)
        real = acc.reshape(m, oh, wp)[:, :, :ow]
        if r is not None:
            np.add(real, r[i], out=dst[i])
            if with_relu:
                relu(dst[i], dst[i])
        elif with_relu:
            np.maximum(real, 0, out=dst[i])
        else:
            np.copyto(dst[i], real)
