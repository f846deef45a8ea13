"""HardSigmoid and HardSwish (schemas in :mod:`mini_infer_core.ops.hardswish`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import hardswish as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin

__all__ = ["HardSigmoid", "HardSwish"]

Array = NDArray[Any]


class HardSigmoid(CpuPlugin, schema.HardSigmoid):
    def compute(self, x: Array, *, out: Array, alpha: float, beta: float, **_: Any) -> None:
        np.multiply(x, alpha, out=out)
        np.add(out, beta, out=out)
        np.clip(out, 0, 1, out=out)


class HardSwish(CpuPlugin, schema.HardSwish):
    def compute(self, x: Array, *, out: Array) -> None:
        np.multiply(x, 1.0 / 6.0, out=out)
        np.add(out, 0.5, out=out)
        np.clip(out, 0, 1, out=out)
        np.multiply(out, x, out=out)
