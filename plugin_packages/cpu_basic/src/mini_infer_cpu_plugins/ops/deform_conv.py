"""DeformConv (schema: :mod:`mini_infer_core.ops.deform_conv`) for 2-D images.

Every kernel tap of every output position samples X bilinearly at its place moved by the
offsets (neighbours outside X count as zero, as GridSample with ``align_corners=1`` and zero
padding does), times the mask; the sampled columns ``(N, C, kH * kW, oH * oW)`` then meet W in
one batched matrix product per group. float16 is computed in float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import deform_conv as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin

__all__ = ["DeformConv"]

Array = NDArray[Any]


def sample_columns(x: Array, offset: Array, mask: Array | None, kernel: tuple[int, int],
                   strides: tuple[int, ...], dilations: tuple[int, ...],
                   pads: tuple[int, ...], groups: int, out_hw: tuple[int, int]) -> Array:
    """The deformed im2col of ``x`` ``(N, C, H, W)``: ``(N, C, kH * kW, oH * oW)``."""
    n, c, h, w = x.shape
    kh, kw = kernel
    oh, ow = out_hw
    off = offset.reshape(n, groups, kh, kw, 2, oh, ow)
    base_y = (np.arange(oh) * strides[0] - pads[0])[None, :, None] + \
        (np.arange(kh) * dilations[0])[:, None, None]            # (kh, oh, 1)
    base_x = (np.arange(ow) * strides[1] - pads[1])[None, None, :] + \
        (np.arange(kw) * dilations[1])[:, None, None]            # (kw, 1, ow)
    py = base_y[None, None, :, None] + off[:, :, :, :, 0]         # (n, g, kh, kw, oh, ow)
    px = base_x[None, None, None, :] + off[:, :, :, :, 1]
    y0, x0 = np.floor(py), np.floor(px)
    ly, lx = py - y0, px - x0
    y0i, x0i = y0.astype(np.int64), x0.astype(np.int64)
    weight_mask = None if mask is None else mask.reshape(n, groups, kh, kw, oh, ow)
    data = x.reshape(n, groups, c // groups, h * w)
    cols = np.zeros((n, groups, c // groups, kh * kw * oh * ow), x.dtype)
    for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
        yy, xx = y0i + dy, x0i + dx
        inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        wt = (ly if dy else 1 - ly) * (lx if dx else 1 - lx) * inside
        if weight_mask is not None:
            wt = wt * weight_mask
        flat = np.where(inside, yy * w + xx, 0).reshape(n, groups, 1, -1)
        picked = np.take_along_axis(data, flat, axis=3)
        cols += picked * wt.reshape(n, groups, 1, -1).astype(x.dtype)
    return cols.reshape(n, c, kh * kw, oh * ow)


class DeformConv(CpuPlugin, schema.DeformConv):
    def compute(self, x: Array, w: Array, offset: Array, b: Array | None = None,
                mask: Array | None = None, *, out: Array, group: int, offset_group: int,
                **_: Any) -> None:
        if x.ndim != 4:
            raise PluginInterfaceError(
                f"DeformConv {self.name!r}: only 2-D images (N, C, H, W) are implemented, X "
                f"has shape {x.shape}")
        win, geo = self.geometry(x.shape, w.shape)
        kh, kw = (int(k) for k in win.kernel)
        n, c = x.shape[:2]
        oh, ow = geo.out
        want = (n, offset_group * kh * kw * 2, oh, ow)
        if offset.shape != want:
            raise PluginInterfaceError(
                f"DeformConv {self.name!r}: offset has shape {offset.shape}, expected {want}")
        if mask is not None and mask.shape != (n, offset_group * kh * kw, oh, ow):
            raise PluginInterfaceError(
                f"DeformConv {self.name!r}: mask has shape {mask.shape}, expected "
                f"{(n, offset_group * kh * kw, oh, ow)}")
        work = np.float64 if x.dtype == np.float64 else np.float32
        cols = sample_columns(x.astype(work), offset.astype(work),
                              None if mask is None else mask.astype(work), (kh, kw),
                              win.strides, win.dilations, geo.begin, offset_group, (oh, ow))
        m = w.shape[0]
        cols = cols.reshape(n, group, (c // group) * kh * kw, oh * ow)
        wg = w.astype(work).reshape(group, m // group, -1)
        y = np.matmul(wg[None], cols).reshape(n, m, oh, ow)
        if b is not None:
            y += b.astype(work).reshape(1, m, 1, 1)
        np.copyto(out, y, casting="unsafe")
