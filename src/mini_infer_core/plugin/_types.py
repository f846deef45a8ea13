"""Tensor descriptors: data type, memory format and shape, as TensorRT's."""

from __future__ import annotations

import enum
import functools
from typing import TYPE_CHECKING, Any

from .._record import field, record
from ._dims import DimsExprs

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DataType", "TensorFormat", "PluginTensorDesc", "DynamicPluginTensorDesc"]


class DataType(enum.Enum):
    """Element types, named as TensorRT names them; values are ONNX TensorProto codes."""

    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    HALF = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20
    UINT4 = 21
    INT4 = 22
    FLOAT4E2M1 = 23
    FLOAT8E8M0 = 24
    UINT2 = 25
    INT2 = 26

    @property
    def numpy(self) -> np.dtype[np.generic]:
        return _numpy_dtype(self)

    @property
    def itemsize(self) -> int:
        return int(self.numpy.itemsize)

    @classmethod
    def from_numpy(cls, dtype: np.dtype[np.generic] | type | str) -> DataType:
        import numpy as np
        dt = np.dtype(dtype)
        found = _FROM_NUMPY.get(dt)  # a build asks once per tensor: answered once per dtype
        if found is not None:
            return found
        if dt.kind in "SU":
            return cls.STRING
        for member in cls:
            # ml_dtypes' types are user-defined NumPy dtypes (isbuiltin 2): any other dtype
            # is found without importing ml_dtypes (half a second, issue 30)
            if dt.isbuiltin != 2 and _TO_NUMPY[member].startswith("ml_dtypes."):
                continue
            if member.numpy == dt:
                _FROM_NUMPY[dt] = member
                return member
        raise ValueError(f"no mini-infer DataType for numpy dtype {dt}")

    @classmethod
    def from_onnx(cls, code: int) -> DataType:
        return cls(code)


#: DataType.from_numpy's answers so far, by NumPy dtype
_FROM_NUMPY: dict[Any, DataType] = {}

_TO_NUMPY: dict[DataType, str] = {
    DataType.FLOAT: "float32",
    DataType.UINT8: "uint8",
    DataType.INT8: "int8",
    DataType.UINT16: "uint16",
    DataType.INT16: "int16",
    DataType.INT32: "int32",
    DataType.INT64: "int64",
    DataType.STRING: "object",
    DataType.BOOL: "bool",
    DataType.HALF: "float16",
    DataType.DOUBLE: "float64",
    DataType.UINT32: "uint32",
    DataType.UINT64: "uint64",
    DataType.COMPLEX64: "complex64",
    DataType.COMPLEX128: "complex128",
    # the narrow floats and ints onnx itself represents with ml_dtypes
    DataType.BFLOAT16: "ml_dtypes.bfloat16",
    DataType.FLOAT8E4M3FN: "ml_dtypes.float8_e4m3fn",
    DataType.FLOAT8E4M3FNUZ: "ml_dtypes.float8_e4m3fnuz",
    DataType.FLOAT8E5M2: "ml_dtypes.float8_e5m2",
    DataType.FLOAT8E5M2FNUZ: "ml_dtypes.float8_e5m2fnuz",
    DataType.UINT4: "ml_dtypes.uint4",
    DataType.INT4: "ml_dtypes.int4",
    DataType.FLOAT4E2M1: "ml_dtypes.float4_e2m1fn",
    DataType.FLOAT8E8M0: "ml_dtypes.float8_e8m0fnu",
    DataType.UINT2: "ml_dtypes.uint2",
    DataType.INT2: "ml_dtypes.int2",
}


@functools.cache
def _numpy_dtype(t: DataType) -> np.dtype[np.generic]:
    import numpy as np
    name = _TO_NUMPY[t]
    if name.startswith("ml_dtypes."):
        import ml_dtypes

        narrow: np.dtype[np.generic] = np.dtype(getattr(ml_dtypes, name.removeprefix("ml_dtypes.")))
        return narrow
    return np.dtype(name)


class TensorFormat(enum.Enum):
    """Memory layouts of a tensor ``(N, C, *spatial)`` (rank 3 or more), TensorRT's
    ``TensorFormat``. A tensor's shape is always its logical one; the format says how its
    elements lie in memory (``physical_shape`` in ``_layouts.py``; converters there too):

    - ``LINEAR``: row-major, dense (NCHW); what the importer produces, graph inputs and
      outputs, and every plugin that does not say otherwise;
    - ``CHW4`` / ``CHW8`` / ``CHW16``: channels in blocks of 4, 8 or 16, the block innermost:
      ``(N, ceil(C/k), *spatial, k)``, the last block's missing channels zeros (TensorRT's
      kCHW4 / kCHW16; oneDNN's nChw8c / nChw16c, OpenVINO's and onnxruntime's NCHWc);
    - ``HWC``: channels last, ``(N, *spatial, C)`` (NHWC; TensorRT's kHWC).

    The builder negotiates formats per node (``supports_format_combination``) and inserts
    reformat steps where neighbours disagree (builder/formats.py).
    """

    LINEAR = "linear"
    CHW4 = "chw4"
    CHW8 = "chw8"
    CHW16 = "chw16"
    HWC = "hwc"

    @property
    def block(self) -> int:
        """The channels per block (4, 8, 16); 0 for a format without channel blocks."""
        return _BLOCKS.get(self, 0)


_BLOCKS = {TensorFormat.CHW4: 4, TensorFormat.CHW8: 8, TensorFormat.CHW16: 16}


@record(frozen=True)
class PluginTensorDesc:
    """A concrete tensor: shape, type and format; an 8-bit quantized one (INT8, UINT8) also
    carries its quantization, as TensorRT's ``PluginTensorDesc`` carries ``scale``: ``scale``
    one value (per tensor) or one per channel, ``zero_point`` likewise (None: not quantized,
    or not known)."""

    shape: tuple[int, ...]
    dtype: DataType
    format: TensorFormat = TensorFormat.LINEAR
    scale: float | tuple[float, ...] | None = None
    zero_point: int | tuple[int, ...] | None = None


@record(frozen=True)
class DynamicPluginTensorDesc:
    """A tensor of a dynamic network: its symbolic shape and its type.

    ``desc.shape`` holds -1 for every dimension not known at build time; ``min``/``max``
    give its range when known.
    """

    desc: PluginTensorDesc
    dims: DimsExprs = field(default_factory=lambda: DimsExprs(()))
    min: tuple[int, ...] = ()
    max: tuple[int, ...] = ()
