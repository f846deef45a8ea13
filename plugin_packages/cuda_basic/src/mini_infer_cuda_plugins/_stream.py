"""Entering a mini-infer stream and telling NumPy from CuPy arrays, without importing CuPy."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


__all__ = ["on_stream", "array_module", "is_cupy"]


def on_stream(stream: Any) -> Any:
    """The context manager that makes ``stream`` current: ``stream.stream`` (a
    ``cupy.cuda.Stream`` for a CudaStream), or a no-op for streams without one (the CPU's,
    None, test stand-ins)."""
    inner = getattr(stream, "stream", None)
    return inner if inner is not None else contextlib.nullcontext()


def is_cupy(x: Any) -> bool:
    """Whether ``x`` is a CuPy array (decided from its type; CuPy is not imported)."""
    return type(x).__module__.split(".", 1)[0] == "cupy"


def array_module(*arrays: Any) -> Any:
    """``cupy`` when any argument is a CuPy array, else ``numpy`` (CuPy is imported only in
    the first case: it is already loaded then)."""
    import numpy as np
    for a in arrays:
        if a is not None and not isinstance(a, np.ndarray) and is_cupy(a):
            import cupy

            return cupy
    return np
