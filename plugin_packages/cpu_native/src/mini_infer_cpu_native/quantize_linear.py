"""cpu_basic's QuantizeLinear and DequantizeLinear with their common case -- float32 x, one
scale and one 8-bit zero point (per tensor, what an INT8 build and ``quantize_static`` write
for activations) -- in cache-sized blocks: the same float32 arithmetic as cpu_basic's (so the
same bits), without its whole-tensor temporaries (a Magika batch: 33 million values, whose
temporaries made the Q/DQ steps cost more than the integer convolution saved).

* QuantizeLinear: ``clip(rint(x / scale) + zero_point)``, round half to even, saturated;
  compiled (``mi_quantize_f32``, ``_qquant.c``: the same float32 operations) where the scale
  is positive, and then its output may be NHWC (``TensorFormat.HWC``, negotiated by the
  builder) from an NCHW x: a network's first QuantizeLinear writes what the integer
  convolutions take, with no Reformat after it;
* DequantizeLinear: ``(float32(x) - zero_point) * scale``.

Anything else (per axis, blocked, other types) is cpu_basic's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import quantize as _quantize
from numpy.typing import NDArray

from mini_infer_core.plugin import DataType, PluginTensorDesc, TensorFormat

from ._abi import QuantizeArgs
from ._native import _kernel
from ._qformats import hwc_formats
from ._qgemm import _check, _ptr

__all__ = ["DequantizeLinear", "QuantizeLinear"]

Array = NDArray[Any]
BLOCK = 1 << 15
_RANGE = {np.dtype(np.uint8): (0.0, 255.0), np.dtype(np.int8): (-128.0, 127.0)}
_quantize_f32 = _kernel("mi_quantize_f32", QuantizeArgs)
HWC = TensorFormat.HWC


def _one(desc: PluginTensorDesc) -> bool:
    """Whether a tensor description is of one element (a per-tensor scale or zero point)."""
    try:
        return all(int(d) == 1 for d in desc.shape)
    except (TypeError, ValueError):
        return False


def _simple(x: Array, scale: Array, zp: Array | None, out: Array, block_size: int) -> bool:
    return (not block_size and scale.size == 1 and scale.dtype == np.float32
            and (zp is None or zp.size == 1) and out.flags.c_contiguous
            and x.flags.c_contiguous)


class QuantizeLinear(_quantize.QuantizeLinear):
    package = "mini-infer-cpu-native"

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        desc = in_out[pos]
        if desc.format is not HWC:
            return super().supports_format_combination(pos, in_out, num_inputs)
        x = in_out[0]  # an NHWC y of an NCHW float32 x, per tensor, 8 bits
        return (pos == num_inputs and len(desc.shape) == 4
                and desc.dtype in (DataType.UINT8, DataType.INT8)
                and x.dtype is DataType.FLOAT and x.format is TensorFormat.LINEAR
                and all(_one(d) for d in in_out[1:num_inputs])
                and not int(self.attrs.get("block_size", 0) or 0)
                and self.precision is None)

    def compute(self, x: Array, y_scale: Array, y_zero_point: Array | None = None, *,
                out: Array, axis: int, saturate: int, block_size: int, **kw: Any) -> None:
        if (x.dtype != np.float32 or out.dtype not in _RANGE
                or (y_zero_point is not None and y_zero_point.dtype != out.dtype)
                or not _simple(x, y_scale, y_zero_point, out, block_size)
                or self.precision is not None):
            super().compute(x, y_scale, y_zero_point, out=out, axis=axis, saturate=saturate,
                            block_size=block_size, **kw)
            return
        s = np.float32(y_scale.reshape(-1)[0])
        z = np.float32(0 if y_zero_point is None else y_zero_point.reshape(-1)[0])
        hwc = hwc_formats(self)[-1]  # then out is (N, H, W, C), x NCHW
        if np.isfinite(s) and s > 0 and (not hwc or x.ndim == 4):
            n, c = (x.shape[0], x.shape[1]) if x.ndim >= 2 else (1, 1)
            kn = "mi_quantize_f32"
            _check(_quantize_f32, QuantizeArgs(
                _ptr(x, (np.float32,), x.size, False, kn, "x"),
                _ptr(out, tuple(_RANGE), x.size, True, kn, "y"), n, c,
                x.size // max(n * c, 1), s, int(z), int(out.dtype == np.int8), int(hwc)))
            return
        if hwc:  # NumPy's into NCHW, then the NHWC copy
            tmp = np.empty(x.shape, out.dtype)
            _quantize_blocks(x, s, z, tmp)
            np.copyto(out, tmp.transpose(0, 2, 3, 1))
        else:
            _quantize_blocks(x, s, z, out)


def _quantize_blocks(x: Array, s: np.float32, z: np.float32, out: Array) -> None:
    """QuantizeLinear in NumPy, block by block (a scale the kernel does not take)."""
    lo, hi = _RANGE[out.dtype]
    src, dst = x.reshape(-1), out.reshape(-1)
    tmp = np.empty(min(BLOCK, src.size), np.float32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for start in range(0, src.size, BLOCK):
            n = min(BLOCK, src.size - start)
            t = tmp[:n]
            np.divide(src[start:start + n], s, out=t)
            np.rint(t, out=t)
            t += z
            np.clip(t, lo, hi, out=t)
            np.copyto(dst[start:start + n], t, casting="unsafe")


class DequantizeLinear(_quantize.DequantizeLinear):
    package = "mini-infer-cpu-native"

    def compute(self, x: Array, x_scale: Array, x_zero_point: Array | None = None, *,
                out: Array, axis: int, block_size: int, **kw: Any) -> None:
        if (x.dtype not in _RANGE or out.dtype != np.float32
                or not _simple(x, x_scale, x_zero_point, out, block_size)):
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
