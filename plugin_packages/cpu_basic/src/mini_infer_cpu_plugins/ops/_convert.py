"""Element type conversion shared by Cast, CastLike and the quantization kernels.

Every ONNX element type NumPy and ml_dtypes hold: the narrow floats (bfloat16, float8 in four
flavours, float8e8m0, float4e2m1), the narrow ints (int4/uint4/int2/uint2) and strings (the
engine keeps them as ``object`` arrays of ``str``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.plugin import DataType
from mini_infer_core.plugin.arrays import NDArray

__all__ = ["FLOAT8", "NARROW_INTS", "cast_array", "cast_into", "float_info", "is_native",
           "to_e8m0"]

Array = NDArray[Any]

#: float8 types whose ``saturate`` attribute matters (clamp instead of inf/NaN on overflow)
FLOAT8: frozenset[DataType] = frozenset({
    DataType.FLOAT8E4M3FN, DataType.FLOAT8E4M3FNUZ, DataType.FLOAT8E5M2,
    DataType.FLOAT8E5M2FNUZ})
NARROW_INTS: frozenset[DataType] = frozenset({
    DataType.INT4, DataType.UINT4, DataType.INT2, DataType.UINT2})


def is_native(dtype: np.dtype[Any]) -> bool:
    """Whether ``dtype`` is one of NumPy's own (not an ml_dtypes extension type)."""
    return dtype.kind in "biufcOSU" and type(dtype).__module__.startswith("numpy")


def float_info(dtype: np.dtype[Any]) -> Any:
    """``finfo`` for native and ml_dtypes floats."""
    import ml_dtypes

    finfo: Any = ml_dtypes.finfo
    return finfo(dtype)


def _parse_strings(x: Array, dtype: np.dtype[Any]) -> Array:
    """Strings (``str`` or ``bytes`` objects) to numbers, as ONNX Cast parses them."""
    text = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in x.reshape(-1)],
                    dtype=np.str_).reshape(x.shape)
    text = np.char.strip(text)
    if dtype.kind == "b":
        low = np.char.lower(text)
        return np.asarray((low == "true") | ((low != "false") & (low != "") & (low != "0")))
    if dtype.kind in "iu":
        try:
            return text.astype(dtype)
        except ValueError:
            return text.astype(np.float64).astype(dtype)
    return text.astype(np.float64 if dtype.itemsize > 4 else np.float32)


_SPECIAL = {"inf": "INF", "-inf": "-INF", "nan": "NaN", "-nan": "NaN"}


def _to_strings(x: Array) -> Array:
    """Numbers as text, as onnxruntime writes them: floats ``%.8g`` with ONNX's ``INF``,
    ``-INF`` and ``NaN``, bools ``1`` / ``0``, integers in full."""
    if x.dtype == object:
        return x
    if x.dtype.kind in "SU":
        return np.asarray(x.astype(np.str_), dtype=object)
    if x.dtype.kind == "b":
        x = x.astype(np.uint8)
    elif x.dtype.kind == "f" or not is_native(x.dtype):
        flat = [format(v, ".8g") for v in x.astype(np.float64).reshape(-1).tolist()]
        out = np.empty(len(flat), dtype=object)
        out[:] = [_SPECIAL.get(s, s) for s in flat]
        return out.reshape(x.shape)
    return np.asarray(x.astype(np.str_), dtype=object)


def to_e8m0(x: Array, saturate: bool = True, round_mode: str = "up") -> Array:
    """float -> float8e8m0 (a power of two): keep the float32 exponent, round its mantissa
    away ("up"), to nearest-even ("nearest") or drop it ("down"); NaN/Inf -> 0xFF."""
    import ml_dtypes

    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    exp = ((bits >> 23) & 0xFF).astype(np.uint16)
    frac = bits & 0x7FFFFF
    special = exp == 0xFF
    if round_mode == "up":
        bump = frac > 0
    elif round_mode == "nearest":
        guard = (bits & 0x400000) > 0
        rest = (bits & 0x3FFFFF) > 0
        bump = guard & (rest | (exp > 0))
    elif round_mode == "down":
        bump = np.zeros(exp.shape, bool)
    else:
        raise ValueError(f"unknown round_mode {round_mode!r} (up, down, nearest)")
    bump &= ~special
    if saturate:
        bump &= exp != 0xFE
    exp = exp + bump.astype(np.uint16)
    exp[special] = 0xFF
    return np.minimum(exp, 0xFF).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)


def cast_array(x: Array, to: DataType, saturate: bool = True, round_mode: str = "up"
               ) -> Array:
    """``x`` converted to ``to`` with ONNX Cast semantics (a new array or ``x`` itself)."""
    dst = to.numpy
    if to is DataType.STRING:
        return _to_strings(x)
    if x.dtype.kind in "OSU":
        x = _parse_strings(x, dst)
    if to in FLOAT8 and saturate:
        info = float_info(dst)
        src = x if x.dtype.kind == "f" or not is_native(x.dtype) else x.astype(np.float64)
        if x.dtype.kind in "iub":
            lo, hi = float(info.min), float(info.max)
        else:
            lo, hi = src.dtype.type(info.min), src.dtype.type(info.max)
        return np.asarray(np.clip(src, lo, hi)).astype(dst)
    if to is DataType.FLOAT8E8M0:
        return to_e8m0(x, saturate, round_mode)
    return x.astype(dst)


def cast_into(out: Array, x: Array, to: DataType, saturate: bool = True,
              round_mode: str = "up") -> None:
    """Cast ``x`` into the preallocated ``out`` (of type ``to``); overflow gives inf (or the
    target's wrapped value), as C casts do, without warnings."""
    with np.errstate(all="ignore"):
        _cast_into(out, x, to, saturate, round_mode)


def _cast_into(out: Array, x: Array, to: DataType, saturate: bool, round_mode: str) -> None:
    if to is DataType.STRING or x.dtype.kind in "OSU" or to in FLOAT8 or \
            to is DataType.FLOAT8E8M0:
        out[...] = cast_array(x, to, saturate, round_mode)
    elif x.dtype == out.dtype:
        np.copyto(out, x)
    elif is_native(x.dtype) and is_native(out.dtype):
        np.copyto(out, x, casting="unsafe")
    else:
        out[...] = x.astype(out.dtype)
