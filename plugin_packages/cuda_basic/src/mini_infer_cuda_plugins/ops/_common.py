"""Helpers shared by the kernels: instance-owned buffers, axes, shape-input values, dtypes.

Every helper takes the array module ``xp`` (NumPy or CuPy) so one kernel body serves both:
CuPy on the GPU, NumPy in the tests of a machine without one.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, DimExpr, DimsExprs, IntLike

from .._stream import array_module, is_cupy

__all__ = [
    "FLOATS",
    "Scratch",
    "Shapes",
    "absent",
    "acc_dtype",
    "array_module",
    "const_ints",
    "copy_into",
    "dim_prod",
    "host_ints",
    "matmul_into",
    "norm_axis",
    "shape_values",
]

#: output shapes, as ``output_shapes`` returns them
Shapes = Sequence[Sequence[IntLike]]

#: input types of the kernels that only make sense on floating-point data
FLOATS: tuple[DataType, ...] = (DataType.FLOAT, DataType.HALF, DataType.DOUBLE)


class Scratch:
    """Device buffers a plugin instance allocates once per (tag, shape, dtype) and reuses on
    every run, so steady-state runs allocate nothing (which also keeps CUDA-graph replay
    safe). Per-context plugins are clones: a buffer never serves two contexts. At most
    ``capacity`` buffers are kept (dynamic shapes would otherwise grow it without bound)."""

    def __init__(self, capacity: int = 16) -> None:
        self.capacity = capacity
        self._items: dict[Hashable, Any] = {}

    def get(self, key: Hashable) -> Any:
        return self._items.get(key)

    def put(self, key: Hashable, value: Any) -> Any:
        if key not in self._items and len(self._items) >= self.capacity:
            self._items.pop(next(iter(self._items)))
        self._items[key] = value
        return value

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
    """``out[...] = a @ b``. CuPy runs cuBLAS (float16 accumulating in float32, CuPy's
    default compute type); NumPy computes float16 in float32 too, then rounds once."""
    if xp is np and out.dtype == np.float16:
        np.copyto(out, np.matmul(a.astype(np.float32), b.astype(np.float32)),
                  casting="same_kind")
    else:
        xp.matmul(a, b, out=out)


def dim_prod(dims: Sequence[IntLike]) -> DimExpr:
    """The product of dimension expressions (1 for none)."""
    out = DimExpr.const(1)
    for d in dims:
        out = out * d
    return out


def norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    """A possibly negative axis as a non-negative one, checked against ``rank``."""
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < max(rank, 1):
        raise PluginInterfaceError(f"{what} {axis} is out of range for rank {rank}")
    return a


def absent(inputs: Sequence[DimsExprs | None], index: int) -> bool:
    """Whether optional input ``index`` is missing."""
    return index >= len(inputs) or inputs[index] is None


def shape_values(inputs: Sequence[DimsExprs | None], index: int, op: str, what: str
                 ) -> tuple[DimExpr, ...]:
    """The build-time values of input ``index``; raises when they are unknown."""
    dims = None if absent(inputs, index) else inputs[index]
    if dims is None:
        raise PluginInterfaceError(f"{op}: its {what} input (input {index}) is missing")
    if dims.values is None:
        if any(d.is_constant() and d.get_constant_value() == 0 for d in dims):
            return ()
        raise PluginInterfaceError(
            f"{op}: the values of its {what} input (input {index}) must be known when the "
            "engine is built (a constant or computed from shapes only) for the cuda device")
    return tuple(dims.values)


def const_ints(values: Sequence[IntLike], op: str, what: str) -> list[int]:
    """Build-time constant integers from dimension expressions."""
    exprs = [DimExpr.wrap(v) for v in values]
    if not all(v.is_constant() for v in exprs):
        raise PluginInterfaceError(
            f"{op}: {what} must be build-time constants, got {[str(v) for v in exprs]}")
    return [v.get_constant_value() for v in exprs]


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
