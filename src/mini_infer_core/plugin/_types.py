"""Tensor descriptors: data type, memory format and shape, as TensorRT's."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from ._dims import DimsExprs

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

    @property
    def numpy(self) -> np.dtype[np.generic]:
        return np.dtype(_TO_NUMPY[self])

    @property
    def itemsize(self) -> int:
        return int(self.numpy.itemsize)

    @classmethod
    def from_numpy(cls, dtype: np.dtype[np.generic] | type | str) -> DataType:
        dt = np.dtype(dtype)
        for member, name in _TO_NUMPY.items():
            if np.dtype(name) == dt:
                return member
        raise ValueError(f"no mini-infer DataType for numpy dtype {dt}")

    @classmethod
    def from_onnx(cls, code: int) -> DataType:
        return cls(code)


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
}


class TensorFormat(enum.Enum):
    """Memory layouts. Only LINEAR (row-major, dense) is produced by the ONNX importer."""

    LINEAR = "linear"
    CHW4 = "chw4"
    HWC = "hwc"


@dataclass(frozen=True)
class PluginTensorDesc:
    """A concrete tensor: shape, type and format."""

    shape: tuple[int, ...]
    dtype: DataType
    format: TensorFormat = TensorFormat.LINEAR


@dataclass(frozen=True)
class DynamicPluginTensorDesc:
    """A tensor of a dynamic network: its symbolic shape and its type.

    ``desc.shape`` holds -1 for every dimension not known at build time; ``min``/``max``
    give its range when known.
    """

    desc: PluginTensorDesc
    dims: DimsExprs = field(default_factory=lambda: DimsExprs(()))
    min: tuple[int, ...] = ()
    max: tuple[int, ...] = ()
