"""What the kernels of data-dependent nodes share: their outputs returned or written
(``emit``), integer inputs read as Python ints (``as_ints``). Whether a node is data-dependent
is the schema's decision (:class:`mini_infer_core.ops.ValueOp`): values known at build time
give exact shapes, values computed at run time make the node return its outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

__all__ = ["emit", "as_ints"]

Array = NDArray[Any]


def as_ints(x: Array | None) -> list[int]:
    """An integer input tensor as a list of Python ints (empty for an absent input)."""
    if x is None:
        return []
    return [int(v) for v in np.asarray(x).reshape(-1)]


def emit(result: Any, out: Any) -> Any:
    """Write ``result`` into ``out``; with no ``out`` (a data-dependent call) return it.

    Several outputs are tuples on both sides. Returned arrays never alias an input."""
    if out is None:
        if isinstance(result, tuple):
            return tuple(_own(r) for r in result)
        return _own(result)
    if isinstance(out, tuple):
        for o, r in zip(out, result, strict=True):
            _copy(o, r)
    else:
        _copy(out, result)
    return None


def _own(r: Any) -> Any:
    r = np.asarray(r)
    return r.copy() if r.base is not None else r


def _copy(out: Array, r: Any) -> None:
    r = np.asarray(r)
    if r.shape != out.shape and r.size == out.size:
        r = r.reshape(out.shape)
    np.copyto(out, r, casting="unsafe")
