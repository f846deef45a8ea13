"""Resize (opsets 10, 11-17, 18+) and the deprecated Upsample (opsets 7, 9): the
interpolation. Attributes, output sizes, scale factors and ROIs are the schemas'
(:mod:`mini_infer_core.ops.resize`).

Interpolation is separable: every resized axis is done in turn, as a gather of the ``n``
neighbours of each output position (``np.take`` along the axis) and a weighted sum with
per-position coefficients (nearest: one neighbour; linear: 2; cubic: 4; antialiased
linear/cubic: a footprint widened by 1/scale). Neighbours outside the input are clamped
(edge padding), or dropped and the weights renormalised with ``exclude_outside``;
tf_crop_and_resize positions outside the ROI take ``extrapolation_value``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.ops import resize as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._dynamic import emit
from ._util import kernels

__all__ = ["Resize_10", "Resize_11", "Resize", "Upsample_7", "Upsample_9", "axis_taps"]

Array = NDArray[Any]

def _source_coords(ctm: str, out_n: int, in_n: int, scale: float, roi: tuple[float, float]
                   ) -> tuple[Array, Array | None]:
    """Source coordinate of every output index, and the tf_crop_and_resize outside mask."""
    y = np.arange(out_n, dtype=np.float64)
    length = scale * in_n
    if ctm == "align_corners":
        x = np.zeros(out_n) if length == 1 else y * (in_n - 1) / (length - 1)
    elif ctm == "asymmetric":
        x = y / scale
    elif ctm == "tf_crop_and_resize":
        lo, hi = roi
        if length == 1:
            x = np.full(out_n, (hi - lo) * (in_n - 1) / 2)
        else:
            x = y * (hi - lo) * (in_n - 1) / (length - 1)
        x = x + lo * (in_n - 1)
        return x, (x < 0) | (x > in_n - 1)
    elif ctm == "pytorch_half_pixel":
        x = np.full(out_n, -0.5) if length == 1 else (y + 0.5) / scale - 0.5
    elif ctm == "half_pixel_symmetric":
        offset = in_n / 2 * (1 - out_n / length)
        x = offset + (y + 0.5) / scale - 0.5
    else:  # half_pixel (the schema checked the mode)
        x = (y + 0.5) / scale - 0.5
    return x, None


def _cubic(x: Array, a: float) -> Array:
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, np.where(x < 2, far, 0.0))


def _weights(mode: str, ratio: Array, scale: float, antialias: bool, a: float
             ) -> tuple[Array, int]:
    """Coefficients (out, n) for neighbours floor' - n/2 + 1 ... floor' + n/2, where
    ``ratio`` in (0, 1] is the distance from floor' (the left neighbour)."""
    if not antialias or scale >= 1.0:
        if mode == "linear":
            return np.stack([1 - ratio, ratio], axis=1), 1
        return np.stack([_cubic(ratio + 1, a), _cubic(ratio, a), _cubic(1 - ratio, a),
                         _cubic(2 - ratio, a)], axis=1), 2
    radius = 1.0 if mode == "linear" else 2.0
    start = math.floor(-radius / scale) + 1
    n = 2 - 2 * start
    args = (np.arange(start, start + n)[None, :] - ratio[:, None]) * scale
    if mode == "linear":
        w = np.clip(1 - np.abs(args), 0, 1)
    else:
        w = _cubic(args, a)
    return w / w.sum(axis=1, keepdims=True), 1 - start


def axis_taps(in_n: int, out_n: int, scale: float, roi: tuple[float, float],
              opts: dict[str, Any]) -> tuple[Array, Array | None, Array | None]:
    """How one axis of ``in_n`` is resized to ``out_n``: the source indices (out_n, n) of
    every output position's neighbours, clamped into the axis, their weights (out_n, n) (None:
    nearest, one neighbour), and the tf_crop_and_resize outside mask (None: none)."""
    x, outside = _source_coords(opts["ctm"], out_n, in_n, scale, roi)
    mode = opts["mode"]
    if mode == "nearest":
        fl = np.floor(x)
        r = x - fl
        nm = opts["nearest_mode"]
        if nm == "round_prefer_floor":
            up = r > 0.5
        elif nm == "round_prefer_ceil":
            up = r >= 0.5
        elif nm == "floor":
            up = np.zeros(r.shape, bool)
        elif nm == "ceil":
            up = r > 0
        else:  # simple (Resize-10 / Upsample): floor up, ceil down
            up = (r > 0) if scale < 1 else np.zeros(r.shape, bool)
        idx = np.clip(fl.astype(np.int64) + up, 0, in_n - 1)
        return idx[:, None], None, outside
    integral = x == np.floor(x)
    left = np.floor(x).astype(np.int64) - integral
    ratio = x - left
    w, first = _weights(mode, ratio, scale, opts["antialias"], opts["cubic_coeff_a"])
    n = w.shape[1]
    nb = left[:, None] + (np.arange(n) - first + 1)[None, :]
    if opts["exclude_outside"]:
        w = np.where((nb < 0) | (nb >= in_n), 0.0, w)
        s = w.sum(axis=1, keepdims=True)
        w = w / np.where(s == 0, 1.0, s)
    return np.clip(nb, 0, in_n - 1), w, outside


def _resize_axis(data: Array, axis: int, out_n: int, scale: float, roi: tuple[float, float],
                 opts: dict[str, Any]) -> Array:
    idx, w, outside = axis_taps(data.shape[axis], out_n, scale, roi, opts)
    if w is None:
        res = np.take(data, idx[:, 0], axis=axis)
    else:
        n = w.shape[1]
        pre = int(np.prod(data.shape[:axis], dtype=np.int64))
        g = np.take(data, idx.reshape(-1), axis=axis).reshape(pre, out_n, n, -1)
        res = np.einsum("pknq,kn->pkq", g, w).reshape(
            data.shape[:axis] + (out_n,) + data.shape[axis + 1:])
    if outside is not None and outside.any():
        mshape = (1,) * axis + (out_n,) + (1,) * (data.ndim - axis - 1)
        res = np.where(outside.reshape(mshape), opts["extrapolation_value"], res)
    return res


def interpolate(x: Array, steps: Sequence[schema.AxisPlan], opts: dict[str, Any]) -> Array:
    """``x`` resized axis by axis (in float64; integers rounded and saturated back)."""
    data = x if x.dtype == np.float64 else x.astype(np.float64)
    for step in steps:
        data = _resize_axis(data, step.axis, step.size, step.scale, step.roi, opts)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return np.clip(np.round(data), info.min, info.max).astype(x.dtype)
    return data.astype(x.dtype)


class _Resize(CpuPlugin, schema.ResizeBase):
    def compute(self, x: Array, *ins: Array | None, out: Any = None, **_: Any) -> Any:
        steps = self.plan(x.shape, *self.operands(x, *ins))
        return emit(interpolate(x, steps, self.opts), out)


Resize_10, Resize_11, Resize, Upsample_7, Upsample_9 = kernels(
    _Resize, schema.Resize_10, schema.Resize_11, schema.Resize, schema.Upsample_7,
    schema.Upsample_9, module=__name__)
