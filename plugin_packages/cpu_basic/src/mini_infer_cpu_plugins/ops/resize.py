"""Resize (opsets 10, 11-17, 18+) and the deprecated Upsample (opsets 7, 9).

Interpolation is separable: every resized axis is done in turn, as a gather of the ``n``
neighbours of each output position (``np.take`` along the axis) and a weighted sum with
per-position coefficients (nearest: one neighbour; linear: 2; cubic: 4; antialiased
linear/cubic: a footprint widened by 1/scale). Neighbours outside the input are clamped
(edge padding), or dropped and the weights renormalised with ``exclude_outside``;
tf_crop_and_resize positions outside the ROI take ``extrapolation_value``.

The output shape depends on the values of ``scales``/``sizes``: build-time ``sizes`` give a
static shape; otherwise (run-time tensors, and float ``scales``, whose values the builder
does not carry) the node turns data-dependent (``ValuePlugin``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DimExpr, DimsExprs, IntLike

from ._dynamic import ValuePlugin
from ._nn_util import to_str

__all__ = ["Resize_10", "Resize_11", "Resize", "Upsample_7", "Upsample_9"]

Array = NDArray[Any]

_MODES = ("nearest", "linear", "cubic")


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
    elif ctm == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif ctm == "half_pixel_symmetric":
        offset = in_n / 2 * (1 - out_n / length)
        x = offset + (y + 0.5) / scale - 0.5
    else:
        raise PluginInterfaceError(f"Resize: unknown coordinate_transformation_mode {ctm!r}")
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


def _resize_axis(data: Array, axis: int, out_n: int, scale: float, roi: tuple[float, float],
                 opts: dict[str, Any]) -> Array:
    in_n = data.shape[axis]
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
        elif nm == "simple":  # Resize-10 / Upsample: floor up, ceil down
            up = (r > 0) if scale < 1 else np.zeros(r.shape, bool)
        else:
            raise PluginInterfaceError(f"Resize: unknown nearest_mode {nm!r}")
        idx = np.clip(fl.astype(np.int64) + up, 0, in_n - 1)
        res = np.take(data, idx, axis=axis)
    else:
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
        idx = np.clip(nb, 0, in_n - 1)
        pre = int(np.prod(data.shape[:axis], dtype=np.int64))
        g = np.take(data, idx.reshape(-1), axis=axis).reshape(pre, out_n, n, -1)
        res = np.einsum("pknq,kn->pkq", g, w).reshape(
            data.shape[:axis] + (out_n,) + data.shape[axis + 1:])
    if outside is not None and outside.any():
        mshape = (1,) * axis + (out_n,) + (1,) * (data.ndim - axis - 1)
        res = np.where(outside.reshape(mshape), opts["extrapolation_value"], res)
    return res


def _plan(shape: Sequence[int], scales: Sequence[float] | None, sizes: Sequence[int] | None,
          axes: Sequence[int], policy: str) -> tuple[list[int], list[float]]:
    """Output sizes and per-axis scale factors (for the listed axes)."""
    r = len(shape)
    if sizes is not None:
        if len(sizes) != len(axes):
            raise PluginInterfaceError(f"Resize: {len(sizes)} sizes for {len(axes)} axes")
        f = [sizes[i] / shape[a] for i, a in enumerate(axes)]
        if policy in ("not_larger", "not_smaller"):
            s = min(f) if policy == "not_larger" else max(f)
            return [int(s * shape[a] + 0.5) for a in axes], [s] * len(axes)
        if policy != "stretch":
            raise PluginInterfaceError(f"Resize: unknown keep_aspect_ratio_policy {policy!r}")
        return list(sizes), f
    if scales is None or len(scales) != len(axes):
        raise PluginInterfaceError(f"Resize: needs {len(axes)} scales or sizes (rank {r})")
    return [int(s * shape[a]) for s, a in zip(scales, axes, strict=True)], list(scales)


def resize(x: Array, roi: Array | None, scales: Array | None, sizes: Array | None,
           axes: Sequence[int] | None, opts: dict[str, Any]) -> Array:
    r = x.ndim
    ax = [a + r if a < 0 else a for a in axes] if axes else list(range(r))
    sc = None if scales is None or scales.size == 0 else [float(v) for v in scales]
    sz = None if sizes is None or sizes.size == 0 else [int(v) for v in sizes]
    out_n, factors = _plan(x.shape, sc, sz, ax, opts.get("policy", "stretch"))
    rv = None if roi is None or roi.size == 0 else [float(v) for v in roi.reshape(-1)]
    data = x if x.dtype == np.float64 else x.astype(np.float64)
    for i, a in enumerate(ax):
        lohi = (0.0, 1.0) if rv is None else (rv[i], rv[len(ax) + i])
        if out_n[i] == data.shape[a] and math.isclose(factors[i], 1.0) and lohi == (0.0, 1.0):
            continue
        data = _resize_axis(data, a, out_n[i], factors[i], lohi, opts)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return np.clip(np.round(data), info.min, info.max).astype(x.dtype)
    return data.astype(x.dtype)


class _ResizeBase(ValuePlugin):
    #: input positions of roi, scales, sizes (None: absent in this opset)
    slots: ClassVar[tuple[int | None, int | None, int | None]] = (1, 2, 3)

    def setup(self) -> None:
        a = self.attrs
        mode = to_str(a.get("mode", "nearest")).lower()
        if mode == "bilinear":
            mode = "linear"
        if mode not in _MODES:
            raise PluginInterfaceError(f"{self.op_type}: unknown mode {mode!r}")
        self.opts: dict[str, Any] = {
            "mode": mode,
            "ctm": to_str(a.get("coordinate_transformation_mode", "asymmetric")),
            "nearest_mode": to_str(a.get("nearest_mode", "simple")),
            "cubic_coeff_a": float(a.get("cubic_coeff_a", -0.75)),
            "exclude_outside": bool(a.get("exclude_outside", 0)),
            "extrapolation_value": float(a.get("extrapolation_value", 0.0)),
            "antialias": bool(a.get("antialias", 0)) and mode != "nearest",
            "policy": to_str(a.get("keep_aspect_ratio_policy", "stretch")),
        }

    def supports_format_combination(self, pos: int, in_out: Sequence[Any],
                                    num_inputs: int) -> bool:
        return True

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        x = inputs[0]
        assert x is not None
        r = len(x)
        axes = [a + r if a < 0 else a for a in (self.attrs.get("axes") or range(r))]
        out: list[IntLike] = list(x)
        _, _, k_sizes = self.slots
        sizes = self.ints(inputs, k_sizes) if k_sizes is not None else None
        if sizes and self.opts["policy"] == "stretch" and len(sizes) == len(axes):
            for a, v in zip(axes, sizes, strict=True):
                out[a] = v
            return [out]
        if sizes and x.is_static():
            n, _ = _plan(x.to_tuple(), None, sizes, axes, self.opts["policy"])
            for a, v in zip(axes, n, strict=True):
                out[a] = v
            return [out]
        scaled = self._scaled(inputs, out, axes)
        if scaled is not None:
            return [scaled]
        self.runtime(True)
        for a in axes:
            out[a] = self.dynamic_dim(f"d{a}")
        return [out]

    def _scaled(self, inputs: Sequence[DimsExprs | None], out: list[IntLike],
                axes: Sequence[int]) -> list[IntLike] | None:
        """Output dims from constant float ``scales`` (floor(dim * scale)): exact at build time
        for constant dims, and for symbolic ones when the scale is a whole number."""
        k = self.slots[1]
        scales = inputs[k] if k is not None and k < len(inputs) else None
        arr = getattr(scales, "array", None)
        if arr is None or arr.size != len(axes) or \
                self.attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
            return None
        dims = list(out)
        for a, s in zip(axes, (float(v) for v in np.asarray(arr).reshape(-1)), strict=True):
            d = DimExpr.wrap(dims[a])
            if s > 0 and s == int(s):
                dims[a] = d * int(s)
            elif d.is_constant():
                dims[a] = int(np.floor(d.get_constant_value() * s))
            else:
                return None
        return dims

    def _inputs(self, ins: Sequence[Array | None]) -> tuple[Array | None, ...]:
        return tuple(None if k is None or k >= len(ins) else ins[k] for k in self.slots)

    def compute(self, x: Array, *ins: Array | None, out: Any = None, **_: Any) -> Any:
        roi, scales, sizes = self._inputs((x, *ins))
        y = resize(x, roi, scales, sizes, self.attrs.get("axes"), self.opts)
        if out is None:
            return y
        np.copyto(out, y)
        return None


class Resize_10(_ResizeBase):  # noqa: N801
    """Opset 10: (X, scales), asymmetric coordinates, nearest rounds down when upsampling
    and up when downsampling (onnxruntime's behaviour)."""

    op_type = "Resize"
    plugin_version = "10"
    min_opset = 10
    max_opset = 10
    slots = (None, 1, None)
    attributes: ClassVar[dict[str, Any]] = {"mode": "nearest"}


_ATTRS_11: dict[str, Any] = {
    "coordinate_transformation_mode": "half_pixel", "cubic_coeff_a": -0.75,
    "exclude_outside": 0, "extrapolation_value": 0.0, "mode": "nearest",
    "nearest_mode": "round_prefer_floor"}


class Resize_11(_ResizeBase):  # noqa: N801
    """Opsets 11-17: (X, roi, scales, sizes); one of scales/sizes (the other may be empty)."""

    op_type = "Resize"
    plugin_version = "11"
    min_opset = 11
    max_opset = 17
    attributes: ClassVar[dict[str, Any]] = dict(_ATTRS_11)


class Resize(_ResizeBase):
    """Opset 18+: also ``antialias``, ``axes`` and ``keep_aspect_ratio_policy`` (19 adds
    the half_pixel_symmetric coordinate mode, accepted here)."""

    plugin_version = "18"
    min_opset = 18
    attributes: ClassVar[dict[str, Any]] = {
        **_ATTRS_11, "antialias": 0, "axes": None, "keep_aspect_ratio_policy": "stretch"}


class Upsample_9(_ResizeBase):  # noqa: N801
    """Upsample (deprecated in opset 10): X, scales; nearest or (bi)linear, asymmetric."""

    op_type = "Upsample"
    plugin_version = "9"
    min_opset = 9
    max_opset = 9
    slots = (None, 1, None)
    attributes: ClassVar[dict[str, Any]] = {"mode": "nearest"}


class Upsample_7(_ResizeBase):  # noqa: N801
    """Opsets 7-8: the scales are an attribute, so the output shape is static."""

    op_type = "Upsample"
    plugin_version = "7"
    min_opset = 7
    max_opset = 8
    slots = (None, None, None)
    attributes: ClassVar[dict[str, Any]] = {"mode": "nearest", "scales": REQUIRED}

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        x = inputs[0]
        assert x is not None
        sc = list(self.attrs["scales"])
        if len(sc) != len(x):
            raise PluginInterfaceError(f"Upsample: {len(sc)} scales for rank {len(x)}")
        out: list[IntLike] = []
        for d, s in zip(x, sc, strict=True):
            if float(s) == int(s):
                out.append(d * int(s))
            elif d.is_constant():
                out.append(int(float(s) * d.get_constant_value()))
            else:
                raise PluginInterfaceError(
                    "Upsample: a fractional scale needs a build-time constant dimension")
        return [out]

    def compute(self, x: Array, *ins: Array | None, out: Any = None, **_: Any) -> Any:
        scales = np.asarray(self.attrs["scales"], np.float32)
        y = resize(x, None, scales, None, None, self.opts)
        if out is None:
            return y
        np.copyto(out, y)
        return None
