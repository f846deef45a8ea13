"""A TensorProto read by the own reader (_proto.py) as a NumPy array: what onnx's
``numpy_helper.to_array`` gives for the element types NumPy has a plain dtype for. A tensor of
another type (bfloat16, the float8 and 4-bit types, ...) or one split into segments raises
:class:`Fallback`: the importer then reads the model with onnx."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._proto import Span

__all__ = ["Fallback", "own_array"]


class Fallback(Exception):
    """A tensor this module does not convert: read the model with onnx."""


#: TensorProto.DataType -> (NumPy dtype, the typed field that holds the values)
_TYPES: dict[int, tuple[str, str]] = {
    1: ("<f4", "float_data"), 2: ("u1", "int32_data"), 3: ("i1", "int32_data"),
    4: ("<u2", "int32_data"), 5: ("<i2", "int32_data"), 6: ("<i4", "int32_data"),
    7: ("<i8", "int64_data"), 9: ("?", "int32_data"), 10: ("<f2", "int32_data"),
    11: ("<f8", "double_data"), 12: ("<u4", "uint64_data"), 13: ("<u8", "uint64_data"),
    14: ("<c8", "float_data"), 15: ("<c16", "double_data"),
}
_STRING = 8


def own_array(t: Any, file: Any) -> np.ndarray[Any, Any]:
    """The tensor's value (an array of its own, writeable) of a TensorProto the own reader
    read (a :class:`~._proto.Message`)."""
    code = t.data_type
    if t.HasField("segment"):
        raise Fallback("a segmented tensor")
    dims = tuple(int(d) for d in t.dims)
    if code == _STRING:
        if t.HasField("raw_data"):
            raise Fallback("a string tensor with raw data")
        out: np.ndarray[Any, Any] = np.empty(len(t.string_data), dtype=object)
        out[:] = [s.decode("utf-8") for s in t.string_data]
        return out.reshape(dims)
    if code not in _TYPES:
        raise Fallback(f"element type {code}")
    dtype_name, typed = _TYPES[code]
    dtype = np.dtype(dtype_name)
    if t.HasField("raw_data"):
        raw = t.raw_data
        if isinstance(raw, Span):
            count = int(np.prod(dims, dtype=np.int64))
            if len(raw) != count * dtype.itemsize:
                raise ValueError(f"raw_data holds {len(raw)} bytes, {count} elements of "
                                 f"{dtype} need {count * dtype.itemsize}")
            arr = np.empty(dims, dtype)
            file.seek(raw.start)
            if file.readinto(arr.data.cast("B")) != arr.nbytes:
                raise OSError("the model file is shorter than when it was read")
            return arr
        return np.frombuffer(raw, dtype=dtype).reshape(dims).copy()
    values = getattr(t, typed)
    if code in (14, 15):  # complex: real and imaginary parts interleaved
        flat = np.asarray(values, dtype=np.float32 if code == 14 else np.float64)
        return flat.view(dtype).reshape(dims) if flat.size else np.empty(dims, dtype)
    if code == 10:  # float16: the bits, in int32_data
        return np.asarray(values, dtype=np.int32).astype(np.uint16).view(
            np.float16).reshape(dims)
    if typed in ("float_data", "double_data"):
        return np.asarray(values, dtype=dtype).reshape(dims)
    wide = np.uint64 if typed == "uint64_data" else np.int64
    return np.asarray(values, dtype=wide).astype(dtype).reshape(dims)
