"""QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked; int2/4/8/16, float8 and
float4e2m1 quantized types) and DynamicQuantizeLinear (schemas in
:mod:`mini_infer_core.ops.quantize`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import quantize as schema
from mini_infer_core.plugin import DataType
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._quant import dequantize, expand_param, quantize

__all__ = ["QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"]

Array = NDArray[Any]


class QuantizeLinear(CpuPlugin, schema.QuantizeLinear):
    def compute(self, x: Array, y_scale: Array, y_zero_point: Array | None = None, *,
                out: Array, axis: int, saturate: int, block_size: int, **_: Any) -> None:
        op = "QuantizeLinear"
        scale = expand_param(y_scale, x.shape, axis, block_size, op)
        zp = None if y_zero_point is None else expand_param(
            y_zero_point, x.shape, axis, block_size, op)
        to = DataType.from_numpy(out.dtype)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out[...] = quantize(x, scale, zp, to, saturate=bool(saturate),
                                precision=self.precision)


class DequantizeLinear(CpuPlugin, schema.DequantizeLinear):
    def compute(self, x: Array, x_scale: Array, x_zero_point: Array | None = None, *,
                out: Array, axis: int, block_size: int, **_: Any) -> None:
        op = "DequantizeLinear"
        scale = expand_param(x_scale, x.shape, axis, block_size, op)
        zp = None if x_zero_point is None else expand_param(
            x_zero_point, x.shape, axis, block_size, op)
        out[...] = dequantize(x, scale, zp).astype(out.dtype)


class DynamicQuantizeLinear(CpuPlugin, schema.DynamicQuantizeLinear):
    def compute(self, x: Array, *, out: tuple[Array, Array, Array]) -> None:
        y, y_scale, y_zp = out
        f32 = np.float32
        hi = f32(max(0.0, float(np.max(x)))) if x.size else f32(0)
        lo = f32(min(0.0, float(np.min(x)))) if x.size else f32(0)
        scale = f32(1.0) if hi == lo else f32(hi - lo) / f32(255)
        zp = np.rint(np.clip(f32(0) - lo / scale, 0, 255))
        with np.errstate(invalid="ignore"):
            q = np.rint(x / scale)
            q += zp
            np.clip(q, 0, 255, out=q)
        np.copyto(y, q, casting="unsafe")
        y_scale[...] = scale
        y_zp[...] = zp
