"""Linear (de)quantization arithmetic shared by QuantizeLinear, DequantizeLinear and the
QLinear*/ *Integer kernels.

Scales and zero points are per tensor (a scalar or one element), per axis (1-D, as long as
``x.shape[axis]``) or blocked (``x``'s shape with ``ceil(x.shape[axis] / block_size)`` along
``axis``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops.quantize import QUANT_TYPES
from mini_infer_core.plugin import DataType
from mini_infer_core.plugin.arrays import NDArray

from ._convert import FLOAT8, float_info

__all__ = ["QUANT_TYPES", "dequantize", "expand_param", "int_range", "quantize",
           "requantize"]

Array = NDArray[Any]

#: integer quantized types and their ranges
_INT_RANGES: dict[DataType, tuple[int, int]] = {
    DataType.UINT8: (0, 255), DataType.INT8: (-128, 127),
    DataType.UINT16: (0, 65535), DataType.INT16: (-32768, 32767),
    DataType.UINT4: (0, 15), DataType.INT4: (-8, 7),
    DataType.UINT2: (0, 3), DataType.INT2: (-2, 1),
    DataType.INT32: (-(2 ** 31), 2 ** 31 - 1),
}


def int_range(t: DataType) -> tuple[int, int]:
    return _INT_RANGES[t]


def expand_param(value: Array, shape: tuple[int, ...], axis: int, block_size: int,
                 op: str) -> Array:
    """A scale or zero point made broadcastable to ``shape`` (see the module doc)."""
    if value.ndim == 0 or value.size == 1 and not block_size:
        return value.reshape(())
    rank = len(shape)
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise PluginInterfaceError(f"{op}: axis {axis} is out of range for rank {rank}")
    if not block_size:
        if value.ndim != 1 or value.shape[0] != shape[a]:
            raise PluginInterfaceError(
                f"{op}: a per-axis scale/zero point must be 1-D of {shape[a]} elements "
                f"(axis {axis} of {shape}), got shape {value.shape}")
        return value.reshape([shape[a] if k == a else 1 for k in range(rank)])
    if block_size < 0:
        raise PluginInterfaceError(f"{op}: block_size must be positive, got {block_size}")
    expected = tuple(-(-shape[a] // block_size) if k == a else d for k, d in enumerate(shape))
    if value.shape != expected:
        raise PluginInterfaceError(
            f"{op}: blocked scale/zero point must have shape {expected} (block_size "
            f"{block_size} along axis {axis} of {shape}), got {value.shape}")
    full = np.repeat(value, block_size, axis=a)
    return full.take(np.arange(shape[a]), axis=a) if full.shape[a] != shape[a] else full


def quantize(x: Array, scale: Array, zero_point: Array | None, to: DataType, *,
             saturate: bool = True, precision: DataType | None = None) -> Array:
    """``saturate(round(x / scale) + zero_point)`` as type ``to``; ``scale``/``zero_point``
    already broadcastable to ``x``. Rounding is half to even."""
    if precision is not None:
        xs = x.astype(precision.numpy) / scale.astype(precision.numpy)
    else:
        xs = np.divide(x, scale)
    if to in _INT_RANGES:
        lo, hi = _INT_RANGES[to]
        q = np.rint(xs)
        if zero_point is not None:
            q = q + zero_point.astype(np.float64 if q.dtype == np.float64 else np.float32)
        return np.clip(q, lo, hi).astype(to.numpy)
    if to in FLOAT8:
        if saturate:
            info = float_info(to.numpy)
            xs = np.clip(xs, xs.dtype.type(info.min), xs.dtype.type(info.max))
        return xs.astype(to.numpy)
    if to is DataType.FLOAT4E2M1:
        if zero_point is not None:
            xs = xs + zero_point.astype(np.float32)
        return xs.astype(to.numpy)
    raise PluginInterfaceError(f"QuantizeLinear: {to.name} is not a quantized type")


def dequantize(x: Array, scale: Array, zero_point: Array | None) -> Array:
    """``(x - zero_point) * scale`` in float32 (float64 scales: float64)."""
    wd = np.float64 if scale.dtype == np.float64 else np.float32
    dx = x.astype(wd)
    is_float = x.dtype.kind == "f" or "float" in x.dtype.name  # float8/float4: no zero point
    if zero_point is not None and not is_float:
        dx = dx - zero_point.astype(wd)
    res: Array = dx * scale.astype(wd)
    return res


def requantize(acc: Array, multiplier: Array, zero_point: Array | None, out: Array) -> None:
    """``out = saturate(round(acc * multiplier + zero_point))`` (float64 arithmetic)."""
    r = acc.astype(np.float64) * multiplier
    if zero_point is not None:
        r += zero_point.astype(np.float64)
    lo, hi = np.iinfo(out.dtype).min, np.iinfo(out.dtype).max
    np.clip(np.rint(r), lo, hi, out=r)
    np.copyto(out, r, casting="unsafe")
