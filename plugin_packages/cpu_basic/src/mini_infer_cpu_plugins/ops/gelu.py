"""Gelu, exact (erf) and tanh-approximated (schema in :mod:`mini_infer_core.ops.gelu`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mini_infer_core.ops import gelu as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._erf import erf

__all__ = ["Gelu"]

Array = NDArray[Any]


class Gelu(CpuPlugin, schema.Gelu):
    def compute(self, x: Array, *, out: Array, approximate: str) -> None:
        if approximate == "tanh":
            np.multiply(x, x, out=out)
            np.multiply(out, 0.044715, out=out)
            np.add(out, 1, out=out)
            np.multiply(out, x, out=out)
            np.multiply(out, math.sqrt(2.0 / math.pi), out=out)
            np.tanh(out, out=out)
        else:
            np.multiply(x, 1.0 / math.sqrt(2.0), out=out)
            erf(out, out)
        np.add(out, 1, out=out)
        np.multiply(out, x, out=out)
        np.multiply(out, 0.5, out=out)
