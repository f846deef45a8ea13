"""LpPool (the window pooling of :mod:`.pool`, its ``lp`` kind) and GlobalLpPool (schemas in
:mod:`mini_infer_core.ops.lp_pool`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import lp_pool as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from .pool import _Pool

__all__ = ["LpPool_1", "LpPool", "GlobalLpPool_1", "GlobalLpPool"]

Array = NDArray[Any]

LpPool_1, LpPool = (type(base.__name__, (_Pool, base), {"__module__": __name__})
                    for base in (schema.LpPool_1, schema.LpPool))


class _GlobalLp(CpuPlugin, schema.GlobalLpPoolBase):
    def compute(self, x: Array, *, out: Array, p: float) -> None:
        axes = tuple(range(2, x.ndim))
        np.sum(np.abs(x) ** p, axis=axes, keepdims=True, out=out)
        np.power(out, 1.0 / p, out=out)


GlobalLpPool_1, GlobalLpPool = (type(base.__name__, (_GlobalLp, base), {"__module__": __name__})
                                for base in (schema.GlobalLpPool_1, schema.GlobalLpPool))
