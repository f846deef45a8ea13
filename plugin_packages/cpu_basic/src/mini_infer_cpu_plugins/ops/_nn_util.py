"""Helpers shared by the neural-network kernels (normalisation, attention, RNNs, resize...)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.plugin import DataType
from mini_infer_core.plugin.arrays import NDArray

__all__ = [
    "NN_FLOATS",
    "acc_dtype",
    "put",
    "to_str",
]

Array = NDArray[Any]

#: float types the NN kernels accept (bfloat16 computes in float32)
NN_FLOATS: tuple[DataType, ...] = (DataType.FLOAT, DataType.HALF, DataType.DOUBLE,
                                   DataType.BFLOAT16)


def acc_dtype(dtype: Any) -> np.dtype[Any]:
    """The dtype to compute in: float64 for float64, float32 for every narrower float."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def to_str(value: Any) -> str:
    """A string attribute (bytes from the importer, str from Python)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def put(out: Any, index: int, value: Array) -> None:
    """Write ``value`` into output ``index`` of ``out`` (a tuple or, for one output, an array);
    an output the caller did not pass is skipped."""
    if isinstance(out, tuple):
        if index < len(out) and out[index] is not None:
            np.copyto(out[index], value.reshape(out[index].shape), casting="unsafe")
    elif index == 0 and out is not None:
        np.copyto(out, value.reshape(out.shape), casting="unsafe")
