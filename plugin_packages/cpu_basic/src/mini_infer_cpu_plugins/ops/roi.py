"""MaxUnpool and the region-of-interest pools: MaxRoiPool, RoiAlign (shapes and attributes
are the schemas': :mod:`mini_infer_core.ops.roi`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.ops import roi as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._dynamic import emit
from ._nn_util import NN_FLOATS, acc_dtype
from ._util import kernels

__all__ = ["MaxUnpool", "MaxRoiPool", "RoiAlign_10", "RoiAlign"]

Array = NDArray[Any]


class MaxUnpool(CpuPlugin, schema.MaxUnpool):
    def compute(self, x: Array, ind: Array, output_shape: Array | None = None, *,
                out: Any = None, **_: Any) -> Any:
        shape = tuple(int(v) for v in self.unpooled(list(x.shape)))
        flat = np.zeros(int(np.prod(shape)), x.dtype)
        flat[ind.reshape(-1)] = x.reshape(-1)
        y: Array = flat.reshape(shape)
        if output_shape is not None:
            full = np.zeros(tuple(int(v) for v in output_shape), x.dtype)
            full[tuple(slice(0, n) for n in shape)] = y
            y = full
        return emit(y, out)


class MaxRoiPool(CpuPlugin, schema.MaxRoiPool):
    """ROI corners rounded after ``spatial_scale`` (Caffe/onnxruntime semantics); an empty
    bin gives 0."""

    dtypes = NN_FLOATS

    def compute(self, x: Array, rois: Array, *, out: Array, pooled_shape: Sequence[int],
                spatial_scale: float) -> None:
        ph_n, pw_n = pooled_shape
        h, w = x.shape[2:]
        for r, roi in enumerate(rois.astype(np.float64)):
            b = int(roi[0])
            x1, y1, x2, y2 = (int(np.round(v * spatial_scale)) for v in roi[1:5])
            rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
            for ph in range(ph_n):
                hs = min(max(math.floor(ph * rh / ph_n) + y1, 0), h)
                he = min(max(math.ceil((ph + 1) * rh / ph_n) + y1, 0), h)
                for pw in range(pw_n):
                    ws = min(max(math.floor(pw * rw / pw_n) + x1, 0), w)
                    we = min(max(math.ceil((pw + 1) * rw / pw_n) + x1, 0), w)
                    if he <= hs or we <= ws:
                        out[r, :, ph, pw] = 0
                    else:
                        out[r, :, ph, pw] = x[b, :, hs:he, ws:we].max(axis=(1, 2))


def _axis_samples(start: float, bin_size: float, pooled: int, grid: int, size: int
                  ) -> tuple[Array, Array, Array, Array, Array]:
    """Bilinear sample positions along one axis: (low, high, w_low, w_high, valid), each
    (pooled, grid)."""
    pos = (start + np.arange(pooled)[:, None] * bin_size
           + (np.arange(grid)[None, :] + 0.5) * bin_size / grid)
    valid = (pos >= -1.0) & (pos <= size)
    p = np.maximum(pos, 0.0)
    low = p.astype(np.int64)
    clip = low >= size - 1
    low = np.where(clip, size - 1, low)
    high = np.where(clip, size - 1, low + 1)
    p = np.where(clip, low.astype(np.float64), p)
    frac = p - low
    return low, high, (1.0 - frac) * valid, frac * valid, valid


class _RoiAlign(CpuPlugin, schema.RoiAlignBase):
    """Average (or max) of bilinear samples on a sampling_ratio grid (adaptive when 0) per
    output bin of every ROI (x1, y1, x2, y2) of image ``batch_indices[r]``.

    half_pixel shifts the scaled ROI by -0.5; output_half_pixel (opset 10's behaviour) does
    not, and forces ROIs to at least 1x1. Max mode takes the max of the weighted corner
    values (onnxruntime's definition)."""

    def compute(self, x: Array, rois: Array, batch_indices: Array, *, out: Array,
                output_height: int, output_width: int, sampling_ratio: int,
                spatial_scale: float, **_: Any) -> None:
        half, is_max = self.half_pixel, self.max_mode
        dt = acc_dtype(x.dtype)
        h, w = x.shape[2:]
        off = 0.5 if half else 0.0
        for r, roi in enumerate(rois.astype(np.float64)):
            img = x[int(batch_indices[r])].astype(dt)
            sw, sh, ew, eh = (v * spatial_scale - off for v in roi[:4])
            rw, rh = ew - sw, eh - sh
            if not half:
                rw, rh = max(rw, 1.0), max(rh, 1.0)
            bh, bw = rh / output_height, rw / output_width
            gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / output_height)
            gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / output_width)
            gh, gw = max(int(gh), 0), max(int(gw), 0)
            if gh == 0 or gw == 0:
                out[r] = 0
                continue
            ylo, yhi, wyl, wyh = _axis_samples(sh, bh, output_height, gh, h)[:4]
            xlo, xhi, wxl, wxh = _axis_samples(sw, bw, output_width, gw, w)[:4]
            if not is_max:
                ay = np.zeros((output_height, h))
                ax = np.zeros((output_width, w))
                rows = np.arange(output_height)[:, None]
                cols = np.arange(output_width)[:, None]
                np.add.at(ay, (np.broadcast_to(rows, ylo.shape), ylo), wyl)
                np.add.at(ay, (np.broadcast_to(rows, yhi.shape), yhi), wyh)
                np.add.at(ax, (np.broadcast_to(cols, xlo.shape), xlo), wxl)
                np.add.at(ax, (np.broadcast_to(cols, xhi.shape), xhi), wxh)
                res = np.einsum("ph,chw,qw->cpq", ay.astype(dt), img, ax.astype(dt))
                out[r] = res / (gh * gw)
                continue
            best = None
            for yi, wy in ((ylo, wyl), (yhi, wyh)):
                for xi, wx in ((xlo, wxl), (xhi, wxh)):
                    v = (img[:, yi[:, :, None, None], xi[None, None, :, :]]
                         * (wy[:, :, None, None] * wx[None, None, :, :]).astype(dt))
                    best = v if best is None else np.maximum(best, v)
            assert best is not None
            out[r] = best.max(axis=(2, 4))


RoiAlign_10, RoiAlign = kernels(_RoiAlign, schema.RoiAlign_10, schema.RoiAlign,
                                module=__name__)
