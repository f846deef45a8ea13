"""Helpers shared by the kernels: scratch buffers, dimension products, shape-input access."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, DimExpr, DimsExprs

__all__ = [
    "FLOATS",
    "IntLike",
    "Scratch",
    "absent",
    "const_ints",
    "copy_into",
    "dim_prod",
    "norm_axis",
    "shape_values",
]

IntLike = int | DimExpr

#: dtypes of kernels that only make sense on floating point data
FLOATS: tuple[DataType, ...] = (DataType.FLOAT, DataType.HALF, DataType.DOUBLE)


class Scratch:
    """Buffers a plugin instance allocates once per key (shape) and reuses on every run.

    Per-context plugins are clones, so a buffer never serves two contexts at once. At most
    ``capacity`` keys are kept (dynamic shapes would otherwise grow it without bound).
    """

    def __init__(self, capacity: int = 12) -> None:
        self.capacity = capacity
        self._items: dict[Hashable, Any] = {}

    def get(self, key: Hashable) -> Any:
        return self._items.get(key)

    def put(self, key: Hashable, value: Any) -> Any:
        if key not in self._items and len(self._items) >= self.capacity:
            self._items.pop(next(iter(self._items)))
        self._items[key] = value
        return value

    def buffer(self, tag: str, shape: Sequence[int], dtype: Any, fill: Any = None
               ) -> NDArray[Any]:
        """An array of ``shape``/``dtype``; ``fill`` initialises it once, when it is made."""
        key = (tag, tuple(shape), np.dtype(dtype).str)
        buf = self._items.get(key)
        if buf is None:
            if fill is None:
                buf = np.empty(shape, dtype)
            else:
                buf = np.full(shape, fill, dtype)
            self.put(key, buf)
        return buf


    def flat(self, tag: str, shape: Sequence[int], dtype: Any) -> NDArray[Any]:
        """An uninitialised array of ``shape`` carved from one growable buffer per ``tag``:
        every shape shares it (no fill: the caller overwrites it all on every run)."""
        dt = np.dtype(dtype)
        size = int(np.prod(shape, dtype=np.int64))
        key = ("flat", tag, dt.str)
        buf = self._items.get(key)
        if buf is None or buf.size < size:
            buf = self.put(key, np.empty(size, dt))
        return buf[:size].reshape(shape)  # type: ignore[no-any-return]


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
    """Whether optional input ``index`` is missing (the builder passes None for it, or a
    shorter list)."""
    return index >= len(inputs) or inputs[index] is None


def shape_values(inputs: Sequence[DimsExprs | None], index: int, op: str, what: str
                 ) -> tuple[DimExpr, ...]:
    """The build-time values of shape input ``index``; raises when they are unknown."""
    dims = None if absent(inputs, index) else inputs[index]
    if dims is None or dims.values is None:
        raise PluginInterfaceError(
            f"{op}: the values of its {what} input (input {index}) must be known when the "
            "engine is built (a constant or computed from shapes only)")
    return dims.values


def const_ints(values: Sequence[DimExpr], op: str, what: str) -> list[int]:
    """Build-time constant integers from dimension expressions."""
    if not all(v.is_constant() for v in values):
        raise PluginInterfaceError(
            f"{op}: {what} must be build-time constants, got {[str(v) for v in values]}")
    return [v.get_constant_value() for v in values]


def copy_into(out: NDArray[Any], x: NDArray[Any]) -> None:
    """Copy ``x`` into ``out`` that holds the same elements in another shape."""
    if out.flags.c_contiguous:
        np.copyto(out.reshape(x.shape), x)
    else:
        out[...] = x.reshape(out.shape)
