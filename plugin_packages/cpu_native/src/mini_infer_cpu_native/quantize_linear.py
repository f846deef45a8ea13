"""cpu_basic's QuantizeLinear and DequantizeLinear with their common case -- float32 x, one
scale and one 8-bit zero point (per tensor, what an INT8 build and ``quantize_static`` write
for activations) -- in cache-sized blocks: the same float32 arithmetic as cpu_basic's (so the
same bits), without its whole-tensor temporaries (a Magika batch: 33 million values, whose
temporaries made the Q/DQ steps cost more than the integer convolution saved).

* QuantizeLinear: ``clip(rint(x / scale) + zero_point)``, round half to even, saturated, in
  one compiled pass (``mi_qquant_f32``, ``_qquant.c``); of a rank-4 x its y may be NHWC
  (``TensorFormat.HWC``: a quantized CNN's NHWC region then begins at its input's
  QuantizeLinear, with no Reformat step after it);
* DequantizeLinear: ``(float32(x) - zero_point) * scale``.

Per axis (one float32 scale and 8-bit zero point per channel of x's ``axis``, what NNCF writes
for activations after a per-channel ReLU6): one compiled call over every plane, each by its
channel's scale and zero point (``mi_qquant_f32``, ``mi_qdequant_i8``) -- the same float32
operations as cpu_basic's, so the same bits (MobileNetV2 by NNCF: 35 pairs on maps of up to
96 x 112 x 112, 14.5 ms of a 22 ms run in NumPy's passes before).

Anything else (blocked, other types) is cpu_basic's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import quantize as _quantize

from mini_infer_core.plugin import DataType, PluginTensorDesc, TensorFormat
from mini_infer_core.plugin.arrays import NDArray

from ._abi import QDequantArgs, QQuantArgs
from ._native import _kernel
from ._qformats import hwc_formats
from ._qgemm import _check, _ptr

__all__ = ["DequantizeLinear", "QuantizeLinear"]

Array = NDArray[Any]
BLOCK = 1 << 15
_RANGE = {np.dtype(np.uint8): (0.0, 255.0), np.dtype(np.int8): (-128.0, 127.0)}
_quant = _kernel("mi_qquant_f32", QQuantArgs)
_dequant = _kernel("mi_qdequant_i8", QDequantArgs)
HWC = TensorFormat.HWC


def _per_axis(x: Array, scale: Array, zp: Array | None, out: Array, axis: int,
              block_size: int) -> tuple[int, int, int] | None:
    """(outer, channels, inner) where ``scale`` (float32) and ``zp`` hold one value per
    channel of x's ``axis``; else None."""
    if block_size or x.ndim == 0 or scale.ndim != 1 or scale.dtype != np.float32:
        return None
    ax = axis + x.ndim if axis < 0 else axis
    if not 0 <= ax < x.ndim or scale.size != x.shape[ax] or scale.size < 2:
        return None
    if zp is not None and zp.shape != scale.shape:
        return None
    if not (x.flags.c_contiguous and out.flags.c_contiguous):
        return None
    inner = int(np.prod(x.shape[ax + 1:], dtype=np.int64))
    return int(np.prod(x.shape[:ax], dtype=np.int64)), int(scale.size), inner


def _simple(x: Array, scale: Array, zp: Array | None, out: Array, block_size: int) -> bool:
    return (not block_size and scale.size == 1 and scale.dtype == np.float32
            and (zp is None or zp.size == 1) and out.flags.c_contiguous
            and x.flags.c_contiguous)


class QuantizeLinear(_quantize.QuantizeLinear):
    package = "mini-infer-cpu-native"

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        """Y NHWC (a uint8/int8 rank-4 y of float32 x, one scale and zero point, no blocks)
        with everything else LINEAR; or everything LINEAR."""
        desc = in_out[pos]
        if desc.format is TensorFormat.LINEAR:
            return True
        if pos != num_inputs or desc.format is not HWC:
            return False
        x = in_out[0]
        return (len(desc.shape) == 4 and desc.dtype in (DataType.UINT8, DataType.INT8)
                and x.dtype == DataType.FLOAT
                and all(int(np.prod(d.shape)) == 1 for d in in_out[1:num_inputs]))

    def compute(self, x: Array, y_scale: Array, y_zero_point: Array | None = None, *,
                out: Array, axis: int, saturate: int, block_size: int, **kw: Any) -> None:
        hwc = hwc_formats(self)[-1]
        if (x.dtype != np.float32 or out.dtype not in _RANGE
                or (y_zero_point is not None and y_zero_point.dtype != out.dtype)
                or not _simple(x, y_scale, y_zero_point, out, block_size)
                or self.precision is not None):
            planes = None if (hwc or x.dtype != np.float32 or out.dtype not in _RANGE
                              or self.precision is not None
                              or (y_zero_point is not None
                                  and y_zero_point.dtype != out.dtype)) else _per_axis(
                x, y_scale, y_zero_point, out, axis, block_size)
            if planes is not None:
                self._quantize_planes(x, y_scale, y_zero_point, out, *planes)
                return
            if not hwc:
                super().compute(x, y_scale, y_zero_point, out=out, axis=axis,
                                saturate=saturate, block_size=block_size, **kw)
                return
            y = np.empty(x.shape, out.dtype)  # cpu_basic's NCHW, then into the NHWC y
            super().compute(x, y_scale, y_zero_point, out=y, axis=axis, saturate=saturate,
                            block_size=block_size, **kw)
            np.copyto(out, y.transpose(0, 2, 3, 1))
            return
        s = np.float32(y_scale.reshape(-1)[0])
        zp = 0 if y_zero_point is None else int(y_zero_point.reshape(-1)[0])
        n, c = (x.shape[0], x.shape[1]) if hwc else (1, 1)
        kn = "mi_qquant_f32"
        args = QQuantArgs(_ptr(x, (np.float32,), x.size, False, kn, "x"),
                          _ptr(out, (out.dtype,), x.size, True, kn, "y"),
                          n, c, x.size // max(1, n * c), float(s), zp,
                          int(out.dtype == np.int8), int(hwc))
        _check(_quant, args)

    @staticmethod
    def _quantize_planes(x: Array, scale: Array, zp: Array | None, out: Array, outer: int,
                         channels: int, inner: int) -> None:
        """Per axis: one compiled call, each (outer, channel) plane of ``inner`` values by its
        channel's scale and zero point."""
        kn = "mi_qquant_f32"
        zps = np.zeros(channels, np.int32) if zp is None else zp.astype(np.int32)
        args = QQuantArgs(_ptr(x, (np.float32,), x.size, False, kn, "x"),
                          _ptr(out, (out.dtype,), x.size, True, kn, "y"),
                          outer, channels, inner, 0.0, 0, int(out.dtype == np.int8), 0,
                          _ptr(scale, (np.float32,), channels, False, kn, "scales"),
                          _ptr(zps, (np.int32,), channels, False, kn, "zps"))
        _check(_quant, args)


class DequantizeLinear(_quantize.DequantizeLinear):
    package = "mini-infer-cpu-native"

    def compute(self, x: Array, x_scale: Array, x_zero_point: Array | None = None, *,
                out: Array, axis: int, block_size: int, **kw: Any) -> None:
        if (x.dtype not in _RANGE or out.dtype != np.float32
                or not _simple(x, x_scale, x_zero_point, out, block_size)):
            planes = None if (x.dtype not in _RANGE or out.dtype != np.float32) else _per_axis(
                x, x_scale, x_zero_point, out, axis, block_size)
            if planes is not None:
                self._dequantize_planes(x, x_scale, x_zero_point, out, *planes)
                return
            super().compute(x, x_scale, x_zero_point, out=out, axis=axis,
                            block_size=block_size, **kw)
            return
        s = np.float32(x_scale.reshape(-1)[0])
        z = np.float32(0 if x_zero_point is None else x_zero_point.reshape(-1)[0])
        src, dst = x.reshape(-1), out.reshape(-1)
        for start in range(0, src.size, BLOCK):
            t = dst[start:start + BLOCK]
            np.copyto(t, src[start:start + BLOCK], casting="unsafe")
            t -= z
            t *= s

    @staticmethod
    def _dequantize_planes(x: Array, scale: Array, zp: Array | None, out: Array, outer: int,
                           channels: int, inner: int) -> None:
        """Per axis: one compiled call, ``(float32(x) - zp[c]) * scale[c]`` plane by plane."""
        kn = "mi_qdequant_i8"
        zps = None if zp is None else zp.astype(np.int32)
        args = QDequantArgs(_ptr(x, tuple(_RANGE), x.size, False, kn, "x"),
                            _ptr(out, (np.float32,), x.size, True, kn, "y"),
                            outer, channels, inner,
                            _ptr(scale, (np.float32,), channels, False, kn, "scales"),
                            _ptr(zps, (np.int32,), channels, False, kn, "zps"),
                            int(x.dtype == np.int8))
        _check(_dequant, args)
