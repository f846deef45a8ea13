"""cpu_basic's QuantizeLinear and DequantizeLinear with their common case -- float32 x, one
scale and one 8-bit zero point (per tensor, what an INT8 build and ``quantize_static`` write
for activations) -- in cache-sized blocks: the same float32 arithmetic as cpu_basic's (so the
same bits), without its whole-tensor temporaries (a Magika batch: 33 million values, whose
temporaries made the Q/DQ steps cost more than the integer convolution saved).

* QuantizeLinear: ``clip(rint(x / scale) + zero_point)``, round half to even, saturated;
* DequantizeLinear: ``(float32(x) - zero_point) * scale``.

Anything else (per axis, blocked, other types) is cpu_basic's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import quantize as _quantize
from numpy.typing import NDArray

__all__ = ["DequantizeLinear", "QuantizeLinear"]

Array = NDArray[Any]
BLOCK = 1 << 15
_RANGE = {np.dtype(np.uint8): (0.0, 255.0), np.dtype(np.int8): (-128.0, 127.0)}


def _simple(x: Array, scale: Array, zp: Array | None, out: Array, block_size: int) -> bool:
    return (not block_size and scale.size == 1 and scale.dtype == np.float32
            and (zp is None or zp.size == 1) and out.flags.c_contiguous
            and x.flags.c_contiguous)


class QuantizeLinear(_quantize.QuantizeLinear):
    package = "mini-infer-cpu-native"

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
