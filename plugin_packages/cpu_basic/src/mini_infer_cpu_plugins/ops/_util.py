"""Helpers shared by the kernels: scratch buffers, copies. Shape, type and value inference
helpers live in :mod:`mini_infer_core.plugin.shapes`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.plugin import BufferCache
from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import FLOAT_TYPES

__all__ = ["FLOATS", "SameBytes", "Scratch", "add_per_row", "copy_into", "in_place", "kernels",
           "relu", "zeros_like_chunk"]

#: dtypes of kernels that only make sense on floating point data
FLOATS = FLOAT_TYPES


def kernels(family: type[Any], *schemas: type[Any], module: str) -> tuple[type[Any], ...]:
    """One kernel class per operator schema, where a family's kernel serves several opsets
    alike: ``family``'s ``compute`` with the schema's attributes, opsets and shapes, a class
    named like the schema in ``module``."""
    return tuple(type(s.__name__, (family, s), {"__module__": module}) for s in schemas)


class Scratch(BufferCache):
    """NumPy buffers a plugin instance allocates once per key (shape) and reuses on every
    run."""

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
        size = math.prod(shape)
        key = ("flat", tag, dt.str)
        buf = self._items.get(key)
        if buf is None or buf.size < size:
            buf = self.put(key, np.empty(size, dt))
        return buf[:size].reshape(shape)  # type: ignore[no-any-return]


class SameBytes:
    """Mixin of the plugins whose output is their input's bytes in another shape (Reshape,
    Flatten, Squeeze, Unsqueeze, Identity): the engine may place the input inside the output
    (``in_place_inputs``), and then :func:`copy_into` has nothing to copy: the engine leaves
    such a step out of its runs (``in_place_only``)."""

    in_place_only = True

    def in_place_inputs(self, inputs: Sequence[Any], outputs: Sequence[Any]
                        ) -> dict[int, tuple[int, int]]:
        return {0: (0, 0)}


def in_place(x: NDArray[Any], out: NDArray[Any]) -> bool:
    """Whether ``x`` already is ``out``'s bytes (the engine placed it there: ``in_place_inputs``),
    so that copying it would copy nothing."""
    # may_share_memory first: a bounds check, far cheaper than the data pointers
    return bool(out.size and x.flags.c_contiguous and out.flags.c_contiguous and
                np.may_share_memory(x, out) and
                out.__array_interface__["data"][0] == x.__array_interface__["data"][0])


def copy_into(out: NDArray[Any], x: NDArray[Any]) -> None:
    """Copy ``x`` into ``out`` that holds the same elements in another shape (nothing to do
    where the engine placed ``x`` in ``out``'s bytes)."""
    if in_place(x, out):
        return
    if out.flags.c_contiguous:
        np.copyto(out.reshape(x.shape), x)
    else:
        out[...] = x.reshape(out.shape)


#: elements per ``maximum`` call of :func:`relu` (its zeros stay in the L2 cache)
RELU_CHUNK = 131072
_ZEROS: dict[str, NDArray[Any]] = {}


def zeros_like_chunk(dtype: Any, n: int) -> NDArray[Any]:
    """``n`` read-only zeros of ``dtype`` from one shared buffer per dtype."""
    dt = np.dtype(dtype)
    z = _ZEROS.get(dt.str)
    if z is None or z.size < n:
        z = np.zeros(max(n, RELU_CHUNK), dt)
        z.setflags(write=False)
        _ZEROS[dt.str] = z
    return z[:n]


def relu(x: NDArray[Any], out: NDArray[Any]) -> None:
    """``out = max(x, 0)``. NumPy's ``maximum`` against an array of zeros runs about twice as
    fast as against the scalar 0 on cache-sized data, so contiguous arrays go flat, in chunks
    of :data:`RELU_CHUNK` against one shared zeros buffer."""
    if not (x.flags.c_contiguous and out.flags.c_contiguous) or x.dtype != out.dtype or \
            x.dtype.kind not in "fiu":
        np.maximum(x, 0, out=out)
        return
    xf, of = x.reshape(-1), out.reshape(-1)
    n = xf.size
    zeros = zeros_like_chunk(x.dtype, min(n, RELU_CHUNK))
    for start in range(0, n, RELU_CHUNK):
        stop = min(n, start + RELU_CHUNK)
        np.maximum(xf[start:stop], zeros[: stop - start], out=of[start:stop])


def add_per_row(x: NDArray[Any], v: NDArray[Any], out: NDArray[Any]) -> None:
    """``out = x + v[:, None]`` for 2-D ``x`` (rows of one channel each). NumPy copies the
    rows through its ufunc buffer to broadcast ``v``; rows of 128 elements or more run faster
    in place, with a buffer smaller than a row."""
    old = np.setbufsize(256) if x.shape[-1] >= 128 else None
    try:
        np.add(x, v.reshape(-1, 1), out=out)
    finally:
        if old is not None:
            np.setbufsize(old)


def kernel(base: type[Any], family: type[Any], ufunc: Any, module: str) -> type[Any]:
    """The kernel of schema ``base``: ``family``'s with the NumPy ``ufunc``, a class named like
    the schema in ``module``. Here rather than in :mod:`.elementwise` (which re-exports it),
    so that the families that use it do not import elementwise's 35 classes with it: a
    module's classes are most of what loading an engine costs (issue 30)."""
    return type(base.__name__, (family, base), {"ufunc": ufunc, "__module__": module})
