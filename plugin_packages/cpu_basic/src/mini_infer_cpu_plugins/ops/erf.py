"""Erf (schema in :mod:`mini_infer_core.ops.erf`): a module of its own, so that a transformer
engine's exported GELU does not import the unary math family (:mod:`.math_unary`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import erf as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._erf import erf

__all__ = ["Erf"]

Array = NDArray[Any]


class Erf(CpuPlugin, schema.Erf):
    def compute(self, x: Array, *, out: Array) -> None:
        if x.dtype.kind in "iu":
            # integers, as onnx's reference does: float32 erf, truncated (erf(4) is 1)
            erf(x.astype(np.float32), out)
        else:
            with np.errstate(all="ignore"):
                erf(x, out)
