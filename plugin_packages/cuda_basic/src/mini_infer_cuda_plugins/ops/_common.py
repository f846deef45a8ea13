"""Helpers shared by the kernels: instance-owned buffers, host copies of small inputs, dtypes.

Every helper takes the array module ``xp`` (NumPy or CuPy) so one kernel body serves both:
CuPy on the GPU, NumPy in the tests of a machine without one. Shape, type and value inference
helpers live in :mod:`mini_infer_core.plugin.shapes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.plugin import BufferCache, DimExpr, DimsExprs, shapes

from .._stream import array_module, is_cupy
from . import _cublas

__all__ = [
    "FLOATS",
    "Scratch",
    "acc_dtype",
    "array_module",
    "copy_into",
    "host_ints",
    "matmul_into",
    "shape_values",
]

#: input types of the kernels that only make sense on floating-point data
FLOATS = shapes.FLOAT_TYPES


class Scratch(BufferCache):
    """Device buffers a plugin instance allocates once per (tag, shape, dtype) and reuses on
    every run, so steady-state runs allocate nothing (which also keeps CUDA-graph replay
    safe)."""

    def __init__(self, capacity: int = 16) -> None:
        super().__init__(capacity)

    def buffer(self, xp: Any, tag: str, shape: Sequence[int], dtype: Any, fill: Any = None
               ) -> Any:
        """An array of ``shape``/``dtype`` in ``xp``'s memory; ``fill`` initialises it once,
        when it is made (later runs must leave the filled parts as they are)."""
        key = (xp.__name__, tag, tuple(int(s) for s in shape), np.dtype(dtype).str)
        buf = self._items.get(key)
        if buf is None:
            buf = xp.empty(tuple(shape), dtype) if fill is None else \
                xp.full(tuple(shape), fill, dtype)
            self.put(key, buf)
        return buf

    def constant(self, xp: Any, tag: str, host: np.ndarray[Any, Any]) -> Any:
        """``host`` copied once into ``xp``'s memory (small tables, e.g. a divisor map)."""
        key = (xp.__name__, "const", tag, host.shape, host.dtype.str)
        buf = self._items.get(key)
        if buf is None:
            buf = self.put(key, xp.asarray(host))
        return buf


def acc_dtype(dtype: Any) -> np.dtype[Any]:
    """The type to accumulate in: float64 for float64, float32 for every narrower float."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def matmul_into(xp: Any, a: Any, b: Any, out: Any) -> None:
    """``out[...] = a @ b``. On the GPU cuBLAS is called directly (:mod:`._cublas`: CuPy's own
    calls cannot be captured in CUDA graphs), else through CuPy for layouts it cannot
    express; float16 accumulates in float32 there. NumPy computes float16 in float32 too,
    then rounds once."""
    if xp is np:
        if out.dtype == np.float16:
            np.copyto(out, np.matmul(a.astype(np.float32), b.astype(np.float32)),
                      casting="same_kind")
        else:
            np.matmul(a, b, out=out)
    elif not (is_cupy(out) and _cublas.matmul(a, b, out)):
        xp.matmul(a, b, out=out)


def shape_values(inputs: Sequence[DimsExprs | None], index: int, op: str, what: str
                 ) -> tuple[DimExpr, ...]:
    """:func:`mini_infer_core.plugin.shapes.shape_values` for this device: the kernels never
    read a shape input back from the GPU, so its values must be known at build time."""
    return shapes.shape_values(inputs, index, op, what, device="cuda")


def host_ints(x: Any) -> list[int]:
    """A small integer tensor as Python ints. For a CuPy array this copies it to the host and
    therefore waits for its stream: kernels call it only when the values were not recorded
    at build time (a plugin run without shape inference)."""
    if x is None:
        return []
    host = x.get() if is_cupy(x) else np.asarray(x)
    return [int(v) for v in host.reshape(-1)]


def copy_into(xp: Any, out: Any, x: Any) -> None:
    """Copy ``x`` into ``out`` that holds the same elements in another shape."""
    if out.flags.c_contiguous:
        xp.copyto(out.reshape(x.shape), x)
    else:
        out[...] = x.reshape(out.shape)
