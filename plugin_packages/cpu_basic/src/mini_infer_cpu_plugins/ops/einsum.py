"""Einsum: NumPy's ``einsum`` (contraction order optimised); the schema (equation, output
shapes) is :mod:`mini_infer_core.ops.einsum`."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import einsum as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._convert import is_native

__all__ = ["Einsum"]

Array = NDArray[Any]


class Einsum(CpuPlugin, schema.Einsum):
    def compute(self, *xs: Array, out: Array, equation: str) -> None:
        if not all(is_native(x.dtype) for x in xs):
            # bfloat16 and other ml_dtypes: accumulate in float32
            res = np.einsum(self.equation, *(x.astype(np.float32) for x in xs), optimize=True)
        else:
            res = np.einsum(self.equation, *xs, optimize=True)
        np.copyto(out, res, casting="unsafe")
