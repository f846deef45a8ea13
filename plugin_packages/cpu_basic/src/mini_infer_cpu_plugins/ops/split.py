"""Split, every opset -- a NumPy kernel (schemas in :mod:`mini_infer_core.ops.split`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import split as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._dynamic import as_ints, emit

__all__ = ["Split_1", "Split_2", "Split_13", "Split"]

Array = NDArray[Any]


class _Split(CpuPlugin, schema.SplitBase):
    def compute(self, x: Array, sizes: Array | None = None, *, out: Any = None,
                **_: Any) -> Any:
        a = self.axis(x.ndim)
        parts = self.part_sizes(x.shape[a], None if sizes is None else as_ints(sizes))
        pieces = tuple(np.split(x, np.cumsum(parts)[:-1], axis=a))
        if out is not None and not isinstance(out, tuple):
            out = (out,)
        return emit(pieces, out)


Split_1, Split_2, Split_13, Split = (
    type(op.__name__, (_Split, op), {"__module__": __name__})
    for op in (schema.Split_1, schema.Split_2, schema.Split_13, schema.Split))
